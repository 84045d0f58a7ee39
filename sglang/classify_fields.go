package sglang

import (
	"regexp"
	"strings"
)

// captureLine reads the capture phase lines worded "Capture <what> graph begin." and
// "... end." (2026: "Capture target decode CUDA graph begin. backend=..., avail mem=X GB";
// "... end. elapsed=X s, mem usage=Y GB, avail mem=Z GB.").
func captureLine(m string) (Event, bool) {
	if g := reCGBegin2.FindStringSubmatch(m); g != nil {
		fs := fieldsOf("graph", g[1], "backend", g[2], "num_tokens_per_req", g[3], "bs", g[4], "avail_mem", g[5])
		return exact(Event{Kind: KindCGBegin, Fields: fs}, m), true
	}
	if g := reCGEnd2.FindStringSubmatch(m); g != nil {
		fs := fieldsOf("graph", g[1], "elapsed", g[2], "mem_usage", g[3], "avail_mem", g[4])
		return exact(Event{Kind: KindCGEnd, Fields: fs}, m), true
	}
	g := reCapture.FindStringSubmatch(m)
	if g == nil {
		return Event{}, false
	}
	val := func(re *regexp.Regexp) string {
		if v := re.FindStringSubmatch(m); v != nil {
			return v[1]
		}
		return ""
	}
	if g[1] == "begin" {
		return exact(Event{Kind: KindCGBegin, Fields: optFields(nil, "avail_mem", val(reAvailMem))}, m), true
	}
	el := val(reElapsed)
	if el == "" {
		return Event{}, false
	}
	fs := fieldsOf("elapsed", el)
	if mu, av := val(reMemUsage), val(reAvailMem); mu != "" && av != "" {
		fs = append(fs, Field{"mem_usage", mu}, Field{"avail_mem", av})
	}
	return exact(Event{Kind: KindCGEnd, Fields: fs}, m), true
}

// withVerbatimPrefix handles "Scheduler hit an exception:" without the space: the canonical
// render adds one, so the message is not exact; keep it as Unknown-like text instead.
func (e Event) withVerbatimPrefix(m string) Event {
	if string(appendMessage(nil, e, Profile{})) != m {
		return Event{Kind: KindUnknown, Text: m}
	}
	return e
}

func watchdog(m string) (Event, bool) {
	g := reWatchdog.FindStringSubmatch(m)
	if g == nil {
		return Event{}, false
	}
	fs := optFields(nil, "who", g[1])
	fs = append(fs, Field{"timeout", g[2]})
	fs = optFields(fs, "soft", g[3])
	return exact(Event{Kind: KindWatchdog, Fields: fs}, m), true
}

func cgBar(m string) (Event, bool) {
	g := reCGBar.FindStringSubmatch(m)
	if g == nil {
		return Event{}, false
	}
	fs := optFields(nil, "bs", g[1], "avail_mem", g[2])
	fs = append(fs, Field{"pct", g[3]}, Field{"bar", g[4]}, Field{"done", g[5]}, Field{"total", g[6]},
		Field{"elapsed", g[7]}, Field{"remaining", g[8]}, Field{"rate", g[9]})
	return exact(Event{Kind: KindCGProgress, Fields: fs}, m), true
}

func uvicornInfo(m string) (Event, bool) {
	rest := m[len("INFO:"):]
	switch {
	case strings.HasPrefix(rest, "     Started server process ["):
		if g := reUviPid.FindStringSubmatch(m); g != nil {
			return exact(Event{Kind: KindUvicornStarted, Fields: fieldsOf("pid", g[1])}, m), true
		}
	case m == msgUviWaiting:
		return Event{Kind: KindUvicornWaiting}, true
	case m == msgUviComplete:
		return Event{Kind: KindUvicornComplete}, true
	case strings.HasPrefix(m, msgUviRunning):
		if g := reUviRun.FindStringSubmatch(m); g != nil {
			return exact(Event{Kind: KindUvicornRunning, Fields: fieldsOf("scheme", g[1], "host", g[2], "port", g[3])}, m), true
		}
	case m == uviInfo+"Waiting for application shutdown." || m == uviInfo+"Application shutdown complete.":
		return Event{Kind: KindUvicornShutdown, Text: m[len(uviInfo):]}, true
	}
	if e, ok := accessLine(m); ok {
		return e, true
	}
	if g := reAccess.FindStringSubmatch(m); g != nil {
		fs := fieldsOf("client", g[1], "method", g[2], "path", g[3], "proto", g[4], "status", g[5], "reason", g[6])
		return exact(Event{Kind: KindAccess, Fields: fs}, m), true
	}
	return Event{}, false
}

// accessLine is the hand-written fast path for uvicorn access lines, the most common line of a
// probed server: it accepts only the exact canonical shape, so the event renders back as is.
func accessLine(m string) (Event, bool) {
	rest, ok := strings.CutPrefix(m, uviInfo)
	if !ok {
		return Event{}, false
	}
	i := strings.Index(rest, ` - "`)
	if i <= 0 || strings.IndexByte(rest[:i], ' ') >= 0 {
		return Event{}, false
	}
	client := rest[:i]
	rest = rest[i+4:]
	j := strings.IndexByte(rest, '"')
	if j < 0 {
		return Event{}, false
	}
	req := rest[:j]
	rest = rest[j+1:]
	sp1 := strings.IndexByte(req, ' ')
	sp2 := strings.LastIndexByte(req, ' ')
	if sp1 <= 0 || sp2 <= sp1+1 || !strings.HasPrefix(req[sp2+1:], "HTTP/") || strings.IndexByte(req[sp1+1:sp2], ' ') >= 0 {
		return Event{}, false
	}
	if len(rest) < 4 || rest[0] != ' ' || !allDigits(rest[1:4]) {
		return Event{}, false
	}
	status, reason := rest[1:4], ""
	if len(rest) > 4 {
		if rest[4] != ' ' || len(rest) == 5 {
			return Event{}, false
		}
		reason = rest[5:]
	}
	for k := 0; k < sp1; k++ {
		if req[k] < 'A' || req[k] > 'Z' {
			return Event{}, false
		}
	}
	fs := make(Fields, 6)
	fs[0], fs[1], fs[2] = Field{"client", client}, Field{"method", req[:sp1]}, Field{"path", req[sp1+1 : sp2]}
	fs[3], fs[4], fs[5] = Field{"proto", req[sp2+1:]}, Field{"status", status}, Field{"reason", reason}
	return Event{Kind: KindAccess, Fields: fs}, true
}

// parseBatch splits a Prefill/Decode line into its printed fields: "label: value" pieces
// separated by ", ", in order, so new, missing or reordered fields all round-trip.
func parseBatch(k Kind, m string, n int) (Event, bool) {
	rest := m[n:]
	var fs Fields
	if strings.HasPrefix(rest, " [") {
		end := strings.IndexByte(rest, ']')
		if end < 3 || !allDigits(rest[2:end]) {
			return Event{}, false
		}
		fs = append(make(Fields, 0, 12), Field{"iter", rest[2:end]})
		rest = rest[end+1:]
	}
	if len(rest) < 2 || (rest[0] != '.' && rest[0] != ',') || rest[1] != ' ' {
		return Event{}, false
	}
	sep := rest[:1]
	body := rest[2:]
	// Whatever trails the last value (", " on mid-2025 Decode lines) goes back with the separator.
	t := len(body)
	for t > 0 && (body[t-1] == ',' || body[t-1] == ' ') {
		t--
	}
	tail := body[t:]
	body = body[:t]
	if fs == nil {
		fs = make(Fields, 0, 10)
	}
	// One pass: ", " ends a piece, the first ": " in a piece splits label from value.
	first := true
	pieceStart, colon := 0, -1
	emit := func(end int) {
		piece := body[pieceStart:end]
		var f Field
		if colon > pieceStart && !(first && body[pieceStart:colon] == "iter") {
			f = Field{body[pieceStart:colon], body[colon+2 : end]}
		} else {
			f = Field{"", piece}
		}
		fs = append(fs, f)
		first = false
	}
	for i := 0; i+1 < len(body); i++ {
		switch body[i] {
		case ':':
			if colon < 0 && body[i+1] == ' ' {
				colon = i
			}
		case ',':
			if body[i+1] == ' ' {
				emit(i)
				pieceStart, colon = i+2, -1
				i++
			}
		}
	}
	if body != "" {
		emit(len(body))
	}
	if len(fs) == 0 {
		fs = nil
	}
	return Event{Kind: k, Fields: fs, Text: sep + tail}, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return s != ""
}
