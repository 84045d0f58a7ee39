package author

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// KindDiff is one place where a replayed log departs from the captured one.
type KindDiff struct {
	Index     int // 0-based parsed line
	Line      int // physical line of the input (0 past its end)
	Want, Got sglang.Kind
	WantText  string // the input line
	GotText   string // the replayed line
}

func (d KindDiff) String() string {
	show := func(k sglang.Kind, t string) string {
		if len(t) > 100 {
			t = t[:97] + "..."
		}
		if k == sglang.KindUnknown && t == "" {
			return "(nothing)"
		}
		return fmt.Sprintf("%s %q", k, t)
	}
	return fmt.Sprintf("line %d: input %s, replay %s", d.Line, show(d.Want, d.WantText), show(d.Got, d.GotText))
}

// CheckResult is what replaying an authored scenario gave against its input log.
type CheckResult struct {
	Lines         int        // parsed lines of the input
	Replayed      int        // lines the replay printed
	Diffs         []KindDiff // the first differences by kind and order
	Phases        []PhaseSpan
	ReplayPhases  []PhaseSpan
	PhaseMismatch string // "" when names agree and durations are within 1%
}

// OK reports a replay that matches its input.
func (r *CheckResult) OK() bool {
	return len(r.Diffs) == 0 && r.Lines == r.Replayed && r.PhaseMismatch == ""
}

func phaseMismatch(want, got []PhaseSpan) string {
	for i := range max(len(want), len(got)) {
		switch {
		case i >= len(got):
			return fmt.Sprintf("replay lacks phase %s", want[i].Name)
		case i >= len(want):
			return fmt.Sprintf("replay has an extra phase %s", got[i].Name)
		case want[i].Name != got[i].Name:
			return fmt.Sprintf("phase %d is %s in the replay, %s in the input", i+1, got[i].Name, want[i].Name)
		}
		if dw, dg := want[i].D(), got[i].D(); math.Abs(float64(dw-dg)) > 0.01*float64(dw) {
			return fmt.Sprintf("phase %s lasts %s in the replay, %s in the input (more than 1%% apart)", want[i].Name, dg, dw)
		}
	}
	return ""
}

// Check replays an authored scenario the way a run prints it (load, compile, render
// the timeline, parse) and compares the result with the input log: the kind of every line, in
// order (up to maxDiffs differences), and the phases with their durations (within 1%).
func Check(input, scenarioYAML []byte, file string, maxDiffs int) (*CheckResult, error) {
	s, err := scenarios.Load(file, scenarioYAML)
	if err != nil {
		return nil, err
	}
	c, err := scenarios.Compile(s, 1)
	if err != nil {
		return nil, err
	}
	in, err := sglang.Parse(bytes.NewReader(input))
	if err != nil {
		return nil, fmt.Errorf("check: reading the input log: %w", err)
	}
	out, err := sglang.Parse(bytes.NewReader(RenderLog(c.Timeline, c.Profile)))
	if err != nil {
		return nil, fmt.Errorf("check: reading the replayed log: %w", err)
	}
	res := &CheckResult{Lines: len(in), Replayed: len(out)}
	for i := range max(len(in), len(out)) {
		var d KindDiff
		d.Index = i
		if i < len(in) {
			d.Line, d.Want, d.WantText = in[i].No, in[i].Event.Kind, in[i].Raw
		}
		if i < len(out) {
			d.Got, d.GotText = out[i].Event.Kind, out[i].Raw
		}
		if i < len(in) && i < len(out) && d.Want == d.Got {
			continue
		}
		if len(res.Diffs) < maxDiffs {
			res.Diffs = append(res.Diffs, d)
		}
	}
	var spacing time.Duration
	if r := s.Timeline.Recorded; r != nil {
		spacing = r.Spacing.D()
	}
	tl, err := scenarios.LogTimeline(in, spacing)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	res.Phases = LogPhases(KindsOf(tl))
	res.ReplayPhases = LogPhases(KindsOf(c.Timeline))
	res.PhaseMismatch = phaseMismatch(res.Phases, res.ReplayPhases)
	return res, nil
}
