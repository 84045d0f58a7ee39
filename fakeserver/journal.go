package fakeserver

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/incident-replay/incident-replay/truth"
)

// Record types in the journal.
const (
	RecState   = "state"   // a server state change (see the State* constants)
	RecLog     = "log"     // one log line as printed
	RecRequest = "request" // one HTTP request and its response
)

// States a RecState record carries.
const (
	StateBound           = "bound"            // the HTTP port is bound (status Starting in era B/C)
	StateReady           = "ready"            // warmup done: status Up, health would pass
	StateUnhealthy       = "unhealthy"        // a health check timed out (status UnHealthy)
	StateHealthy         = "healthy"          // a health check passed again after UnHealthy
	StateWedged          = "wedged"           // the whole server stopped answering
	StateUnwedged        = "unwedged"         // a bounded wedge ended
	StateSchedulerWedged = "scheduler_wedged" // generation hangs, HTTP answers
	StateSchedulerResume = "scheduler_resumed"
	StateSchedulerDead   = "scheduler_dead" // the scheduler process died, HTTP still up
	StateDead            = "dead"           // the process exited (Code)
	StateBindFailed      = "bind_failed"    // the port was taken (Errno 98)
	StateStopped         = "stopped"        // ended from outside (Stop), not by the scenario
	StateSigterm         = "sigterm"        // SIGTERM was delivered (Terminate)
	StateDrained         = "drained"        // the SIGTERM drain found no request left; the kill follows
)

// Record is one journal line. Every field but Wall is a pure function of the scenario, the
// seed and the requests clients sent, so two runs of the same scenario compare equal once
// Wall is cleared.
type Record struct {
	Seq  int           `json:"seq"`
	At   time.Duration `json:"at_ns"` // scenario offset from Timeline.Start
	Type string        `json:"type"`

	State string `json:"state,omitempty"`
	Code  *int   `json:"code,omitempty"` // exit code for StateDead

	Stream string `json:"stream,omitempty"` // log: stdout or stderr
	Kind   string `json:"kind,omitempty"`   // log: the sglang line kind
	Line   string `json:"line,omitempty"`   // log: the exact text printed

	Method   string        `json:"method,omitempty"`
	Route    string        `json:"route,omitempty"`
	Status   int           `json:"status,omitempty"`
	Latency  time.Duration `json:"latency_ns,omitempty"` // scenario time from request to response start
	Client   string        `json:"client,omitempty"`
	Internal bool          `json:"internal,omitempty"` // the server's own warmup requests
	Fault    string        `json:"fault,omitempty"`    // the fault kind that shaped this response
	Outcome  string        `json:"outcome,omitempty"`  // request: "" (answered), "reset", "abandoned"

	Wall time.Time `json:"wall"` // wall-clock time; ignored by determinism checks
}

// journal serialises records to a writer, one JSON object per line, in exactly the bytes
// json.Encoder would write (appendRecord; TestAppendRecordMatchesEncodingJSON holds it to
// that). Every request and every log line passes through here, so the reflection-based
// encoder was a measurable share of a request's cost.
type journal struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
	seq int
	err error
}

func newJournal(w io.Writer) *journal {
	if w == nil {
		w = io.Discard
	}
	return &journal{w: w}
}

func (j *journal) add(r Record) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	r.Seq = j.seq
	r.Wall = time.Now().UTC()
	j.buf = appendRecord(j.buf[:0], &r)
	// One Write per record, so a journal file read back mid-run ends on a whole line.
	if _, err := j.w.Write(j.buf); err != nil && j.err == nil {
		j.err = err
	}
}

// appendRecord appends r as json.Encoder.Encode writes it: fields in declaration order,
// omitempty honoured, HTML-escaped strings, a trailing newline.
func appendRecord(b []byte, r *Record) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendInt(b, int64(r.Seq), 10)
	b = append(b, `,"at_ns":`...)
	b = strconv.AppendInt(b, int64(r.At), 10)
	b = appendField(b, "type", r.Type, false)
	b = appendField(b, "state", r.State, true)
	if r.Code != nil {
		b = append(b, `,"code":`...)
		b = strconv.AppendInt(b, int64(*r.Code), 10)
	}
	b = appendField(b, "stream", r.Stream, true)
	b = appendField(b, "kind", r.Kind, true)
	b = appendField(b, "line", r.Line, true)
	b = appendField(b, "method", r.Method, true)
	b = appendField(b, "route", r.Route, true)
	if r.Status != 0 {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.Status), 10)
	}
	if r.Latency != 0 {
		b = append(b, `,"latency_ns":`...)
		b = strconv.AppendInt(b, int64(r.Latency), 10)
	}
	b = appendField(b, "client", r.Client, true)
	if r.Internal {
		b = append(b, `,"internal":true`...)
	}
	b = appendField(b, "fault", r.Fault, true)
	b = appendField(b, "outcome", r.Outcome, true)
	b = append(b, `,"wall":"`...)
	b = r.Wall.AppendFormat(b, time.RFC3339Nano) // time.Time.MarshalJSON's format
	return append(b, "\"}\n"...)
}

func appendField(b []byte, name, v string, omitEmpty bool) []byte {
	if omitEmpty && v == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json does with HTML escaping on: <, >, & and
// control bytes as \u00XX (\b \f \n \r \t short), invalid UTF-8 as \ufffd, U+2028/2029
// escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// ReadJournal parses a journal written by the server. It fails on the first malformed line,
// naming it, so a truncated or foreign file is never half-read silently.
func ReadJournal(r io.Reader) ([]Record, error) {
	var out []Record
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return out, fmt.Errorf("fakeserver: journal line %d is not a record (%v); is this a fakesglang --journal file?", n, err)
		}
		if rec.Type != RecState && rec.Type != RecLog && rec.Type != RecRequest {
			return out, fmt.Errorf("fakeserver: journal line %d has unknown type %q", n, rec.Type)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("fakeserver: reading journal: %w", err)
	}
	return out, nil
}

// GroundTruth reduces a journal to the facts verdicts need. A wedge that never ended is a
// death as a tool sees it (truth.Truth.Wedge).
func GroundTruth(recs []Record) truth.Truth {
	var t truth.Truth
	wedgedAt := map[string]time.Duration{}
	for _, r := range recs {
		if r.Type != RecState {
			continue
		}
		switch r.State {
		case StateBound:
			t.Bind(r.At)
		case StateReady:
			t.BecomeReady(r.At)
		case StateWedged, StateSchedulerWedged, StateSchedulerDead:
			if _, ok := wedgedAt[r.State]; !ok {
				wedgedAt[r.State] = r.At
			}
		case StateUnwedged:
			delete(wedgedAt, StateWedged)
		case StateSchedulerResume:
			delete(wedgedAt, StateSchedulerWedged)
		case StateDead:
			code := 0
			if r.Code != nil {
				code = *r.Code
			}
			t.Exit(r.At, code)
		}
	}
	for _, at := range wedgedAt {
		t.Wedge(at)
	}
	return t
}

// Requests returns the journal's request records, the server's own warmup requests included.
func Requests(recs []Record) []Record {
	var out []Record
	for _, r := range recs {
		if r.Type == RecRequest {
			out = append(out, r)
		}
	}
	return out
}
