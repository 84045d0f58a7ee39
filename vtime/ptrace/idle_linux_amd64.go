//go:build linux && amd64

package ptrace

import (
	"bytes"
	"os"
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
)

// Idle implements vtime.Participant: the tracee can make no progress until virtual time
// moves when no interrupt is on its way, no registered wait is due, and every thread sleeps
// in the kernel, off the CPU, and did not run between two reads of its state. A thread
// stopped for the tracer is busy: the tracer has work to do for it.
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

	first := make([]threadState, len(tids))
	for i, tid := range tids {
		s, ok := readThread(tid)
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
			return false, time.Time{}
		}
		first[i] = s
	}
	for i, tid := range tids {
		if !offCPU(tid) {
			return false, time.Time{}
		}
		if s, ok := readThread(tid); !ok || s != first[i] {
			return false, time.Time{}
		}
	}
	t.mu.Lock()
	moved := t.stops != stops
	t.mu.Unlock()
	if moved {
		return false, time.Time{}
	}
	if next == 0 {
		return true, time.Time{}
	}
	return true, time.Unix(0, next)
}

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

// readThread reads a thread's state (/proc/TID/stat) and its run time and run count
// (/proc/TID/schedstat).
func readThread(tid int) (threadState, bool) {
	dir := "/proc/" + strconv.Itoa(tid) + "/"
	b, err := os.ReadFile(dir + "stat")
	if err != nil {
		return threadState{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return threadState{}, false
	}
	s := threadState{state: b[i+2]}
	b, err = os.ReadFile(dir + "schedstat")
	if err != nil {
		return threadState{}, false
	}
	f := bytes.Fields(b)
	if len(f) < 3 {
		return threadState{}, false
	}
	s.runtime, _ = strconv.ParseUint(string(f[0]), 10, 64)
	s.runs, _ = strconv.ParseUint(string(f[2]), 10, 64)
	return s, true
}

// offCPU reports whether a thread read as asleep has left the CPU: a thread shows S as soon
// as it means to sleep and runs on until it is switched out; reading /proc/TID/syscall waits
// for the switch, and says "running" when the thread woke instead.
func offCPU(tid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/syscall")
	return err == nil && len(b) > 0 && !bytes.HasPrefix(b, []byte("running"))
}
