package ready

import "github.com/incident-replay/incident-replay/sglang"

// Phase is where in startup the server is, as far as llmwait can tell: SGLang's own phases.
type Phase = sglang.Phase

// Startup phases in the order SGLang goes through them.
const (
	PhaseStarting  = sglang.PhaseStarting
	PhaseDistInit  = sglang.PhaseDistInit
	PhaseLoading   = sglang.PhaseLoading
	PhaseKVPool    = sglang.PhaseKVPool
	PhaseCUDAGraph = sglang.PhaseCUDAGraph
	PhaseHiCache   = sglang.PhaseHiCache
	PhaseHTTP      = sglang.PhaseHTTP
	PhaseWarmup    = sglang.PhaseWarmup
	PhaseReady     = sglang.PhaseReady
)

// ParsePhase looks a phase up by name (for --stall PHASE=DUR flags).
func ParsePhase(name string) (Phase, bool) { return sglang.ParsePhase(name) }

// logSignal is what one typed log line means for readiness.
type logSignal struct {
	phase    Phase // phase this line proves the server has reached (valid when progress)
	progress bool  // the line is forward progress: it resets the stall timer
	pct      int   // percent within phase, -1 when the line carries none
	fatal    fatalStrength
}

type fatalStrength uint8

const (
	notFatal fatalStrength = iota
	// weakFatal lines are failures only if nothing normal follows within the confirmation
	// window: some tracebacks are printed and survived (e.g. "Ignoring mcp import error").
	weakFatal
	// strongFatal lines are never printed by a server that goes on to serve.
	strongFatal
)

// classify maps a typed SGLang event to its readiness meaning.
func classify(ev sglang.Event) logSignal {
	s := logSignal{pct: -1}
	st := sglang.StageOf(ev.Kind)
	s.phase, s.progress = st.Phase, st.InPhase
	switch ev.Kind {
	case sglang.KindShardProgress, sglang.KindCGProgress:
		s.pct = fieldPct(ev, "pct", "done", "total")
	case sglang.KindLoadEnd, sglang.KindCGEnd, sglang.KindLimits:
		s.pct = 100
	}
	switch sglang.FailureOf(ev) {
	case sglang.Fatal:
		s.fatal = strongFatal
	case sglang.Survivable:
		// A caught traceback is printed and survived; health-check failures do not end startup.
		if ev.Kind == sglang.KindTracebackStart || ev.Kind == sglang.KindException {
			s.fatal = weakFatal
		}
	}
	return s
}

// fieldPct reads a percent field, falling back to done/total.
func fieldPct(ev sglang.Event, pct, done, total string) int {
	if p, ok := ev.Fields.Int(pct); ok && p >= 0 && p <= 100 {
		return p
	}
	d, ok1 := ev.Fields.Int(done)
	t, ok2 := ev.Fields.Int(total)
	if ok1 && ok2 && t > 0 {
		return d * 100 / t
	}
	return -1
}

// mattersInTail reports whether a line is worth showing among "the last lines" on failure:
// access lines, blank lines and Prefill/Decode stats only push out the cause.
func mattersInTail(k sglang.Kind) bool {
	switch k {
	case sglang.KindBlank, sglang.KindAccess, sglang.KindPrefill, sglang.KindDecode:
		return false
	}
	return true
}
