package replay

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// ErrNoTimestamps means a log carried no time at all, so every entry of the timeline
// FromLog returns with it sits at offset 0.
var ErrNoTimestamps = errors.New("replay: the log has no timestamps (no SGLang header, no wrapper stamp): every line is at offset 0; give the scenario explicit offsets or model it from flags")

// FromLog turns parsed log lines into a timeline of OpLog entries on Stdout, one per line,
// in file order (never reordered). Offsets come from the log's own times:
//
//   - If any line has an SGLang header, header times are the only source: Start is the
//     first header's time, lines without a header inherit the previous header's offset, and
//     lines before the first header sit at 0. Wrapper stamps are ignored because they are
//     another clock (Docker Desktop's host-local time is hours away from SGLang's).
//   - Otherwise the parser's effective times (wrapper stamps) are used the same way.
//   - A time going backwards (merged streams, a line from another run) is clamped to the
//     previous offset, so the timeline stays sorted and the line keeps its place. A forward
//     jump into another run is kept as a gap: nothing in the line says it is foreign.
//
// Events keep their parsed Time, so header lines render with a header and the rest without.
// When no line has a time, FromLog returns the timeline (all at 0) with ErrNoTimestamps.
func FromLog(lines []sglang.Line) (Timeline, error) {
	headerTime := func(l sglang.Line) time.Time {
		if l.TimeForm == sglang.TimeNone {
			return time.Time{}
		}
		return l.Time
	}
	timeOf := headerTime
	if !hasTime(lines, headerTime) {
		timeOf = func(l sglang.Line) time.Time { return l.Time }
	}

	tl := Timeline{Entries: make([]Entry, 0, len(lines))}
	var at time.Duration
	for _, l := range lines {
		if t := timeOf(l); !t.IsZero() {
			if tl.Start.IsZero() {
				tl.Start = t
			}
			at = max(at, t.Sub(tl.Start))
		}
		tl.Entries = append(tl.Entries, Entry{At: at, Op: OpLog, Stream: Stdout, Event: l.Event})
	}
	if tl.Start.IsZero() && len(lines) > 0 {
		return tl, ErrNoTimestamps
	}
	return tl, nil
}

// FromLogReader parses a captured log with sglang.Parse and converts it with FromLog.
func FromLogReader(r io.Reader) (Timeline, error) {
	lines, err := sglang.Parse(r)
	if err != nil {
		return Timeline{}, fmt.Errorf("replay: reading log (after %d lines): %w", len(lines), err)
	}
	return FromLog(lines)
}

func hasTime(lines []sglang.Line, timeOf func(sglang.Line) time.Time) bool {
	for _, l := range lines {
		if !timeOf(l).IsZero() {
			return true
		}
	}
	return false
}
