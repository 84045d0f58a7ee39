package sglang

import (
	"strconv"
	"strings"
	"time"
)

func isSpace(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}

// ---- headers ----

type header struct {
	start, end int // header span in the text; end includes the space after ']'
	form       TimeForm
	t          time.Time
	ranks      []Rank
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func digits(s string, i, n int) (int, bool) {
	if i+n > len(s) {
		return 0, false
	}
	v := 0
	for j := i; j < i+n; j++ {
		c := s[j]
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

var daysIn = [13]int{0, 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31}

func validDate(y, m, d int) bool {
	if m < 1 || m > 12 || d < 1 || d > daysIn[m] {
		return false
	}
	return m != 2 || d <= 28 || y%4 == 0 && (y%100 != 0 || y%400 == 0)
}

// parseClock reads "HH:MM:SS" at i.
func parseClock(s string, i int) (h, m, sec int, ok bool) {
	if i+8 > len(s) || s[i+2] != ':' || s[i+5] != ':' {
		return
	}
	var ok1, ok2, ok3 bool
	h, ok1 = digits(s, i, 2)
	m, ok2 = digits(s, i+3, 2)
	sec, ok3 = digits(s, i+6, 2)
	ok = ok1 && ok2 && ok3 && h < 24 && m < 60 && sec < 60
	return
}

// rankCache remembers the rank lists of recent headers: a log repeats a handful of prefixes, so
// Lines share one slice per prefix instead of allocating one per line. Callers must not modify
// Line.Ranks or Event.Ranks in place.
type rankCache struct {
	keys [8]string
	vals [8][]Rank
	next int
}

func (c *rankCache) get(key string) ([]Rank, bool) {
	if c == nil {
		return nil, false
	}
	for i := range c.keys {
		if c.vals[i] != nil && c.keys[i] == key {
			return c.vals[i], true
		}
	}
	return nil, false
}

func (c *rankCache) put(key string, v []Rank) {
	if c == nil || v == nil {
		return
	}
	c.keys[c.next], c.vals[c.next] = key, v
	c.next = (c.next + 1) % len(c.keys)
}

// parseRanks reads " TOK TOK" up to ']' at i; it returns the index after ']'.
func parseRanks(s string, i int, c *rankCache) ([]Rank, int, bool) {
	if i < len(s) && s[i] == ']' {
		return nil, i + 1, true
	}
	if end := strings.IndexByte(s[i:], ']'); end > 0 {
		if r, ok := c.get(s[i : i+end]); ok {
			return r, i + end + 1, true
		}
	}
	start := i
	var ranks []Rank
	for {
		if i >= len(s) {
			return nil, 0, false
		}
		if s[i] == ']' {
			c.put(s[start:i], ranks)
			return ranks, i + 1, true
		}
		if s[i] != ' ' || i+1 >= len(s) || !isLetter(s[i+1]) {
			return nil, 0, false
		}
		j := i + 1
		for j < len(s) && (isLetter(s[j]) || isDigit(s[j]) || s[j] == '_' || s[j] == '.') {
			j++
		}
		ranks = append(ranks, rankToken(s[i+1:j]))
		i = j
	}
}

func isLetter(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }

// rankToken splits "TP3" into a Rank; tokens that are not DP/PP/ATTN_CP/MOE_DP/TP/EP plus a
// canonical number are kept whole with N = -1.
func rankToken(tok string) Rank {
	for _, name := range [...]string{"ATTN_CP", "MOE_DP", "DP", "PP", "TP", "EP"} {
		if num, ok := strings.CutPrefix(tok, name); ok && num != "" && len(num) <= 9 {
			n, err := strconv.Atoi(num)
			if err == nil && n >= 0 && strconv.Itoa(n) == num {
				return Rank{Name: name, N: n}
			}
		}
	}
	return Rank{Name: tok, N: -1}
}

// headerAt parses a full "[YYYY-MM-DD HH:MM:SS ranks] " header at i.
func headerAt(s string, i int, c *rankCache) (header, bool) {
	if i+22 > len(s) || s[i] != '[' || s[i+5] != '-' || s[i+8] != '-' || s[i+11] != ' ' {
		return header{}, false
	}
	y, ok1 := digits(s, i+1, 4)
	mo, ok2 := digits(s, i+6, 2)
	d, ok3 := digits(s, i+9, 2)
	h, mi, sec, ok4 := parseClock(s, i+12)
	if !ok1 || !ok2 || !ok3 || !ok4 || !validDate(y, mo, d) {
		return header{}, false
	}
	ranks, end, ok := parseRanks(s, i+20, c)
	if !ok || end >= len(s) || s[end] != ' ' {
		return header{}, false
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, 0, time.UTC)
	if t.IsZero() { // 0001-01-01 00:00:00 is Go's "no time": not representable as a header
		return header{}, false
	}
	return header{start: i, end: end + 1, form: TimeFull, ranks: ranks, t: t}, true
}

// findHeader looks for the SGLang header: the full form anywhere in the line, the time-only and
// MM-DD forms only at its start.
func findHeader(s string, c *rankCache) (header, bool) {
	if len(s) > 0 && s[0] == '[' {
		if h, ok := headerAt(s, 0, c); ok {
			return h, true
		}
		if h, ok := shortHeader(s, c); ok {
			return h, true
		}
	}
	for i := 1; i < len(s); {
		j := strings.IndexByte(s[i:], '[')
		if j < 0 {
			break
		}
		i += j
		if h, ok := headerAt(s, i, c); ok {
			return h, true
		}
		i++
	}
	return header{}, false
}

func shortHeader(s string, c *rankCache) (header, bool) {
	if h, mi, sec, ok := parseClock(s, 1); ok {
		if ranks, end, ok := parseRanks(s, 9, c); ok && end < len(s) && s[end] == ' ' {
			return header{end: end + 1, form: TimeOnly, ranks: ranks, t: time.Date(1970, 1, 1, h, mi, sec, 0, time.UTC)}, true
		}
		return header{}, false
	}
	if len(s) < 16 || s[3] != '-' || s[6] != ' ' {
		return header{}, false
	}
	mo, ok1 := digits(s, 1, 2)
	d, ok2 := digits(s, 4, 2)
	h, mi, sec, ok3 := parseClock(s, 7)
	if !ok1 || !ok2 || !ok3 || !validDate(2000, mo, d) {
		return header{}, false
	}
	ranks, end, ok := parseRanks(s, 15, c)
	if !ok || end >= len(s) || s[end] != ' ' {
		return header{}, false
	}
	return header{end: end + 1, form: TimeShortDate, ranks: ranks, t: time.Date(2000, time.Month(mo), d, h, mi, sec, 0, time.UTC)}, true
}

// ---- wrappers ----
