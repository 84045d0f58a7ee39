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
		argv, dropped, err := flagsFromServerArgs(l.Event.Text)
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

// flagsFromServerArgs turns a server_args repr into launch flags: every item incident-replay
// models (sglang.ServerArgs) whose value differs from SGLang's default becomes a flag. Items
// it cannot carry (unmodelled fields, values with spaces, values SGLang's own argument rules
// reject) are returned as dropped, each with the reason, so the caller can report them.
func flagsFromServerArgs(text string) (argv []string, dropped []string, err error) {
	items, err := sglang.SplitRepr(text)
	if len(items) == 0 {
		if err == nil {
			err = fmt.Errorf("server_args has no items")
		}
		return nil, nil, err
	}
	defaults, _ := sglang.SplitRepr(sglang.DefaultServerArgs().Repr(false))
	def := map[string]string{}
	order := make([]string, 0, len(defaults))
	for _, d := range defaults {
		def[d.Key] = d.Value
		order = append(order, d.Key)
	}
	got := map[string]string{}
	unmodelled := 0
	for _, it := range items {
		if _, ok := def[it.Key]; ok {
			got[it.Key] = it.Value
		} else {
			unmodelled++
		}
	}
	if unmodelled > 0 {
		dropped = append(dropped, fmt.Sprintf("%d server_args fields incident-replay does not model (kept in the log line)", unmodelled))
	}
	model, ok := sglang.PyString(got["model_path"])
	if !ok || model == "" {
		return nil, dropped, fmt.Errorf("server_args has no model_path string")
	}
	argv = []string{"--model-path", model}
	for _, key := range order {
		v, ok := got[key]
		if !ok || key == "model_path" || v == def[key] || v == "None" {
			continue
		}
		flag := "--" + strings.ReplaceAll(key, "_", "-")
		var vals []string
		switch {
		case v == "True":
			vals = []string{}
		case v == "False":
			continue // store_true flags default to False; a False that differs is a repr quirk
		case strings.HasPrefix(v, "["):
			for p := range strings.SplitSeq(strings.Trim(v, "[]"), ",") {
				if p = strings.TrimSpace(p); p != "" {
					vals = append(vals, p)
				}
			}
		default:
			if s, ok := sglang.PyString(v); ok {
				v = s
			}
			if num, err := strconv.ParseFloat(v, 64); err == nil && !strings.Contains(def[key], ".") && strings.HasSuffix(v, ".0") {
				v = strconv.FormatFloat(num, 'f', -1, 64) // 8.0 for an int field
			}
			vals = []string{v}
		}
		if slices.ContainsFunc(vals, func(s string) bool { return s == "" || strings.ContainsAny(s, " \t\n") }) {
			dropped = append(dropped, fmt.Sprintf("%s: value %s cannot be written as a flag (launch.flags has no quoting)", flag, v))
			continue
		}
		cand := append(append(slices.Clone(argv), flag), vals...)
		if _, perr := sglang.ParseArgs(cand); perr != nil {
			dropped = append(dropped, fmt.Sprintf("%s %s: %v", flag, strings.Join(vals, " "), perr))
			continue
		}
		argv = cand
	}
	return argv, dropped, err
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
