package sglang

import (
	"bufio"
	"bytes"
	"errors"
	"io"
)

// Scanner reads a log stream line by line and parses it. Lines may be of any length (server_args
// lines of 12 kB and more are common); the read buffer is reused between lines.
type Scanner struct {
	r       *bufio.Reader
	p       *Parser
	pending []Line
	cur     Line
	long    []byte
	err     error
	done    bool
}

// NewScanner returns a Scanner reading from r.
func NewScanner(r io.Reader) *Scanner {
	return &Scanner{r: bufio.NewReaderSize(r, 1<<20), p: NewParser()}
}

// Scan advances to the next Line; it returns false at the end of input or on a read error.
func (s *Scanner) Scan() bool {
	for len(s.pending) == 0 {
		if s.done {
			return false
		}
		s.fill()
	}
	s.cur = s.pending[0]
	s.pending = s.pending[1:]
	return true
}

// Line is the Line Scan read.
func (s *Scanner) Line() Line { return s.cur }

// Err is the first read error other than io.EOF.
func (s *Scanner) Err() error { return s.err }

func (s *Scanner) fill() {
	s.long = s.long[:0]
	for {
		b, err := s.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			s.long = append(s.long, b...)
			continue
		}
		if len(s.long) > 0 {
			b = append(s.long, b...)
		}
		switch {
		case err == nil:
			s.pending = s.p.Feed(string(b[:len(b)-1]))
		case len(b) > 0:
			s.pending = s.p.FeedLast(string(b))
			s.finish(err)
		default:
			s.finish(err)
		}
		return
	}
}

func (s *Scanner) finish(err error) {
	s.done = true
	if err != io.EOF {
		s.err = err
	}
}

// Parse reads a whole log. It returns every line (no line is dropped) and the first read
// error, if any, with the lines read before it.
func Parse(r io.Reader) ([]Line, error) {
	sc := NewScanner(r)
	var out []Line
	for sc.Scan() {
		out = append(out, sc.Line())
	}
	return out, sc.Err()
}

// Push takes bytes as they arrive (any chunking) and returns the Lines of every line they
// complete; an unfinished line waits for the next Push. The result is a new slice.
func (p *Parser) Push(b []byte) []Line {
	var out []Line
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			p.partial = append(p.partial, b...)
			break
		}
		var line string
		if len(p.partial) > 0 {
			line = string(append(p.partial, b[:i]...))
			p.partial = p.partial[:0]
		} else {
			line = string(b[:i])
		}
		out = append(out, p.Feed(line)...)
		b = b[i+1:]
	}
	return out
}

// Flush parses the unfinished line Push holds, if any, flagged Truncated (call it at EOF).
func (p *Parser) Flush() []Line {
	if len(p.partial) == 0 {
		return nil
	}
	line := string(p.partial)
	p.partial = p.partial[:0]
	return append([]Line(nil), p.FeedLast(line)...)
}
