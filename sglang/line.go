package sglang

import (
	"time"
)

// WrapperKind names something that put its own prefix in front of SGLang's line.
type WrapperKind uint8

const (
	WrapCompose WrapperKind = iota + 1 // docker compose "svc-1  | "
	WrapHostTS                         // Docker Desktop host stamp / docker logs --timestamps
	WrapLoki                           // Loki/Grafana export: epoch_ms TAB ISO TAB
	WrapPyLog                          // parent Python logger "date,ms - name - LEVEL - "
	WrapTracing                        // Dynamo Rust tracing "ISO  LEVEL module.func: "
)

var wrapperNames = [...]string{"", "compose", "host_ts", "loki", "pylog", "tracing"}

func (k WrapperKind) String() string {
	if int(k) < len(wrapperNames) && k > 0 {
		return wrapperNames[k]
	}
	return "wrapper(?)"
}

// MarshalText writes the wrapper kind's name.
func (k WrapperKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// Wrapper is one peeled prefix, outermost first in Line.Wrappers.
type Wrapper struct {
	Kind   WrapperKind
	Text   string    // the prefix exactly as it appeared (peeling it off the raw text leaves the rest)
	Suffix string    // what the wrapper appended after the line (tracing pads with three blanks)
	Name   string    // compose service, logger name, tracing target, kubectl container
	Level  string    // INFO, ERROR, ... when the wrapper has one
	Time   time.Time // the wrapper's own stamp, when it has one (host-local; not SGLang's time)
}

// TimeForm is how a line's SGLang header wrote its time.
type TimeForm uint8

const (
	TimeNone      TimeForm = iota // no header
	TimeFull                      // [2006-01-02 15:04:05 ...]
	TimeOnly                      // [15:04:05 ...] (TS2): date from context
	TimeShortDate                 // [01-02 15:04:05] (TS3): year from context
)

// Line is one parsed log line. A physical line yields one Line, or several when it holds
// carriage-return redraws or a progress bar with another line glued on; those share No and
// count up Seg.
type Line struct {
	No  int    // 1-based physical line number
	Seg int    // 0-based segment within the physical line
	Raw string // this segment exactly as read (no newline; a CRLF's CR removed, see CRLF)

	Wrappers []Wrapper // peeled prefixes, outermost first
	Lead     string    // text between the wrappers and the SGLang header (glued prose, a path, ...)
	Event    Event     // the typed line; Render(Event, any profile) reproduces the text after Lead,
	// except for TimeOnly/TimeShortDate headers (rendered with the full date)

	// Time is the line's effective time: its header time, or else the last time seen (header or
	// wrapper stamp), so that lines without a header keep their place. Event.Time stays zero for
	// lines without a header so that rendering is exact.
	Time      time.Time
	TimeForm  TimeForm
	Inherited bool   // Time came from an earlier line
	Ranks     []Rank // the header's ranks, or the opening line's for traceback bodies (shared between Lines: do not modify)
	Block     int    // traceback block number (1-based), 0 outside a traceback

	CRLF      bool // the physical line ended in "\r\n"
	Truncated bool // the last line of the input had no newline: it may have been cut
}
