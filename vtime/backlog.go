package vtime

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"sync"
)

// Every loopback packet passes through a CPU's backlog queue, which softirq work drains into
// the receiving socket. On a loaded host that work is deferred to ksoftirqd, and a packet can
// wait there for milliseconds after the write that sent it returned, seen by neither end: the
// sender has moved on, the receiver (a curl asleep in poll) looks idle. The queues' length is
// the 12th column of /proc/net/softnet_stat (Linux 5.10 on; older kernels do not say).

// backlogged reports whether a CPU's backlog holds packets; false where that cannot be read.
// Tests replace it.
var backlogged = softnet.backlogged

// Backlogged reports whether a CPU's backlog holds packets (false where that cannot be read):
// a participant whose processes sleep while a packet they sent, or one on its way to them,
// waits there is not idle.
func Backlogged() bool { return backlogged() }

var softnet = &softnetStat{path: "/proc/net/softnet_stat"}

// softnetStat keeps /proc/net/softnet_stat open: a pread at offset 0 renders it afresh.
type softnetStat struct {
	path string

	mu     sync.Mutex
	f      *os.File
	failed bool // it cannot be opened or has no backlog column: never look again
	buf    []byte
}

func (s *softnetStat) backlogged() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return false
	}
	if s.f == nil {
		f, err := os.Open(s.path)
		if err != nil {
			s.failed = true
			return false
		}
		s.f, s.buf = f, make([]byte, 4096)
	}
	for {
		n, err := s.f.ReadAt(s.buf, 0)
		if err != nil && err != io.EOF { // open it afresh next time
			s.f.Close()
			s.f = nil
			return false
		}
		if n == len(s.buf) { // a host with many CPUs: read it whole
			s.buf = make([]byte, 2*len(s.buf))
			continue
		}
		queued, ok := parseBacklog(s.buf[:n])
		if !ok {
			s.failed = true
		}
		return queued > 0
	}
}

// parseBacklog sums the backlog column of /proc/net/softnet_stat's lines (one per CPU). ok is
// false when a line has no such column or it is not hex.
func parseBacklog(b []byte) (queued uint64, ok bool) {
	lines := 0
	for line := range bytes.Lines(b) {
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 13 { // before Linux 5.10: no backlog or CPU columns
			return 0, false
		}
		n, err := strconv.ParseUint(string(f[11]), 16, 32)
		if err != nil {
			return 0, false
		}
		queued += n
		lines++
	}
	return queued, lines > 0
}
