package scenarios

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// launcherExitDelay is how long after a recorded log's last line the launcher's exit comes
// (the sigquit handler's kill of the tree, an uncaught exception's interpreter exit).
const launcherExitDelay = 200 * time.Millisecond

// recordedTimeline converts a captured log to a timeline and adds the process ops the log
// implies: the port binds where uvicorn says it is running (or at 0 when the log starts with
// the server already serving), and the launcher exits after its fatal path (see impliedExit).
// A log without any timestamp needs spacing > 0 (see LogTimeline).
func recordedTimeline(r io.Reader, spacing time.Duration) (replay.Timeline, error) {
	lines, err := sglang.Parse(r)
	if err != nil {
		return replay.Timeline{}, fmt.Errorf("reading log (after %d lines): %w", len(lines), err)
	}
	tl, err := LogTimeline(lines, spacing)
	if err != nil {
		return tl, err
	}
	var out replay.Timeline
	out.Start = tl.Start
	bound := StartsServing(lines)
	if bound {
		out.Entries = append(out.Entries, replay.Entry{At: 0, Op: replay.OpBind})
	}
	for _, e := range tl.Entries {
		if e.Op == replay.OpLog && e.Event.Kind == sglang.KindUvicornRunning && !bound {
			out.Entries = append(out.Entries, replay.Entry{At: e.At, Op: replay.OpBind})
			bound = true
		}
		out.Entries = append(out.Entries, e)
	}
	if code, _ := impliedExit(lines, tl); code != 0 {
		out.Entries = append(out.Entries, replay.Entry{At: out.Duration() + launcherExitDelay, Op: replay.OpExit, Code: code})
	}
	return out, nil
}

// noTimeStart is where the lines of a log without timestamps are placed from.
var noTimeStart = func() time.Time { t, _ := time.Parse(startLayout, defaultStart); return t }()

// LogTimeline is replay.FromLog, except that a log with no timestamp at all is placed in file
// order, spacing apart, from noTimeStart; with spacing 0 such a log is an error.
func LogTimeline(lines []sglang.Line, spacing time.Duration) (replay.Timeline, error) {
	tl, err := replay.FromLog(lines)
	if !errors.Is(err, replay.ErrNoTimestamps) {
		return tl, err
	}
	if spacing <= 0 {
		return tl, errors.New("the log has no timestamps (no SGLang header, no wrapper stamp): set timeline.recorded.spacing (e.g. 100ms) to place its lines in file order that far apart")
	}
	tl.Start = noTimeStart
	for i := range tl.Entries {
		tl.Entries[i].At = time.Duration(i) * spacing
	}
	return tl, nil
}

// StartsServing reports a log that starts after the server was up: it answers an HTTP request
// before any line of startup (server_args, a phase line, uvicorn's own lines). Prefill and
// Decode lines alone do not say so: an offline Engine prints them without any HTTP server.
func StartsServing(lines []sglang.Line) bool {
	for _, l := range lines {
		switch k := l.Event.Kind; {
		case k == sglang.KindAccess:
			return true
		case sglang.StageOf(k).InPhase:
			return false
		}
	}
	return false
}
