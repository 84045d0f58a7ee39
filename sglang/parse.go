package sglang

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Parser turns physical log lines into Lines. It is incremental: a log tailer feeds each line as
// it arrives, and the parser keeps what spans lines (the open traceback block, the last time for
// lines without one, the date for time-only headers). It never fails: anything it cannot
// classify is KindUnknown with the text kept.
type Parser struct {
	ranks     rankCache
	no        int
	last      time.Time // last effective time (header, or wrapper stamp before any header)
	sawHeader bool
	inBlock   bool
	warnOpen  bool // the last line was a Python warning: an indented line after it is its source line
	block     int
	blockRank []Rank
	out       []Line
	partial   []byte // Push: bytes of a line not yet ended
}

// NewParser returns a parser at line 1 with no context.
func NewParser() *Parser { return &Parser{} }

// Feed parses one physical line, without its "\n" (a trailing "\r" is taken as CRLF). The
// returned slice is reused by the next call; copy the Lines to keep them.
func (p *Parser) Feed(raw string) []Line { return p.feed(raw, false) }

// FeedLast parses a final line that had no newline; its Lines are flagged Truncated.
func (p *Parser) FeedLast(raw string) []Line { return p.feed(raw, true) }

func (p *Parser) feed(raw string, truncated bool) []Line {
	p.no++
	p.out = p.out[:0]
	crlf := false
	if n := len(raw); n > 0 && raw[n-1] == '\r' {
		raw, crlf = raw[:n-1], true
	}
	if strings.IndexByte(raw, '\r') < 0 {
		p.segment(raw)
	} else {
		// Carriage-return redraws (PB8): each non-empty piece is a line of its own.
		any := false
		for seg := range strings.SplitSeq(raw, "\r") {
			if seg != "" {
				p.segment(seg)
				any = true
			}
		}
		if !any {
			p.segment("")
		}
	}
	for i := range p.out {
		p.out[i].No = p.no
		p.out[i].Seg = i
		p.out[i].CRLF = crlf
		p.out[i].Truncated = truncated
	}
	return p.out
}

// segment handles one \r-free piece: strip ANSI, peel wrappers, split glued bars, classify.
func (p *Parser) segment(raw string) {
	text := raw
	ansi := false
	if strings.IndexByte(text, 0x1b) >= 0 || strings.Contains(text, "←[") {
		text = reANSI.ReplaceAllString(text, "")
		ansi = true
	}
	var wraps []Wrapper
	for text != "" {
		w, rest, ok := peelWrapper(text)
		if !ok {
			break
		}
		wraps = append(wraps, w)
		text = rest
	}
	var prefix, suffix string
	for i, w := range wraps {
		prefix += w.Text
		suffix = wraps[len(wraps)-1-i].Suffix + suffix
	}
	if suffix != "" {
		if _, rest := splitGlued(text); rest != "" {
			// The padding belongs after the last glued piece; keep it in the text instead.
			text += suffix
			suffix = ""
			wraps = append([]Wrapper(nil), wraps...)
			for i := range wraps {
				wraps[i].Suffix = ""
			}
		}
	}
	first := true
	for {
		piece, rest := splitGlued(text)
		l := Line{Wrappers: wraps}
		if first {
			if ansi {
				l.Raw = raw
			} else {
				l.Raw = prefix + piece
				if rest == "" {
					l.Raw += suffix
				}
			}
		} else {
			l.Raw = piece
			l.Wrappers = nil
		}
		p.classify(&l, piece)
		p.out = append(p.out, l)
		first = false
		if rest == "" {
			return
		}
		text = rest
	}
}

// classify fills l from text (wrappers already peeled) and updates the parser's context.
func (p *Parser) classify(l *Line, text string) {
	var wrapTime time.Time
	for _, w := range l.Wrappers {
		if !w.Time.IsZero() {
			wrapTime = w.Time
		}
	}
	if isSpace(text) { // empty, whitespace-only or wrapper-only: kept, never dropped
		l.Event = Event{Kind: KindBlank, Text: text}
		p.inherit(l, wrapTime)
		if p.inBlock {
			l.Block, l.Ranks = p.block, p.blockRank
		}
		return
	}
	if h, ok := findHeader(text, &p.ranks); ok {
		l.Lead = text[:h.start]
		l.TimeForm = h.form
		t := p.resolve(h)
		l.Time = t
		l.Ranks = h.ranks
		msg := text[h.end:]
		e := classifyMessage(msg, true)
		e.Time = t
		e.Ranks = h.ranks
		l.Event = e
		p.last = t
		p.sawHeader = true
		p.warnOpen = false
		switch e.Kind {
		case KindSchedulerExc, KindTracebackStart:
			p.openBlock(h.ranks)
			l.Block = p.block
		default:
			p.inBlock = false
		}
		return
	}
	e := classifyMessage(text, false)
	p.inherit(l, wrapTime)
	if e.Kind == KindUnknown && p.warnOpen && (text[0] == ' ' || text[0] == '\t') {
		e = foreign("pywarn", text) // warnings.showwarning prints the offending source line indented
	}
	p.warnOpen = e.Kind == KindLaunchWarning || e.Kind == KindForeign && e.Fields[0].Value == "pywarn" && text[0] != ' ' && text[0] != '\t'
	switch e.Kind {
	case KindTracebackStart:
		if !p.inBlock { // inside a block it is a chained exception (TB4): same block
			p.openBlock(nil)
		}
	case KindSchedulerExc:
		p.openBlock(nil)
	case KindTraceback:
		if !p.inBlock { // a log that starts mid-traceback, or a frame after other noise
			p.openBlock(nil)
		}
	case KindUnknown:
		if p.inBlock {
			e.Kind = KindTraceback
		} else if p.no == 1 && (text[0] == ' ' || text[0] == '\t') {
			// An excerpt that starts inside a traceback: an indented code line comes first.
			e.Kind = KindTraceback
			p.openBlock(nil)
		}
	case KindException, KindCUDAOOM, KindHostMemError, KindNCCLError:
		if !p.inBlock { // an excerpt that starts at the exception: the lines after it continue its message
			p.openBlock(nil)
		}
	case KindBlank:
	default:
		p.inBlock = false
	}
	if p.inBlock {
		l.Block = p.block
		l.Ranks = p.blockRank
	}
	l.Event = e
}

func (p *Parser) openBlock(ranks []Rank) {
	p.block++
	p.inBlock = true
	p.blockRank = ranks
}

// inherit gives a line without a header its time: the last header time, or the wrapper's
// stamp while no header has been seen (Dynamo tracing output has no SGLang header at all).
func (p *Parser) inherit(l *Line, wrapTime time.Time) {
	if !p.sawHeader && !wrapTime.IsZero() {
		p.last = wrapTime
		l.Time = wrapTime
		return
	}
	l.Time = p.last
	l.Inherited = !p.last.IsZero()
}

// resolve completes a time-only or short-date header from context and detects rollover.
func (p *Parser) resolve(h header) time.Time {
	if h.form == TimeFull {
		return h.t
	}
	ctx := p.last
	if ctx.IsZero() {
		ctx = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if h.form == TimeOnly {
		y, m, d := ctx.Date()
		t := time.Date(y, m, d, h.t.Hour(), h.t.Minute(), h.t.Second(), 0, time.UTC)
		if t.Before(ctx.Add(-12 * time.Hour)) {
			t = t.AddDate(0, 0, 1)
		}
		return t
	}
	t := time.Date(ctx.Year(), h.t.Month(), h.t.Day(), h.t.Hour(), h.t.Minute(), h.t.Second(), 0, time.UTC)
	if t.Before(ctx.AddDate(0, -6, 0)) {
		t = t.AddDate(1, 0, 0)
	}
	return t
}

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
