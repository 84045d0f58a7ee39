package vtime

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// StampedReader reads a pipe whose unread bytes hold c (a participant such as Unread says so)
// and stamps each read with the instant its bytes left the pipe. The clock is held across
// the read and the stamp: once the pipe is empty nothing else holds it, and a reader that
// stamped with c.Now() after its read returned could be kept off the CPU until the clock had
// jumped (a tool's ready line stamped at a later instant than it was written).
type StampedReader struct {
	rc  syscall.RawConn
	c   *Clock
	at  time.Time
	eof bool
}

// NewStampedReader reads f (a pipe in non-blocking mode, as os.Pipe makes it) on c.
func NewStampedReader(f *os.File, c *Clock) (*StampedReader, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return &StampedReader{rc: rc, c: c}, nil
}

// Read reads what the pipe holds, waiting (off the clock) until it holds something.
func (s *StampedReader) Read(p []byte) (int, error) {
	if s.eof {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	var (
		n    int
		rerr error
	)
	err := s.rc.Read(func(fd uintptr) bool {
		release := s.c.Hold()
		defer release()
		for {
			n, rerr = syscall.Read(int(fd), p)
			if !errors.Is(rerr, syscall.EINTR) {
				break
			}
		}
		if errors.Is(rerr, syscall.EAGAIN) {
			return false // nothing yet: wait for the poller
		}
		s.at = s.c.Now()
		return true
	})
	if err != nil {
		return 0, err
	}
	if rerr != nil {
		return 0, rerr
	}
	if n <= 0 {
		s.eof = true
		return 0, io.EOF
	}
	return n, nil
}

// At is the instant of the last read that returned bytes.
func (s *StampedReader) At() time.Time { return s.at }
