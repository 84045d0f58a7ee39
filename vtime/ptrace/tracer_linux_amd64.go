//go:build linux && amd64

package ptrace

import (
	"debug/buildinfo"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/incident-replay/incident-replay/internal/proc"
	"github.com/incident-replay/incident-replay/vtime"
)

// Supported reports whether Start can trace on this platform.
const Supported = true

// Tracee is one traced process tree on a virtual clock. It is a vtime.Participant.
type Tracee struct {
	pid     int
	monoOff int64 // virtual CLOCK_MONOTONIC = virtual wall + monoOff (ns)
	taiOff  int64
	detach  func()
	release []string     // Options.Release, resolved
	left    map[int]bool // processes released from the trace
	// seccomp: the tracee runs under the filter, so only the calls the tracer rewrites stop
	// (resumed with PTRACE_CONT, a call's exit with PTRACE_SYSCALL); released processes stay
	// traced and pass through.
	seccomp bool
	// helping: under the filter, the first process is still the helper that installs it
	// (until its exec): its waits are real and invisible, so the tracee counts as busy.
	helping bool

	files threadFiles // the threads' /proc files, for Idle

	clocks map[int]*vclock // processes whose vDSO reads the virtual time, by pid (see vclock)

	mu       sync.Mutex
	pub      int64 // the virtual wall time (ns) the tracee reads: the clock's, shown at each jump
	horizon  int64 // the virtual time up to which its waits have ended (<= pub; see advance)
	started  bool
	threads  map[int]*thread
	waits    map[int]*wait // registered timed waits, by thread
	shakes   []*handshake  // loopback connects that may still be on their way
	kicks    map[int]int   // SIGURGs sent to end a wait and not yet dropped, by thread
	stops    uint64        // ptrace stops handled: Idle's sign that the tracer worked meanwhile
	exited   bool
	recorded bool
	closed   bool
	code     int
	done     chan struct{}
	loopDone chan struct{}
	// ownGone is closed once the first process has exited and no thread of the trace is left
	// but released ones (see Close).
	ownGone     chan struct{}
	ownGoneOnce sync.Once
}

type thread struct {
	tid   int
	proc  int  // its process's id
	fresh bool // created and not yet past its first SIGSTOP
	in    bool // between its syscall-enter and syscall-exit stops
	// goRuntime: the thread runs a Go binary, whose nanosleep(2) calls are the runtime's own
	// spinning (sysmon, lock back-off), never the program's waits (see runtimeSpin).
	goRuntime bool
	nr        uint64
	fix       clockKind  // at the exit: write the virtual time
	w         *wait      // the current call's registered wait
	shake     *handshake // the current call's loopback connect
	saved     syscall.PtraceRegs
	restart   struct { // a registered wait another signal interrupted, for its restart
		nr       uint64
		deadline int64
	}
}

type wait struct {
	tid      int
	deadline int64 // virtual wall time, ns
	result   int64 // what the call returns when the deadline ends it
	fired    bool
}

// Start runs o.Argv traced on clock c, in a new process group led by the tracee (its pgid
// is Pid). The clock waits for the tracee from before its first instruction.
func Start(c *vtime.Clock, o Options) (*Tracee, error) {
	if len(o.Argv) == 0 {
		return nil, errors.New("vtime/ptrace: no command to trace")
	}
	now := c.Now().UnixNano()
	t := &Tracee{pub: now, horizon: now, threads: map[int]*thread{}, waits: map[int]*wait{}, kicks: map[int]int{}, left: map[int]bool{}, clocks: map[int]*vclock{},
		done: make(chan struct{}), loopDone: make(chan struct{}), ownGone: make(chan struct{})}
	for _, p := range o.Release {
		if r, err := filepath.EvalSymlinks(p); err == nil && filepath.IsAbs(r) {
			p = r
		}
		t.release = append(t.release, p)
	}
	t.monoOff = int64(vtime.Uptime) - now
	t.taiOff = realClock(clockTAI) - realClock(0)
	t.detach = c.Attach(t)
	c.OnShow(t.show)
	c.OnAdvance(t.advance)
	ready := make(chan error, 1)
	go t.trace(o, ready)
	if err := <-ready; err != nil {
		t.detach()
		t.mu.Lock()
		t.closed = true
		t.mu.Unlock()
		return nil, err
	}
	return t, nil
}

// Pid is the tracee's process id, and its process group's.
func (t *Tracee) Pid() int { return t.pid }

// Done is closed when the tracee's first process has exited.
func (t *Tracee) Done() <-chan struct{} { return t.done }

// ExitCode is the first process's exit status once Done is closed (128+N for signal N).
func (t *Tracee) ExitCode() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code
}

// Recorded tells the tracee that its exit has been seen: until then an exited tracee keeps
// the clock, so the instant it ended is read before time moves on.
func (t *Tracee) Recorded() {
	t.mu.Lock()
	t.recorded = true
	t.mu.Unlock()
}

// Close kills what is left of the process group, waits for its processes to be gone and
// leaves the clock. Safe to call twice. A released process (a server a launch tool started,
// in a session of its own) may outlive the group: the tracer goes on resuming it until it
// exits, which its owner sees to.
func (t *Tracee) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	t.mu.Unlock()
	_ = syscall.Kill(-t.pid, syscall.SIGKILL)
	select {
	case <-t.loopDone:
	case <-t.ownGone:
	case <-time.After(5 * time.Second): // a member that left the group: EXITKILL ends it with the tracer
	}
	t.detach()
	t.files.close()
	t.mu.Lock()
	for pid := range t.clocks {
		t.dropClock(pid)
	}
	t.mu.Unlock()
}

const (
	traceOptions = syscall.PTRACE_O_TRACESYSGOOD | syscall.PTRACE_O_TRACECLONE | syscall.PTRACE_O_TRACEFORK |
		syscall.PTRACE_O_TRACEVFORK | syscall.PTRACE_O_TRACEEXEC | ptraceOExitKill | ptraceOTraceSeccomp
	ptraceOExitKill = 0x100000
	syscallStop     = syscall.SIGTRAP | 0x80
	clockTAI        = 11
)

// trace is the tracer: every ptrace request must come from the thread that started the
// tracee, so the goroutine keeps its thread to the end (and the thread then exits with it).
func (t *Tracee) trace(o Options, ready chan<- error) {
	defer close(t.loopDone)
	runtime.LockOSThread()
	null, err := os.Open(os.DevNull)
	if err != nil {
		ready <- err
		return
	}
	out := null
	if o.Out != nil {
		out = o.Out
	}
	argv, env := o.Argv, o.Env
	if !o.EveryCall {
		if hargv, henv := helperArgv(o.Argv, o.Env); hargv != nil {
			argv, env, t.seccomp, t.helping = hargv, henv, true, true
		}
	}
	attr := &syscall.ProcAttr{Dir: o.Dir, Env: env, Files: []uintptr{null.Fd(), out.Fd(), out.Fd()},
		Sys: &syscall.SysProcAttr{Ptrace: true, Setpgid: true}}
	pid, err := syscall.ForkExec(argv[0], argv, attr)
	null.Close()
	if err != nil {
		ready <- fmt.Errorf("vtime/ptrace: start %s: %w", o.Argv[0], err)
		return
	}
	t.pid = pid
	var ws syscall.WaitStatus
	if _, err := wait4(pid, &ws); err != nil || !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		ready <- fmt.Errorf("vtime/ptrace: %s did not stop at its exec (%v, status %#x): is ptrace allowed here (kernel.yama.ptrace_scope, a container's seccomp profile)?", o.Argv[0], err, uint32(ws))
		t.reapAll()
		return
	}
	if err := syscall.PtraceSetOptions(pid, traceOptions); err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		ready <- fmt.Errorf("vtime/ptrace: set trace options: %w", err)
		t.reapAll()
		return
	}
	t.mu.Lock() // the clock may show a new time (publish) meanwhile
	err = t.patchVDSO(pid)
	t.mu.Unlock()
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		ready <- err
		t.reapAll()
		return
	}
	t.mu.Lock()
	t.threads[pid] = &thread{tid: pid, proc: pid}
	t.started = true
	t.mu.Unlock()
	ready <- nil
	t.resume(pid, false, 0)
	for {
		// -1, not -pid: a member that moves to its own session or group (a launcher's
		// server) is still a tracee, and WNOTHREAD limits the wait to this thread's tracees.
		tid, err := wait4(-1, &ws)
		if err != nil {
			break // ECHILD: every member is gone
		}
		t.handle(tid, ws)
	}
	t.mu.Lock()
	if !t.exited {
		t.exited, t.code = true, 128+int(syscall.SIGKILL)
		close(t.done)
	}
	t.mu.Unlock()
}

// reapAll collects a failed start's process.
func (t *Tracee) reapAll() {
	var ws syscall.WaitStatus
	for {
		if _, err := wait4(t.pid, &ws); err != nil || ws.Exited() || ws.Signaled() {
			return
		}
	}
}

func wait4(pid int, ws *syscall.WaitStatus) (int, error) {
	for {
		wpid, err := syscall.Wait4(pid, ws, syscall.WALL|syscall.WNOTHREAD, nil)
		if err != syscall.EINTR {
			return wpid, err
		}
	}
}

// handle deals with one wait report and resumes the thread.
func (t *Tracee) handle(tid int, ws syscall.WaitStatus) {
	t.mu.Lock()
	defer t.mu.Unlock()
	// A released process's stops are not the tool's work: it joins the clock by other means
	// (fakesglang's clock link), and its Go runtime stops here many times a second.
	if ws.Exited() || ws.Signaled() {
		if !t.left[tid] {
			t.stops++
		}
		t.gone(tid, ws)
		return
	}
	if !ws.Stopped() {
		return
	}
	sig := ws.StopSignal()
	if t.threads[tid] == nil && !t.left[tid] && t.ofReleased(tid) {
		t.left[tid] = true // its first stop came before its creator's report
	}
	if t.left[tid] { // released, still traced under the filter: on at once
		switch {
		case sig == syscall.SIGTRAP && ws.TrapCause() > 0:
			if c := ws.TrapCause(); c == syscall.PTRACE_EVENT_CLONE || c == syscall.PTRACE_EVENT_FORK || c == syscall.PTRACE_EVENT_VFORK {
				if msg, err := syscall.PtraceGetEventMsg(tid); err == nil {
					n := int(msg)
					t.left[n] = true
					delete(t.threads, n) // its first stop came first and took it for ours
					t.forget(n)
				}
			}
			sig = 0
		case sig == syscallStop, sig == syscall.SIGSTOP:
			sig = 0
		}
		_ = syscall.PtraceCont(tid, int(sig))
		return
	}
	t.stops++
	th := t.threads[tid]
	if th == nil { // its SIGSTOP came before its creator's event
		th = &thread{tid: tid, fresh: true}
		t.threads[tid] = th
	}
	switch {
	case sig == syscallStop:
		t.syscallStop(th)
	case sig == syscall.SIGTRAP && ws.TrapCause() == ptraceEventSeccomp:
		t.seccompStop(th)
	case sig == syscall.SIGTRAP && ws.TrapCause() > 0:
		if t.event(th, ws.TrapCause()) {
			return // released: no longer ours to resume
		}
	case sig == syscall.SIGSTOP && th.fresh:
		th.fresh = false
	case sig == syscall.SIGURG && t.kicks[tid] > 0:
		t.kicks[tid]--
	default:
		t.resume(tid, th.in, int(sig)) // the tracee's own signal
		return
	}
	t.resume(tid, th.in, 0)
}

// resume lets a stopped thread run on: to its next stop for the tracer, which under the
// filter is the exit of the call it is in (in) or the next call the filter traces.
func (t *Tracee) resume(tid int, in bool, sig int) {
	if t.seccomp && !in {
		_ = syscall.PtraceCont(tid, sig)
		return
	}
	_ = syscall.PtraceSyscall(tid, sig)
}

// event handles a ptrace event stop; it reports whether the thread was released from the
// trace (it runs on, detached).
func (t *Tracee) event(th *thread, cause int) bool {
	msg, err := syscall.PtraceGetEventMsg(th.tid)
	if err != nil {
		return false
	}
	switch cause {
	case syscall.PTRACE_EVENT_CLONE, syscall.PTRACE_EVENT_FORK, syscall.PTRACE_EVENT_VFORK:
		n := int(msg)
		if t.left[n] {
			break // it ran, exec'd a released program and left before this report came
		}
		if t.threads[n] == nil {
			t.threads[n] = &thread{tid: n, fresh: true}
		}
		t.threads[n].goRuntime = th.goRuntime // the same program until it execs
		// The new process gets the vDSO block of its creator's memory: a copy to keep
		// up to date (fork), or the same memory (vfork, a thread).
		flags := uint64(0)
		switch cause {
		case syscall.PTRACE_EVENT_VFORK:
			flags = cloneVM
		case syscall.PTRACE_EVENT_CLONE:
			var ok bool
			if flags, ok = cloneFlags(th.tid); !ok {
				flags = cloneVM | cloneThread
			}
		}
		t.threads[n].proc = n
		if flags&cloneThread != 0 {
			t.threads[n].proc = th.proc
		}
		if flags&cloneVM == 0 {
			t.forked(th.proc, n)
		}
	case syscall.PTRACE_EVENT_EXEC:
		// A thread other than the leader that execs takes the leader's id; the others are gone.
		if former := int(msg); former != th.tid {
			if f := t.threads[former]; f != nil {
				delete(t.threads, former)
				t.forget(former)
				f.tid = th.tid
				t.threads[th.tid] = f
				th = f
			}
		}
		th.restart.nr = 0
		th.proc = th.tid
		t.helping = false
		if t.released(th.tid) {
			t.dropClock(th.tid)
			t.left[th.tid] = true
			delete(t.threads, th.tid)
			t.forget(th.tid)
			if t.seccomp {
				// Kept traced, its filter suspended where the tracer may (see seccompHelper).
				_ = syscall.PtraceSetOptions(th.tid, traceOptions|ptraceOSuspendSeccomp)
				_ = syscall.PtraceCont(th.tid, 0)
			} else {
				_ = syscall.PtraceDetach(th.tid)
			}
			return true
		}
		th.goRuntime = isGo(th.tid)
		_ = t.patchVDSO(th.tid)
	}
	return false
}

var (
	goExesMu sync.Mutex
	goExes   = map[string]bool{}
)

// isGo reports whether the process runs a Go binary (it has a Go build-info note), once per
// executable path.
func isGo(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return false
	}
	goExesMu.Lock()
	defer goExesMu.Unlock()
	is, ok := goExes[exe]
	if !ok {
		_, err := buildinfo.ReadFile(exe)
		is = err == nil
		goExes[exe] = is
	}
	return is
}

// ofReleased reports whether a thread the tracer has not heard of belongs to a released
// process, or is a child of one: its first stop can come before its creator's report, and
// it may make calls before that report is read.
func (t *Tracee) ofReleased(tid int) bool {
	if len(t.left) == 0 {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return false
	}
	for _, key := range []string{"Tgid", "PPid"} {
		if n := proc.Atoi(proc.StatusValue(b, key)); n > 0 && n != tid && t.left[n] {
			return true
		}
	}
	return false
}

// released reports whether the process that has just exec'd runs one of Options.Release.
func (t *Tracee) released(pid int) bool {
	if len(t.release) == 0 {
		return false
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && slices.Contains(t.release, exe)
}

// gone forgets a thread that exited.
func (t *Tracee) gone(tid int, ws syscall.WaitStatus) {
	delete(t.threads, tid)
	t.forget(tid)
	t.dropClock(tid)
	defer func() {
		if t.exited && len(t.threads) == 0 {
			t.ownGoneOnce.Do(func() { close(t.ownGone) })
		}
	}()
	if tid != t.pid || t.exited {
		return
	}
	t.exited, t.helping = true, false
	if ws.Signaled() {
		t.code = 128 + int(ws.Signal())
	} else {
		t.code = ws.ExitStatus()
	}
	close(t.done)
}

func (t *Tracee) forget(tid int) {
	delete(t.waits, tid)
	delete(t.kicks, tid)
}

// show follows the clock's jumps: the tracee reads now from here on, also when something
// due at now (the server's answer) wakes it before its own waits due then end.
func (t *Tracee) show(now time.Time) {
	t.mu.Lock()
	t.pub = max(t.pub, now.UnixNano())
	t.publish()
	t.mu.Unlock()
}

// advance ends every wait due by now, once the clock's own timers due then have fired.
func (t *Tracee) advance(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	t.pub = max(t.pub, now.UnixNano())
	t.publish()
	t.horizon = max(t.horizon, now.UnixNano())
	for _, w := range t.waits {
		if !w.fired && w.deadline <= t.horizon {
			t.fire(w)
		}
	}
}

// fire ends w's wait: SIGURG interrupts the call (Go's runtime takes an unexpected SIGURG
// for a preemption request, so even one that arrives late is harmless), and the tracer drops
// the signal before the thread sees it.
func (t *Tracee) fire(w *wait) {
	w.fired = true
	t.kicks[w.tid]++
	_, _, _ = syscall.RawSyscall(syscall.SYS_TKILL, uintptr(w.tid), uintptr(syscall.SIGURG), 0)
}

// hideVDSO turns AT_SYSINFO_EHDR into AT_IGNORE in the auxiliary vector of a process that
// has just exec'd: its stack pointer is at argc, then argv, envp and the auxv pairs.
func hideVDSO(pid int) error {
	var regs syscall.PtraceRegs
	if err := syscall.PtraceGetRegs(pid, &regs); err != nil {
		return fmt.Errorf("vtime/ptrace: read the registers at exec: %w", err)
	}
	p := uintptr(regs.Rsp)
	argc, err := peek(pid, p)
	if err != nil {
		return fmt.Errorf("vtime/ptrace: read the new image's stack: %w", err)
	}
	p += 8 * uintptr(argc+2) // argc, argv[argc], NULL
	for {                    // envp
		v, err := peek(pid, p)
		if err != nil {
			return fmt.Errorf("vtime/ptrace: read the environment pointers: %w", err)
		}
		p += 8
		if v == 0 {
			break
		}
	}
	for i := 0; i < 512; i++ {
		typ, err := peek(pid, p)
		if err != nil {
			return fmt.Errorf("vtime/ptrace: read the auxiliary vector: %w", err)
		}
		switch typ {
		case atNull:
			return nil
		case atSysinfoEhdr:
			if err := poke(pid, p, atIgnore); err != nil {
				return fmt.Errorf("vtime/ptrace: hide the vDSO: %w", err)
			}
		}
		p += 16
	}
	return errors.New("vtime/ptrace: the auxiliary vector has no end")
}

const (
	atNull        = 0
	atIgnore      = 1
	atSysinfoEhdr = 33
)

func peek(pid int, addr uintptr) (uint64, error) {
	var b [8]byte
	if _, err := syscall.PtracePeekData(pid, addr, b[:]); err != nil {
		return 0, err
	}
	return *(*uint64)(unsafe.Pointer(&b[0])), nil
}

func poke(pid int, addr uintptr, v uint64) error {
	b := (*[8]byte)(unsafe.Pointer(&v))
	_, err := syscall.PtracePokeData(pid, addr, b[:])
	return err
}

func realClock(id int) int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(id), uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
