package sglang

import (
	"strings"
)

// bareLine recognises lines that never carry SGLang's header: bars, traceback parts, foreign
// output and paste furniture.
func bareLine(s string) (Event, bool) {
	c := s[0]
	if c == ' ' || c == '\t' {
		t := strings.TrimLeft(s, " \t")
		switch {
		case strings.HasPrefix(t, `File "`):
			return Event{Kind: KindTraceback, Text: s}, true
		case reCaret.MatchString(s):
			return Event{Kind: KindTraceback, Text: s}, true
		}
	}
	if strings.HasPrefix(s, `File "`) { // HE5: indentation stripped by a Markdown render
		return Event{Kind: KindTraceback, Text: s}, true
	}
	if strings.HasPrefix(s, "The above exception was the direct cause") || strings.HasPrefix(s, "During handling of the above exception") {
		return Event{Kind: KindTraceback, Text: s}, true
	}
	if lib, ok := libraryPrints[s]; ok {
		return foreign(lib, s), true
	}
	if strings.Contains(s, "it [") && reCountBar.MatchString(s) {
		return foreign("tqdm", s), true
	}
	if strings.IndexByte(s, '%') >= 0 && (strings.Contains(s, "it]") || strings.Contains(s, "it/s]")) {
		if e, ok := cgBar(s); ok {
			return e, true
		}
		if reAnyBar.MatchString(s) {
			return foreign("tqdm", s), true
		}
	}
	switch {
	case (c == 'I' || c == 'W' || c == 'E' || c == 'F') && reGlog.MatchString(s):
		return foreign("glog", s), true
	case c == '[':
		if reC10D.MatchString(s) {
			return foreign("c10d", s), true
		}
		if g := reTag.FindStringSubmatch(s); g != nil {
			return foreign(strings.ToLower(g[1]), s), true
		}
	case c == 'D' && reKubectl.MatchString(s):
		return foreign("kubectl", s), true
	}
	if strings.Contains(s, ".py:") && rePyWarn.MatchString(s) {
		if strings.HasSuffix(s, msgServeWarning) {
			return Event{Kind: KindLaunchWarning, Text: s}, true
		}
		return foreign("pywarn", s), true
	}
	if strings.Contains(s, " - ") && rePyLib.MatchString(s) {
		return foreign("pylib", s), true
	}
	if reVLLM.MatchString(s) {
		return foreign("vllm", s), true
	}
	if strings.Contains(s, " NCCL ") && reNCCL.MatchString(s) {
		return foreign("nccl", s), true
	}
	if reFence.MatchString(s) || reHTML.MatchString(s) || rePrompt.MatchString(s) {
		return foreign("paste", s), true
	}
	return Event{}, false
}

func foreign(src, s string) Event {
	return Event{Kind: KindForeign, Fields: Fields{{"source", src}}, Text: s}
}

// exceptionLine recognises "Type: message" (EXC_LINE) and the kinds that are exceptions with
// a known message: CUDA OOM, the HiCache host-memory check, NCCL errors.
func exceptionLine(s string) (Event, bool) {
	i := 0
	for i < len(s) && (isLetter(s[i]) || isDigit(s[i]) || s[i] == '_' || s[i] == '.') {
		i++
	}
	if i == 0 || isDigit(s[0]) || s[0] == '.' {
		return Event{}, false
	}
	exc := s[:i]
	ok := false
	for _, suf := range [...]string{"Error", "Exception", "Exit", "Interrupt", "Warning"} {
		if strings.HasSuffix(exc, suf) {
			ok = true
			break
		}
	}
	if !ok {
		return Event{}, false
	}
	rest := s[i:]
	var msg string
	switch {
	case rest == "":
	case strings.HasPrefix(rest, ": ") && len(rest) > 2:
		msg = rest[2:]
	default:
		return Event{}, false
	}
	if g := reCUDAOOM.FindStringSubmatch(msg); g != nil {
		return Event{Kind: KindCUDAOOM, Fields: fieldsOf("amount", g[1], "unit", g[2]), Text: s}, true
	}
	if strings.Contains(msg, "CUDA out of memory.") { // the amount is on a line of its own (a reflowed message)
		return Event{Kind: KindCUDAOOM, Text: s}, true
	}
	if g := reHostOOM.FindStringSubmatch(msg); g != nil && exc == "ValueError" {
		return exact(Event{Kind: KindHostMemError, Fields: fieldsOf("requested_gb", g[1], "free_gb", g[2])}, s), true
	}
	if g := reErrno98.FindStringSubmatch(msg); g != nil {
		return exact(Event{Kind: KindErrno98, Fields: optFields(nil, "host", g[1], "port", g[2])}, s), true
	}
	if d, ok := strings.CutPrefix(msg, msgNCCL); ok {
		return Event{Kind: KindNCCLError, Fields: fieldsOf("exc", exc), Text: d}, true
	}
	return Event{Kind: KindException, Fields: fieldsOf("exc", exc), Text: msg}, true
}
