package sglang

import (
	"regexp"
	"strings"
	"time"
)

var (
	reANSI    = regexp.MustCompile(`\x1b\[[0-9;]*[A-Za-z]|←\[[0-9;]*m`)
	reLoki    = regexp.MustCompile(`^(\d{13})\t(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z)\t`)
	reCompose = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*[-_]\d+)\s+\| ?`)
	rePyLog   = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2},\d{3}) - (\S+) - (DEBUG|INFO|WARNING|ERROR|CRITICAL) - `)
	reTracing = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d+Z)\s+(TRACE|DEBUG|INFO|WARN|ERROR)\s+([\w.]+(?:::[\w.]+)*): `)
	reHostTS  = regexp.MustCompile(`^(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)(?: |$)`)
)

func parseStamp(s string) time.Time {
	s = strings.Replace(s, ",", ".", 1)
	for _, layout := range [...]string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999",
		"2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05-0700", "2006-01-02T15:04:05.999999999-0700"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t
		}
	}
	return time.Time{}
}

// peelWrapper removes one known prefix (LOKI, COMPOSE, PYLOG, TRACING, then HOST_TS).
func peelWrapper(s string) (Wrapper, string, bool) {
	c := s[0]
	if isDigit(c) && len(s) >= 11 {
		if len(s) > 14 && s[13] == '\t' {
			if m := reLoki.FindStringSubmatch(s); m != nil {
				return Wrapper{Kind: WrapLoki, Text: m[0], Name: m[1], Time: parseStamp(m[2])}, s[len(m[0]):], true
			}
		}
		if s[4] == '-' {
			if m := rePyLog.FindStringSubmatch(s); m != nil {
				return Wrapper{Kind: WrapPyLog, Text: m[0], Name: m[2], Level: m[3], Time: parseStamp(m[1])}, s[len(m[0]):], true
			}
			if m := reTracing.FindStringSubmatch(s); m != nil {
				rest := strings.TrimRight(s[len(m[0]):], " ")
				return Wrapper{Kind: WrapTracing, Text: m[0], Suffix: s[len(m[0])+len(rest):], Name: m[3], Level: m[2], Time: parseStamp(m[1])}, rest, true
			}
			if m := reHostTS.FindStringSubmatch(s); m != nil {
				return Wrapper{Kind: WrapHostTS, Text: m[0], Time: parseStamp(m[1])}, s[len(m[0]):], true
			}
		}
	}
	if (isLetter(c) || isDigit(c)) && strings.IndexByte(s, '|') > 0 {
		if m := reCompose.FindStringSubmatch(s); m != nil {
			return Wrapper{Kind: WrapCompose, Text: m[0], Name: m[1]}, s[len(m[0]):], true
		}
	}
	return Wrapper{}, s, false
}

// ---- glued progress bars ----

var reTQDMTail = regexp.MustCompile(`(\d{1,3})%(?:\|[^|]*\|| Completed \|)? ?(\d+)/(\d+) \[[^\]]*\]`)

// splitGlued splits a progress bar from the line glued after it (PB5, PB5b, PB6). It returns
// the whole text and "" when nothing is glued.
func splitGlued(s string) (string, string) {
	if strings.IndexByte(s, '%') < 0 || !strings.Contains(s, "it]") && !strings.Contains(s, "it/s]") {
		return s, ""
	}
	if len(s) > 0 && s[0] == '[' {
		if _, ok := headerAt(s, 0, nil); ok {
			return s, ""
		}
	}
	loc := reTQDMTail.FindStringIndex(s)
	if loc == nil || loc[1] >= len(s) {
		return s, ""
	}
	return s[:loc[1]], s[loc[1]:]
}
