package scenarios

import (
	"regexp"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// livedOnAfter is how much later than a traceback a headed line must be stamped to show the
// process outlived it: the launcher's kill follows the traceback within a second, and headers
// have one-second resolution.
const livedOnAfter = 2 * time.Second

var reRankDiedInit = regexp.MustCompile(`^Rank \d+ scheduler died during initialization`)

// impliedExit is the launcher's exit status a recorded log implies, 0 for none, and why.
//
//   - The launcher's own lines decide first: a sigquit line, "Killed" or a warmup failure is
//     the tree killed (137); "Rank N scheduler is dead" is the EOFError path (1).
//   - Otherwise the log's last traceback decides, unless a headed line of another kind comes
//     livedOnAfter or more after it (the process lived on):
//   - a scheduler's traceback (opened by a headed line with ranks, or "Scheduler hit an
//     exception") is followed by SIGQUIT to the launcher, which kills its tree (137); eras
//     before the SIGQUIT handler killed the parent directly, with the same status;
//   - the launcher's own uncaught traceback (a launch_server or runpy frame, or the
//     "Rank N scheduler died during initialization" RuntimeError) ends the interpreter (1).
func impliedExit(lines []sglang.Line, tl replay.Timeline) (int, string) {
	code, why := 0, ""
	for _, l := range lines {
		switch l.Event.Kind {
		case sglang.KindSigquitChild, sglang.KindSigquitReceived, sglang.KindKilled, sglang.KindInitFailed:
			code, why = 137, "the launcher kills its process tree ("+l.Event.Kind.String()+")"
		case sglang.KindRankDead:
			if code == 0 {
				code, why = 1, "a scheduler died during startup: the launcher's EOFError path"
			}
		}
	}
	if code != 0 {
		return code, why
	}
	open, end := lastBlock(lines)
	if open < 0 {
		return 0, ""
	}
	for j := end + 1; j < len(lines); j++ {
		l := lines[j]
		if l.TimeForm != sglang.TimeNone && l.Block == 0 && !sglang.IsFailure(l.Event.Kind) && tl.Entries[j].At-tl.Entries[open].At >= livedOnAfter {
			return 0, ""
		}
	}
	first := lines[open]
	if first.Event.Kind == sglang.KindSchedulerExc || first.TimeForm != sglang.TimeNone && len(first.Ranks) > 0 {
		return 137, "a scheduler traceback with no launcher line after it: the launcher kills its process tree (137)"
	}
	for _, l := range lines[open : end+1] {
		t := l.Event.Text
		if strings.Contains(t, `File "<frozen runpy>"`) || strings.Contains(t, "launch_server.py") ||
			l.Event.Kind == sglang.KindException && reRankDiedInit.MatchString(t) {
			return 1, "the launcher's own uncaught traceback: the interpreter exits (1)"
		}
	}
	return 0, ""
}

// lastBlock is the first and last line index of the log's last traceback block, -1 for none.
func lastBlock(lines []sglang.Line) (int, int) {
	open, end := -1, -1
	for i, l := range lines {
		if l.Block == 0 {
			continue
		}
		if open < 0 || l.Block != lines[open].Block {
			open = i
		}
		end = i
	}
	return open, end
}
