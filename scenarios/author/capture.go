package author

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// captureStats counts the capture artifacts the parser absorbed, one input line at a time.
type captureStats struct {
	crlf, split, timeOnly, shortDate, backwards int
	firstBack                                   int
	wrappers                                    map[string]int
	last                                        time.Time
	lastNo                                      int
	truncated                                   bool
}

func (c *captureStats) add(l sglang.Line) {
	if l.CRLF && l.Seg == 0 {
		c.crlf++
	}
	if l.Seg > 0 {
		c.split++
	}
	for _, w := range l.Wrappers {
		if c.wrappers == nil {
			c.wrappers = map[string]int{}
		}
		c.wrappers[w.Kind.String()]++
	}
	switch l.TimeForm {
	case sglang.TimeOnly:
		c.timeOnly++
	case sglang.TimeShortDate:
		c.shortDate++
	}
	if l.TimeForm != sglang.TimeNone {
		if !c.last.IsZero() && l.Time.Before(c.last) {
			c.backwards++
			if c.firstBack == 0 {
				c.firstBack = l.No
			}
		}
		c.last = l.Time
	}
	c.lastNo, c.truncated = l.No, l.Truncated
}

// notes describes what add saw.
func (c *captureStats) notes() []string {
	var notes []string
	if c.crlf > 0 {
		notes = append(notes, fmt.Sprintf("%d CRLF line endings normalised to LF", c.crlf))
	}
	if c.split > 0 {
		notes = append(notes, fmt.Sprintf("%d carriage-return redraws or glued progress bars split onto lines of their own", c.split))
	}
	if c.truncated {
		notes = append(notes, fmt.Sprintf("line %d has no newline: the capture may have been cut there", c.lastNo))
	}
	for _, k := range slices.Sorted(maps.Keys(c.wrappers)) {
		notes = append(notes, fmt.Sprintf("%d lines carry a %s wrapper prefix (kept; replay prints SGLang's own lines)", c.wrappers[k], k))
	}
	if c.timeOnly > 0 {
		notes = append(notes, fmt.Sprintf("%d time-only headers: the date is taken from context (1970-01-01 when the log has none); replay prints full dates", c.timeOnly))
	}
	if c.shortDate > 0 {
		notes = append(notes, fmt.Sprintf("%d MM-DD headers: the year is taken from context", c.shortDate))
	}
	if c.backwards > 0 {
		notes = append(notes, fmt.Sprintf("%d headers go back in time (first at line %d): replay keeps file order and holds the clock", c.backwards, c.firstBack))
	}
	return notes
}

// unparsed is the issue of a redacted line the parser kept without understanding it; orig is
// the input line it came from (for its position).
func unparsed(orig, l sglang.Line) (LineIssue, bool) {
	e := l.Event
	reason := ""
	switch {
	case e.Kind == sglang.KindUnknown:
		reason = "unknown line, kept verbatim"
	case (e.Kind == sglang.KindShardProgress || e.Kind == sglang.KindLoadEnd || e.Kind == sglang.KindKVAlloc) && len(e.Fields) == 0:
		reason = "recognised as " + e.Kind.String() + " but its values could not be read"
	case e.Kind == sglang.KindServerArgs:
		if _, err := sglang.SplitRepr(e.Text); err != nil {
			reason = err.Error()
		}
	}
	if reason == "" {
		return LineIssue{}, false
	}
	t := l.Raw
	if len(t) > 120 {
		t = t[:117] + "..."
	}
	return LineIssue{Line: orig.No, Seg: orig.Seg, Kind: e.Kind, Reason: reason, Text: t}, true
}
