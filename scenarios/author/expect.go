package author

import (
	"fmt"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// DefaultLineSpacing is the gap FromLog assumes between the lines of a log without timestamps
// when no duration is given.
const DefaultLineSpacing = 100 * time.Millisecond

// failureEnding names how a compiled recorded timeline ends and returns the faults the run
// needs: a failure signature with no exit after it (the fatal-but-alive shape) gets a wedge
// fault at that line, so the run's ground truth says dead there too.
func failureEnding(c *scenarios.Compiled) (string, []fault.Spec) {
	failLine, exits, ready := -1, false, false
	for i, en := range c.Timeline.Entries {
		switch en.Op {
		case replay.OpExit:
			exits = true
		case replay.OpLog:
			k := en.Event.Kind
			if k == sglang.KindReady && failLine < 0 {
				ready = true
			}
			if sglang.IsFailure(k) && failLine < 0 && k != sglang.KindHealthFailed {
				failLine = i
			}
		}
	}
	switch {
	case failLine >= 0 && exits:
		return signature(c.Timeline, failLine), nil
	case failLine >= 0:
		ev := c.Timeline.Entries[failLine].Event
		ev.Time = time.Time{}
		return signature(c.Timeline, failLine), []fault.Spec{{Kind: fault.Wedge, AfterLine: sglang.Render(ev, c.Profile)}}
	case ready:
		return "ready", nil
	case exits:
		return "the process exits", nil
	case len(c.Timeline.Entries) > 0 && c.Timeline.Entries[0].Op == replay.OpBind:
		return "ready: already serving when the log starts", nil
	}
	return "log ends without ready or a failure signature", nil
}

// signature names a failure by its kind and the message that identifies it.
func signature(tl replay.Timeline, i int) string {
	// The identifying line is the exception at the end of a traceback, when there is one.
	best := tl.Entries[i].Event
	for _, en := range tl.Entries[i:] {
		if en.Op != replay.OpLog {
			continue
		}
		switch en.Event.Kind {
		case sglang.KindException, sglang.KindCUDAOOM, sglang.KindHostMemError, sglang.KindNCCLError, sglang.KindErrno98,
			sglang.KindRankDead, sglang.KindWatchdog, sglang.KindKilled, sglang.KindSubprocessCrash, sglang.KindInitFailed:
			best = en.Event
		default:
			continue
		}
		break
	}
	best.Time = time.Time{}
	msg := sglang.Render(best, sglang.ProfileFor(sglang.EraC))
	if len(msg) > 100 {
		msg = msg[:97] + "..."
	}
	return best.Kind.String() + ": " + msg
}

// expectFrom writes the expect block from the compiled scenario's own prediction, the one
// `scenarios validate` checks, so an authored scenario always validates. Times are truncated
// to the second; the tolerance covers that.
func expectFrom(c *scenarios.Compiled, ending string) (scenarios.Expect, string) {
	p := c.Predict()
	at := func(d *time.Duration) *scenarios.Duration {
		if d == nil {
			return nil
		}
		v := scenarios.Duration(d.Truncate(time.Second))
		return &v
	}
	e := scenarios.Expect{Bound: at(p.Bound), Ready: at(p.Ready), Dead: at(p.Dead), ExitCode: p.ExitCode}
	tol := 2 * time.Second
	switch {
	case p.Ready != nil && p.Dead == nil:
		e.Verdict = scenarios.ReadyOK
		tol = max(tol, time.Duration(float64(*p.Ready)*0.01))
		if !strings.HasPrefix(ending, "ready") {
			ending = "ready (" + ending + ")"
		}
	case p.Dead != nil:
		e.Verdict = scenarios.FailedFast
	default:
		e.Verdict = scenarios.FailedSlow // nothing decisive: a correct tool can only time out
	}
	e.Tolerance = scenarios.Duration(tol)
	return e, ending
}

// untimedSpacing is the line spacing for a log without any timestamp (0 for a log with
// them); the assumption goes into the report.
func untimedSpacing(lines []sglang.Line, d time.Duration, rep *Report) time.Duration {
	if _, err := scenarios.LogTimeline(lines, 0); err == nil {
		return 0
	}
	sp := DefaultLineSpacing
	how := fmt.Sprintf("the default %s apart (--duration spreads them over a given time)", sp)
	if d > 0 && len(lines) > 1 {
		sp = max((d / time.Duration(len(lines)-1)).Round(time.Millisecond), time.Millisecond)
		how = fmt.Sprintf("%s apart, spread over --duration %s", sp, d)
	}
	rep.Notes = append(rep.Notes, fmt.Sprintf("the log has no timestamps: its %d lines are placed in file order, %s (timeline.recorded.spacing); every time in expect follows from that assumption", len(lines), how))
	return sp
}
