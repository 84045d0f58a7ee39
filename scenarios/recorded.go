package scenarios

import (
	"io"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// recordedTimeline converts a captured log to a timeline and adds the process ops the log
// implies: the port binds where uvicorn says it is running, and the launcher exits after
// its fatal path (sglang-server.md §5.2: sigquit/Killed → 137; a dead rank's EOFError path → 1).
func recordedTimeline(r io.Reader) (replay.Timeline, error) {
	tl, err := replay.FromLogReader(r)
	if err != nil {
		return tl, err
	}
	var out replay.Timeline
	out.Start = tl.Start
	code := 0
	bound := false
	for _, e := range tl.Entries {
		if e.Op == replay.OpLog && e.Event.Kind == sglang.KindUvicornRunning && !bound {
			out.Entries = append(out.Entries, replay.Entry{At: e.At, Op: replay.OpBind})
			bound = true
		}
		out.Entries = append(out.Entries, e)
		switch e.Event.Kind {
		case sglang.KindSigquitChild, sglang.KindSigquitReceived, sglang.KindKilled, sglang.KindInitFailed:
			code = 137
		case sglang.KindRankDead:
			if code == 0 {
				code = 1
			}
		}
	}
	if code != 0 {
		out.Entries = append(out.Entries, replay.Entry{At: out.Duration() + 200*time.Millisecond, Op: replay.OpExit, Code: code})
	}
	return out, nil
}
