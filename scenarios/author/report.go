package author

import (
	"fmt"
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// Report is everything FromLog inferred, and everything it could not read.
type Report struct {
	Name      string
	Lines     int // physical lines read
	Segments  int // parsed lines (carriage-return redraws and glued bars split)
	Profile   string
	Era       sglang.Era
	Evidence  []string // the lines that picked the profile, most telling first
	Ranks     int      // scheduler processes seen in the headers (1 when none)
	Flags     string
	Dropped   []string // server_args values the flags could not carry, with why
	Phases    []PhaseSpan
	Probes    []ProbePattern
	Ending    string // ready, a failure signature, or "log ends" (nothing decisive)
	ExitCode  *int   // the launcher's exit status the log implies
	Expect    scenarios.Expect
	Unparsed  []LineIssue // lines kept verbatim that the parser could not read
	Notes     []string    // capture artifacts normalised or worth knowing (CRLF, truncation, ...)
	Redaction []scenarios.RedactCount
}

// LineIssue is one input line FromLog could not fully read.
type LineIssue struct {
	Line   int // 1-based physical line of the input
	Seg    int // segment within it (carriage-return redraws, glued bars), 0 for the first
	Kind   sglang.Kind
	Reason string
	Text   string // the line (redacted), shortened to 120 bytes
}

func (i LineIssue) String() string {
	at := strconv.Itoa(i.Line)
	if i.Seg > 0 {
		at += "." + strconv.Itoa(i.Seg)
	}
	return fmt.Sprintf("line %s: %s: %s", at, i.Reason, i.Text)
}

// ProbePattern is one client's repeated request to one route, read from access lines: a
// readiness loop, a health checker, a load balancer.
type ProbePattern struct {
	Client   string // the client's address without its port (redacted)
	Method   string
	Route    string
	Count    int
	Interval time.Duration // median gap between consecutive requests (0 for one request)
	Statuses string        // e.g. "503×3 200×12", in order of first appearance
	First    time.Duration // offset of the first request
}

func (p ProbePattern) String() string {
	every := "once"
	if p.Count > 1 {
		every = fmt.Sprintf("x%d every %s", p.Count, p.Interval)
	}
	return fmt.Sprintf("%s %s %s %s from %s (%s)", p.Client, p.Method, p.Route, every, p.First, p.Statuses)
}

// PhaseSpan is one startup phase of a log: from the first line that opens it to the first
// line of the next phase (or the log's last line).
type PhaseSpan struct {
	Name       string
	Start, End time.Duration
}

// D is the phase's length.
func (p PhaseSpan) D() time.Duration { return p.End - p.Start }
