package scenarios

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// DefaultLineSpacing is the gap Author assumes between the lines of a log without timestamps
// when no duration is given.
const DefaultLineSpacing = 100 * time.Millisecond

// failureEnding names how a compiled recorded timeline ends and returns the faults the run
// needs: a failure signature with no exit after it (the fatal-but-alive shape) gets a wedge
// fault at that line, so the run's ground truth says dead there too.
func failureEnding(c *Compiled) (string, []faultDraft) {
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
		return signature(c.Timeline, failLine), []faultDraft{{kind: "wedge", afterLine: sglang.Render(ev, c.Profile)}}
	case ready:
		return "ready", nil
	case exits:
		return "the process exits", nil
	case len(c.Timeline.Entries) > 0 && c.Timeline.Entries[0].Op == replay.OpBind:
		return "ready: already serving when the log starts", nil
	}
	return "log ends without ready or a failure signature", nil
}

// expectFrom writes the expect block from the compiled scenario's own prediction, the one
// `scenarios validate` checks, so an authored scenario always validates. Times are truncated
// to the second; the tolerance covers that.
func expectFrom(c *Compiled, ending string) (Expect, string) {
	p := c.Predict()
	at := func(d *time.Duration) *Duration {
		if d == nil {
			return nil
		}
		v := Duration(d.Truncate(time.Second))
		return &v
	}
	e := Expect{Bound: at(p.Bound), Ready: at(p.Ready), Dead: at(p.Dead), ExitCode: p.ExitCode}
	tol := 2 * time.Second
	switch {
	case p.Ready != nil && p.Dead == nil:
		e.Verdict = ReadyOK
		tol = max(tol, time.Duration(float64(*p.Ready)*0.01))
		if !strings.HasPrefix(ending, "ready") {
			ending = "ready (" + ending + ")"
		}
	case p.Dead != nil:
		e.Verdict = FailedFast
	default:
		e.Verdict = FailedSlow // nothing decisive: a correct tool can only time out
	}
	e.Tolerance = Duration(tol)
	return e, ending
}

// untimedSpacing is the line spacing for a log without any timestamp (0 for a log with
// them); the assumption goes into the report.
func untimedSpacing(lines []sglang.Line, d time.Duration, rep *AuthorReport) time.Duration {
	if _, err := logTimeline(lines, 0); err == nil {
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

// servingFlags adds --skip-server-warmup for a log that starts with the server already
// serving: the replay binds at 0 and is ready there, as the server was when the log began.
func servingFlags(lines []sglang.Line, argv []string, rep *AuthorReport) []string {
	if !startsServing(lines) || slices.Contains(argv, "--skip-server-warmup") {
		return argv
	}
	rep.Notes = append(rep.Notes, "the log starts with the server already serving (an answered request before any startup line): the replay binds at 0 and is ready there (launch.flags gains --skip-server-warmup so no warmup runs)")
	return append(argv, "--skip-server-warmup")
}
