package ready

import "github.com/incident-replay/incident-replay/sglang"

// Phase is where in startup the server is, as far as llmwait can tell.
type Phase uint8

// Startup phases in the order SGLang goes through them.
const (
	PhaseStarting  Phase = iota // spawned; nothing recognisable logged yet
	PhaseDistInit               // torch distributed init
	PhaseLoading                // weight load (shards n/m)
	PhaseKVPool                 // KV cache allocation
	PhaseCUDAGraph              // CUDA graph capture (bs, %)
	PhaseHiCache                // pinning the HiCache host pool
	PhaseHTTP                   // uvicorn starting; the port is about to be bound
	PhaseWarmup                 // port bound, /health 503 until the warmup request returns
	PhaseReady                  // health passed
	numPhases
)

var phaseNames = [numPhases]string{
	"starting", "dist_init", "loading", "kv_pool", "cuda_graph", "hicache", "http", "warmup", "ready",
}

func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return "phase?"
}

// MarshalText writes the phase's stable name (used in the --json stream).
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// ParsePhase looks a phase up by name (for --stall PHASE=DUR flags).
func ParsePhase(name string) (Phase, bool) {
	for i, n := range phaseNames {
		if n == name {
			return Phase(i), true
		}
	}
	return 0, false
}

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
	switch ev.Kind {
	case sglang.KindServerArgs, sglang.KindLaunchWarning:
		s.phase, s.progress = PhaseStarting, true
	case sglang.KindDistInitBegin, sglang.KindDistInitEnd:
		s.phase, s.progress = PhaseDistInit, true
	case sglang.KindLoadBegin, sglang.KindWeightsFormat:
		s.phase, s.progress = PhaseLoading, true
	case sglang.KindShardProgress:
		s.phase, s.progress = PhaseLoading, true
		s.pct = fieldPct(ev, "pct", "done", "total")
	case sglang.KindLoadEnd:
		s.phase, s.progress, s.pct = PhaseLoading, true, 100
	case sglang.KindKVDtype, sglang.KindKVAvailable, sglang.KindKVAlloc, sglang.KindMemPoolEnd:
		s.phase, s.progress = PhaseKVPool, true
	case sglang.KindCGBegin, sglang.KindCGBatchSizes:
		s.phase, s.progress = PhaseCUDAGraph, true
	case sglang.KindCGProgress:
		s.phase, s.progress = PhaseCUDAGraph, true
		s.pct = fieldPct(ev, "pct", "done", "total")
	case sglang.KindCGEnd, sglang.KindLimits:
		s.phase, s.progress, s.pct = PhaseCUDAGraph, true, 100
	case sglang.KindHiCacheAlloc:
		s.phase, s.progress = PhaseHiCache, true
	case sglang.KindStartupTimings, sglang.KindUvicornStarted, sglang.KindUvicornWaiting, sglang.KindUvicornComplete:
		s.phase, s.progress = PhaseHTTP, true
	case sglang.KindUvicornRunning:
		s.phase, s.progress = PhaseWarmup, true
	case sglang.KindReady:
		s.phase, s.progress = PhaseReady, true
	case sglang.KindTracebackStart, sglang.KindException:
		s.fatal = weakFatal
	case sglang.KindHostMemError, sglang.KindSchedulerExc, sglang.KindSigquitChild, sglang.KindSigquitReceived,
		sglang.KindSubprocessCrash, sglang.KindRankDead, sglang.KindExitCode, sglang.KindCUDAOOM,
		sglang.KindInitFailed, sglang.KindErrno98, sglang.KindNCCLError, sglang.KindKilled:
		s.fatal = strongFatal
	case sglang.KindWatchdog:
		// A soft watchdog only dumps state; the hard one SIGQUITs the launcher.
		if v, _ := ev.Fields.Get("soft"); v != "True" && v != "true" {
			s.fatal = strongFatal
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
