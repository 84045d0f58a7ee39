package author

import (
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// failurePhase is the pseudo-phase a log's first failure signature opens; preamble holds the
// lines before the first marker.
const (
	failurePhase = "failure"
	preamble     = "preamble"
)

// phaseOf names the phase a line of kind k opens (sglang.StageOf), failurePhase for a failure
// signature, "" for neither. A phase opens at its first marker only, so per-rank copies and
// later repeats do not reopen it.
func phaseOf(k sglang.Kind) string {
	if st := sglang.StageOf(k); st.InPhase && st.Opens {
		return st.Phase.String()
	}
	if sglang.IsFailure(k) {
		return failurePhase
	}
	return ""
}

// KindAt is one log line's kind at its offset in a timeline.
type KindAt struct {
	Kind sglang.Kind
	At   time.Duration
}

// KindsOf lists the OpLog entries of a timeline.
func KindsOf(tl replay.Timeline) []KindAt {
	out := make([]KindAt, 0, len(tl.Entries))
	for _, e := range tl.Entries {
		if e.Op == replay.OpLog {
			out = append(out, KindAt{e.Event.Kind, e.At})
		}
	}
	return out
}

// LogPhases cuts a log into its startup phases (sglang.Phases, then failure), each from its
// first line to the next phase's first line. Lines before the first marker belong to a
// "preamble" phase.
func LogPhases(lines []KindAt) []PhaseSpan {
	var out []PhaseSpan
	seen := map[string]bool{}
	if len(lines) == 0 {
		return nil
	}
	end := lines[len(lines)-1].At
	for i, l := range lines {
		name := phaseOf(l.Kind)
		if i == 0 && name == "" {
			name = preamble
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if n := len(out); n > 0 {
			out[n-1].End = l.At
		}
		out = append(out, PhaseSpan{Name: name, Start: l.At, End: end})
	}
	return out
}

// RenderLog prints a timeline's log lines as the profile's SGLang does, one per line, stamped
// with scenario time as a replay would (stdout and stderr merged, as 2>&1).
func RenderLog(tl replay.Timeline, p sglang.Profile) []byte {
	var b []byte
	for _, e := range tl.Entries {
		if e.Op != replay.OpLog {
			continue
		}
		ev := e.Event
		if !ev.Time.IsZero() {
			ev.Time = tl.Due(e)
		}
		b = append(sglang.AppendRender(b, ev, p), '\n')
	}
	return b
}
