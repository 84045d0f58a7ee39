package sglang

import (
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
