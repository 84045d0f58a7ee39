package fakeserver

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// --- output --------------------------------------------------------------------------------

// output renders lines once and fans them out to the streams, the log file, the in-memory
// tail Logs returns, and the journal.
type output struct {
	mu      sync.Mutex
	streams [2]io.Writer
	file    *os.File
	mem     logTail
	prof    sglang.Profile
	journal *journal
	buf     []byte
}

func newOutput(stdout, stderr io.Writer, logFile string, prof sglang.Profile, j *journal) (*output, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = stdout
	}
	o := &output{streams: [2]io.Writer{stdout, stderr}, mem: logTail{limit: LogMemoryBytes}, prof: prof, journal: j}
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("fakeserver: open --log-file: %w", err)
		}
		o.file = f
	}
	return o, nil
}

// line writes ev to the stream the profile's release prints it on; stream is the caller's
// choice for lines of other libraries.
func (o *output) line(at time.Duration, stream replay.Stream, ev sglang.Event) string {
	stream = replay.StreamFor(o.prof, ev, stream)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(sglang.AppendRender(o.buf[:0], ev, o.prof), '\n')
	w := o.streams[0]
	if stream == replay.Stderr {
		w = o.streams[1]
	}
	_, _ = w.Write(o.buf)
	if o.file != nil {
		_, _ = o.file.Write(o.buf)
	}
	o.mem.Write(o.buf)
	text := string(o.buf[:len(o.buf)-1])
	o.journal.add(Record{At: at, Type: RecLog, Stream: stream.String(), Kind: ev.Kind.String(), Line: text})
	return text
}

func (o *output) snapshot() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mem.Bytes()
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.file != nil {
		_ = o.file.Close()
		o.file = nil
	}
}

func accessEvent(t time.Time, client, method, path string, status int) sglang.Event {
	return sglang.Event{Kind: sglang.KindAccess, Time: t, Fields: accessFields(nil, client, method, path, status)}
}

// accessFields appends an access line's fields to dst (the caller's storage, so the hot
// path allocates nothing here).
func accessFields(dst sglang.Fields, client, method, path string, status int) sglang.Fields {
	return append(dst, sglang.Field{Key: "client", Value: client}, sglang.Field{Key: "method", Value: method},
		sglang.Field{Key: "path", Value: path}, sglang.Field{Key: "proto", Value: "HTTP/1.1"},
		sglang.Field{Key: "status", Value: statusCode(status)}, sglang.Field{Key: "reason", Value: http.StatusText(status)})
}

// statusCodes are the decimal forms of 100..599, so an access line does not format one.
var statusCodes = func() (t [600]string) {
	for i := 100; i < len(t); i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func statusCode(code int) string {
	if code >= 100 && code < len(statusCodes) {
		return statusCodes[code]
	}
	return strconv.Itoa(code)
}

// prefillEvent is the scheduler's Prefill line for one new sequence of tokens.
func (s *Server) prefillEvent(t time.Time, tokens int, cudaGraph bool) sglang.Event {
	ev := sglang.Prefill(s.prof, sglang.PrefillStats{NewSeq: 1, NewToken: tokens, CUDAGraph: cudaGraph})
	ev.Time, ev.Ranks = t, s.schedRanks()
	return ev
}
