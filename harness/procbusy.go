package harness

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// procWatch answers whether one process has work its clock cannot see yet (see busy). The
// clock's driver asks every few milliseconds while a run is busy, so the process's /proc
// files stay open between looks: a pread spares each read's path lookup, open and close,
// which on a virtualised host cost more than the read (re-opening them took a third of the
// harness's CPU in a row of launch cells). A kept file fails with ESRCH once its thread is
// gone, even if the id was handed out again.
type procWatch struct {
	pid int

	mu      sync.Mutex
	status  int         // /proc/PID/status, -1 until opened
	taskDir int         // /proc/PID/task, -1 until opened
	threads map[int]int // each thread's /proc/PID/task/TID/stat
	hot     int         // the thread seen able to run last time: looked at first
	gone    bool
	buf     []byte
	dirbuf  []byte
	names   []string
	listed  map[int]struct{} // list's answer, reused
}

func newProcWatch(pid int) *procWatch {
	return &procWatch{pid: pid, status: -1, taskDir: -1, threads: map[int]int{},
		buf: make([]byte, 4096), dirbuf: make([]byte, 8192), listed: map[int]struct{}{}}
}

// busy reports whether the process has a signal pending (ShdPnd or SigPnd: it has not run
// its handler yet) or a thread that can run, waits on the disk or is stopped for its tracer
// (a launched server stays a tracee, and a signal on its way stops it there). A launcher's
// SIGTERM to its server was otherwise unseen from the kill until the server's handler ran;
// on a loaded host the clock jumped first, to the launcher's grace timer (llmwait-launch
// claimed 0.3-5 s late in 8 of 20 runs of five such cells beside two CPU hogs). A process
// that is gone, or stopped by a signal (it cannot run), is not busy; a zombie is, until its
// parent can have heard of its exit (see exitUnreported).
func (w *procWatch) busy() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return false
	}
	if w.hot != 0 { // a thread that ran last time most likely runs still: one read says so
		if fd, ok := w.threads[w.hot]; ok {
			if state, ok := w.state(fd); ok && runnable(state) {
				return true
			}
		}
		w.hot = 0
	}
	dir := "/proc/" + strconv.Itoa(w.pid)
	if w.status < 0 {
		fd, err := syscall.Open(dir+"/status", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			if procGone(err) { // else out of files for now, say: the next look tries again
				w.close()
			}
			return false
		}
		w.status = fd
	}
	n, err := syscall.Pread(w.status, w.buf, 0)
	if err != nil || n <= 0 {
		w.close() // a kept file of a process that is gone
		return false
	}
	if signalPending(w.buf[:n]) || exitUnreported(w.buf[:n]) {
		return true
	}
	tids, err := w.list(dir + "/task")
	if err != nil {
		if procGone(err) {
			w.close()
		}
		return false
	}
	for tid, fd := range w.threads {
		if _, ok := tids[tid]; !ok {
			syscall.Close(fd)
			delete(w.threads, tid)
		}
	}
	for tid := range tids {
		fd, ok := w.threads[tid]
		if !ok {
			var err error
			if fd, err = syscall.Open(dir+"/task/"+strconv.Itoa(tid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
				continue // a thread that ended
			}
			w.threads[tid] = fd
		}
		state, ok := w.state(fd)
		if !ok {
			syscall.Close(fd)
			delete(w.threads, tid)
			continue
		}
		if runnable(state) {
			w.hot = tid
			return true
		}
	}
	return false
}

// runnable: anything but asleep (S), stopped by a signal (T), a zombie (Z) or dead (X).
func runnable(state byte) bool {
	switch state {
	case 'S', 'T', 'Z', 'X':
		return false
	}
	return true
}

// state reads a kept stat file's state field.
func (w *procWatch) state(fd int) (byte, bool) {
	n, err := syscall.Pread(fd, w.buf, 0)
	if err != nil || n <= 0 {
		return 0, false
	}
	st := proc.Fields(w.buf[:n]).State()
	return st, st != 0
}

// list reads the thread ids in the kept task directory into w.listed; a directory without
// any is gone.
func (w *procWatch) list(path string) (map[int]struct{}, error) {
	if w.taskDir < 0 {
		fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		w.taskDir = fd
	} else if _, err := syscall.Seek(w.taskDir, 0, 0); err != nil {
		return nil, err
	}
	tids := w.listed
	clear(tids)
	for {
		n, err := syscall.Getdents(w.taskDir, w.dirbuf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			break
		}
		_, _, w.names = syscall.ParseDirent(w.dirbuf[:n], -1, w.names[:0])
		for _, name := range w.names {
			if tid, err := strconv.Atoi(name); err == nil {
				tids[tid] = struct{}{}
			}
		}
	}
	if len(tids) == 0 {
		return nil, syscall.ESRCH
	}
	return tids, nil
}

// procGone reports an error that says the process is gone, not that a look failed for now.
func procGone(err error) bool { return err == syscall.ENOENT || err == syscall.ESRCH }

// close closes every kept file; later looks report the process gone.
func (w *procWatch) close() {
	for tid, fd := range w.threads {
		syscall.Close(fd)
		delete(w.threads, tid)
	}
	for _, fd := range []*int{&w.status, &w.taskDir} {
		if *fd >= 0 {
			syscall.Close(*fd)
			*fd = -1
		}
	}
	w.gone = true
}

// Close releases the kept files.
func (w *procWatch) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.close()
}

// signalPending reports whether a /proc/PID/status text shows a signal pending for the
// process (ShdPnd) or its main thread (SigPnd).
func signalPending(status []byte) bool {
	for _, key := range []string{"ShdPnd", "SigPnd"} {
		if len(bytes.Trim(proc.StatusValue(status, key), "0")) != 0 {
			return true
		}
	}
	return false
}

// exitUnreported reports whether a /proc/PID/status text shows a process that has exited
// while a tracer still holds it. A launched server under a traced tool stays a tracee: its
// exit goes to the tracer first, and its parent's wait returns only once the tracer has
// waited for it. Until then the parent sleeps on and looks idle, and the clock could jump past
// the exit to the parent's next timer when the tracer is slow to wait.
func exitUnreported(status []byte) bool {
	tracer := proc.StatusValue(status, "TracerPid")
	return exited(status) && len(tracer) > 0 && !bytes.Equal(tracer, []byte("0"))
}

// exited reports whether a /proc/PID/status text shows a zombie (or a dead process).
func exited(status []byte) bool {
	st := proc.StatusValue(status, "State")
	return len(st) > 0 && (st[0] == 'Z' || st[0] == 'X')
}

// exitReported reports whether process pid has exited and its parent can have heard of it:
// it is gone, or a zombie no tracer holds.
func exitReported(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	return err != nil || (exited(b) && !exitUnreported(b))
}
