package author

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// inferFlags reads the flags from the server_args line; without one it builds them from what
// the log shows (rank prefixes, the uvicorn address) and says so.
func inferFlags(lines []sglang.Line, rep *Report) ([]string, []string) {
	for _, l := range lines {
		if l.Event.Kind != sglang.KindServerArgs {
			continue
		}
		argv, dropped, err := sglang.ReprFlags(l.Event.Text)
		if err != nil {
			rep.Notes = append(rep.Notes, fmt.Sprintf("line %d: server_args: %v", l.No, err))
		}
		if len(argv) > 0 {
			return argv, dropped
		}
		break
	}
	rep.Notes = append(rep.Notes, "no readable server_args line: launch.flags are rebuilt from rank prefixes and the uvicorn line, with a placeholder --model-path; edit them")
	argv := []string{"--model-path", "unknown/model-from-log"}
	for _, p := range [...]struct{ rank, flag string }{{"TP", "--tp-size"}, {"PP", "--pp-size"}, {"DP", "--dp-size"}} {
		if n := rankMax(lines, p.rank); n > 0 {
			argv = append(argv, p.flag, strconv.Itoa(n+1))
		}
	}
	if rankMax(lines, "DP") > 0 {
		argv = append(argv, "--enable-dp-attention") // DP ranks inside one TP group print "DPn TPn"
	}
	for _, l := range lines {
		if l.Event.Kind == sglang.KindUvicornRunning {
			h, _ := l.Event.Fields.Get("host")
			p, _ := l.Event.Fields.Get("port")
			if h != "" && !strings.ContainsAny(h, " \t") {
				argv = append(argv, "--host", h)
			}
			if p != "" {
				argv = append(argv, "--port", p)
			}
			break
		}
	}
	if _, err := sglang.ParseArgs(argv); err != nil {
		return []string{"--model-path", "unknown/model-from-log"}, []string{err.Error()}
	}
	return argv, nil
}

// servingFlags adds --skip-server-warmup for a log that starts with the server already
// serving: the replay binds at 0 and is ready there, as the server was when the log began.
func servingFlags(lines []sglang.Line, argv []string, rep *Report) []string {
	if !scenarios.StartsServing(lines) || slices.Contains(argv, "--skip-server-warmup") {
		return argv
	}
	rep.Notes = append(rep.Notes, "the log starts with the server already serving (an answered request before any startup line): the replay binds at 0 and is ready there (launch.flags gains --skip-server-warmup so no warmup runs)")
	return append(argv, "--skip-server-warmup")
}
