package fakeserver

import "bytes"

// LogMemoryBytes is how much of its own output a server keeps in memory for Logs: the last
// LogMemoryBytes bytes, from a line start. A long run keeps its whole log only in the streams
// and Config.LogFile.
const LogMemoryBytes = 1 << 20

// logTail keeps the last limit bytes written to it, cut at a line start. It holds at most
// 2*limit bytes: once over that it drops all but the newest limit, so a write costs O(1)
// amortised.
type logTail struct {
	limit int
	buf   []byte
}

func (t *logTail) Write(b []byte) {
	t.buf = append(t.buf, b...)
	if len(t.buf) <= 2*t.limit {
		return
	}
	cut := len(t.buf) - t.limit
	keep := t.buf[cut:]
	if t.buf[cut-1] != '\n' { // cut mid-line: start at the next line, if one is kept whole
		if i := bytes.IndexByte(keep, '\n'); i >= 0 && i < len(keep)-1 {
			keep = keep[i+1:]
		}
	}
	t.buf = append(t.buf[:0], keep...)
}

// Bytes returns a copy of what is kept.
func (t *logTail) Bytes() []byte { return bytes.Clone(t.buf) }
