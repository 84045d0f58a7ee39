//go:build linux && amd64

package ptrace

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/internal/proc"
	"github.com/incident-replay/incident-replay/vtime"
)

// Idle implements vtime.Participant: the tracee can make no progress until virtual time
// moves when no interrupt is on its way, no registered wait is due, no loopback connect is
// in SYN-SENT (see handshake), every thread sleeps in the kernel, off the CPU, and did not
// run between two reads of its state, and no CPU's backlog holds packets (see backlogged).
// A thread stopped for the tracer is busy: the tracer has work to do for it.
func (t *Tracee) Idle() (bool, time.Time) {
	t.mu.Lock()
	if !t.started || t.helping || (t.exited && !t.recorded) {
		t.mu.Unlock()
		return false, time.Time{}
	}
	for _, n := range t.kicks {
		if n > 0 {
			t.mu.Unlock()
			return false, time.Time{}
		}
	}
	if len(t.shakes) > 0 && t.handshaking() {
		t.mu.Unlock()
		return false, time.Time{}
	}
	var next int64
	for _, w := range t.waits {
		if w.fired || w.deadline <= t.horizon {
			t.mu.Unlock()
			return false, time.Time{}
		}
		if next == 0 || w.deadline < next {
			next = w.deadline
		}
	}
	tids := make([]int, 0, len(t.threads))
	for tid := range t.threads {
		tids = append(tids, tid)
	}
	stops := t.stops
	t.mu.Unlock()

	t.files.mu.Lock()
	defer t.files.mu.Unlock()
	t.files.keep(tids)
	// The driver asks again within milliseconds while the tracee runs, and the thread that
	// ran last time most likely runs still: one read says so.
	if hot := t.files.hot; hot != 0 {
		if st, ok := t.files.state(hot); ok && st != 'S' {
			return false, time.Time{}
		}
		t.files.hot = 0
	}
	first := make([]threadState, len(tids))
	for i, tid := range tids {
		s, ok := t.files.read(tid)
		if !ok && !exists(tid) {
			// Gone without a report to the tracer (a thread of a process that left the
			// trace): nothing of it can run.
			t.mu.Lock()
			if th := t.threads[tid]; th != nil && th.fresh {
				delete(t.threads, tid)
				t.forget(tid)
			}
			t.mu.Unlock()
			return false, time.Time{} // ask again without it
		}
		if !ok || s.state != 'S' {
			if ok {
				t.files.hot = tid
			}
			return false, time.Time{}
		}
		first[i] = s
	}
	for i, tid := range tids {
		if !t.files.offCPU(tid) {
			return false, time.Time{}
		}
		if s, ok := t.files.read(tid); !ok || s != first[i] {
			return false, time.Time{}
		}
	}
	t.mu.Lock()
	moved := t.stops != stops
	t.mu.Unlock()
	if moved || backlogged() {
		return false, time.Time{}
	}
	if next == 0 {
		return true, time.Time{}
	}
	return true, time.Unix(0, next)
}

// backlogged is vtime.Backlogged; tests replace it. A Go program's connect or write to a
// loopback peer returns before the kernel has delivered it when a loaded host defers that
// work to ksoftirqd; its threads then sleep in epoll, and the handshake, the refusal (RST) or
// the request waits in a CPU's backlog where no one sees it, and a dial's timeout can fire
// first. The tracer stops at loopback connects (see handshake) but not at writes, so the
// tracee is busy while any backlog holds packets.
var backlogged = vtime.Backlogged

// Stage implements vtime.Staged: the tracee's processes hand requests, output and launched
// servers to the clock's other participants.
func (t *Tracee) Stage() int { return vtime.StageProcesses }

// exists reports whether thread tid is still there (a zombie included).
func exists(tid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(tid))
	return err == nil
}

type threadState struct {
	state         byte
	runtime, runs uint64
}

// threadFiles keeps each thread's /proc files open between reads: the driver asks every few
// milliseconds, and a pread of an open file spares the path lookup, open and close of each
// read. A kept file fails with ESRCH once its thread is gone, even if the id was handed out
// again.
type threadFiles struct {
	mu     sync.Mutex
	hot    int // the thread Idle last found off its sleep: looked at first
	open   map[int]*procFiles
	buf    [512]byte
	closed bool
}

type procFiles struct{ stat, sched, sys int }

// files returns tid's open files, opening them on first use; nil when the thread is gone.
func (f *threadFiles) files(tid int) *procFiles {
	if p := f.open[tid]; p != nil {
		return p
	}
	if f.closed {
		return nil
	}
	dir := "/proc/" + strconv.Itoa(tid) + "/"
	var fds [3]int
	for i, name := range []string{"stat", "schedstat", "syscall"} {
		fd, err := syscall.Open(dir+name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			for _, o := range fds[:i] {
				syscall.Close(o)
			}
			return nil
		}
		fds[i] = fd
	}
	if f.open == nil {
		f.open = map[int]*procFiles{}
	}
	p := &procFiles{fds[0], fds[1], fds[2]}
	f.open[tid] = p
	return p
}

// pread reads one of tid's files into f.buf; on failure the thread's files are closed.
func (f *threadFiles) pread(tid int, which func(*procFiles) int) ([]byte, bool) {
	p := f.files(tid)
	if p == nil {
		return nil, false
	}
	n, err := syscall.Pread(which(p), f.buf[:], 0)
	if err != nil || n <= 0 {
		f.drop(tid)
		return nil, false
	}
	return f.buf[:n], true
}

func (f *threadFiles) drop(tid int) {
	if f.hot == tid {
		f.hot = 0
	}
	if p := f.open[tid]; p != nil {
		syscall.Close(p.stat)
		syscall.Close(p.sched)
		syscall.Close(p.sys)
		delete(f.open, tid)
	}
}

// keep closes the files of threads not in tids.
func (f *threadFiles) keep(tids []int) {
	for tid := range f.open {
		if !slices.Contains(tids, tid) {
			f.drop(tid)
		}
	}
}

// close closes every file; later reads fail.
func (f *threadFiles) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tid := range f.open {
		f.drop(tid)
	}
	f.closed = true
}

// state reads a thread's state (/proc/TID/stat).
func (f *threadFiles) state(tid int) (byte, bool) {
	b, ok := f.pread(tid, func(p *procFiles) int { return p.stat })
	if !ok {
		return 0, false
	}
	st := proc.Fields(b).State()
	return st, st != 0
}

// read reads a thread's state (/proc/TID/stat) and its run time and run count
// (/proc/TID/schedstat).
func (f *threadFiles) read(tid int) (threadState, bool) {
	st, ok := f.state(tid)
	if !ok {
		return threadState{}, false
	}
	s := threadState{state: st}
	b, ok := f.pread(tid, func(p *procFiles) int { return p.sched })
	if !ok {
		return threadState{}, false
	}
	fs := bytes.Fields(b)
	if len(fs) < 3 {
		return threadState{}, false
	}
	s.runtime, _ = strconv.ParseUint(string(fs[0]), 10, 64)
	s.runs, _ = strconv.ParseUint(string(fs[2]), 10, 64)
	return s, true
}

// offCPU reports whether a thread read as asleep has left the CPU: a thread shows S as soon
// as it means to sleep and runs on until it is switched out; reading /proc/TID/syscall waits
// for the switch, and says "running" when the thread woke instead.
func (f *threadFiles) offCPU(tid int) bool {
	b, ok := f.pread(tid, func(p *procFiles) int { return p.sys })
	return ok && !bytes.HasPrefix(b, []byte("running"))
}
