//go:build linux && amd64

package ptrace

import (
	"encoding/binary"
	"syscall"
	"time"
)

// clockKind is how a clock id maps onto virtual time.
type clockKind uint8

const (
	clockNone clockKind = iota // CPU-time clocks and unknown ids: left alone
	clockReal
	clockMono
	clockTai
)

func kindOf(id uint64) clockKind {
	switch int32(id) {
	case 0, 5, 8: // CLOCK_REALTIME, _COARSE, _ALARM
		return clockReal
	case 1, 4, 6, 7, 9: // CLOCK_MONOTONIC, _RAW, _COARSE, CLOCK_BOOTTIME, _ALARM
		return clockMono
	case clockTAI:
		return clockTai
	}
	return clockNone
}

// virtual reads a clock of kind k in virtual time; c.mu must be held.
func (t *Tracee) virtual(k clockKind) int64 {
	switch k {
	case clockMono:
		return t.pub + t.monoOff
	case clockTai:
		return t.pub + t.taiOff
	}
	return t.pub
}

const (
	sysFutex        = 202
	futexWait       = 0
	futexWaitBitset = 9
	futexCmdMask    = 0x7f
	futexRealtime   = 256
	timerAbstime    = 1

	eintr           = 4
	etimedout       = 110
	erestartsys     = 512
	erestartnointr  = 513
	erestartnohand  = 514
	erestartblock   = 516
	sysEpollPwait2  = 441
	sysClockGettime = 228
)

// runtimeSpin is the longest nanosleep(2) of the Go runtime's own: sysmon sleeps 20 µs to
// 10 ms between its checks, and lock back-off sleeps microseconds. Go's time.Sleep and timers
// wait in futex or epoll, never in nanosleep, so in a Go binary such a sleep is no wait of the
// program's: it runs in real time and does not move the clock (a clock moved by each of
// sysmon's naps would jump dozens of times per second of an idle tool).
const runtimeSpin = 10 * time.Millisecond

// syscallStop handles a syscall-enter or syscall-exit stop; t.mu is held.
func (t *Tracee) syscallStop(th *thread) {
	var regs syscall.PtraceRegs
	if syscall.PtraceGetRegs(th.tid, &regs) != nil {
		return
	}
	if !th.in {
		th.in = true
		t.enter(th, &regs)
		return
	}
	th.in = false
	t.exit(th, &regs)
}

// seccompStop handles the filter's stop at the entry of a call it traces: the call is
// entered as at a syscall-enter stop, and its exit stops only when the tracer has work there.
func (t *Tracee) seccompStop(th *thread) {
	var regs syscall.PtraceRegs
	if syscall.PtraceGetRegs(th.tid, &regs) != nil {
		return
	}
	t.enter(th, &regs)
	if th.fix != clockNone && t.answerTime(th, &regs) {
		th.fix = clockNone
	}
	th.in = th.fix != clockNone || th.w != nil || th.shake != nil
}

// answerTime answers a time read at its entry, so that it costs one stop instead of two: it
// writes the virtual time where the call would put the real one and skips the call (a
// syscall number of -1 at a seccomp stop), whose result is then what the tracer puts in rax.
// A call it cannot answer this way (a NULL or unwritable buffer, a timezone asked for) runs
// and is fixed at its exit as before.
func (t *Tracee) answerTime(th *thread, r *syscall.PtraceRegs) bool {
	if th.nr == syscall.SYS_GETTIMEOFDAY && r.Rsi != 0 {
		return false // a timezone too: the kernel fills it
	}
	addr, b, n, ret, ok := timeResult(th.nr, t.virtual(th.fix), r)
	if !ok {
		return false
	}
	if n > 0 {
		if _, err := syscall.PtracePokeData(th.tid, addr, b[:n]); err != nil {
			return false
		}
	}
	skip := *r
	skip.Orig_rax, skip.Rax = ^uint64(0), ret
	return syscall.PtraceSetRegs(th.tid, &skip) == nil
}

// timeResult is what the time read nr with arguments r gives at virtual time now (ns): the
// n bytes of b it stores at addr (none where it stores nothing) and its return value. ok is
// false for a call it does not cover or a NULL buffer the call needs. It runs at every time
// read that stops, so b is an array, not an allocation.
func timeResult(nr uint64, now int64, r *syscall.PtraceRegs) (addr uintptr, b [16]byte, n int, ret uint64, ok bool) {
	switch nr {
	case sysClockGettime:
		if r.Rsi == 0 {
			return 0, b, 0, 0, false
		}
		binary.LittleEndian.PutUint64(b[:8], uint64(now/1e9))
		binary.LittleEndian.PutUint64(b[8:], uint64(now%1e9))
		return uintptr(r.Rsi), b, 16, 0, true
	case syscall.SYS_GETTIMEOFDAY:
		if r.Rdi == 0 {
			return 0, b, 0, 0, false
		}
		binary.LittleEndian.PutUint64(b[:8], uint64(now/1e9))
		binary.LittleEndian.PutUint64(b[8:], uint64(now%1e9/1e3))
		return uintptr(r.Rdi), b, 16, 0, true
	case syscall.SYS_TIME:
		ret = uint64(now / 1e9)
		if r.Rdi != 0 {
			binary.LittleEndian.PutUint64(b[:8], ret)
			n = 8
		}
		return uintptr(r.Rdi), b, n, ret, true
	}
	return 0, b, 0, 0, false
}

// enter looks at a call about to run: a time read is marked for its exit, a timed wait is
// registered with its virtual deadline and made unbounded, a loopback connect is watched
// until its handshake is done (see handshake).
func (t *Tracee) enter(th *thread, r *syscall.PtraceRegs) {
	nr := r.Orig_rax
	th.nr, th.fix, th.w, th.shake = nr, clockNone, nil, nil
	restart := th.restart
	th.restart.nr = 0
	deadline := func(rel int64) int64 {
		if restart.nr == nr {
			return restart.deadline // the same wait, restarted after another signal
		}
		return t.pub + rel
	}
	switch nr {
	case sysClockGettime:
		th.fix = kindOf(r.Rdi)
	case syscall.SYS_CONNECT:
		if loopbackAddr(th.tid, r.Rsi, r.Rdx) {
			th.shake = &handshake{pid: th.proc, fd: int(int32(r.Rdi)), since: time.Now()}
			t.shakes = append(t.shakes, th.shake)
		}
	case syscall.SYS_GETTIMEOFDAY, syscall.SYS_TIME:
		th.fix = clockReal
	case syscall.SYS_NANOSLEEP:
		if d, ok := t.timespec(th.tid, r.Rdi); ok && d > 0 && !(th.goRuntime && d <= int64(runtimeSpin)) {
			t.block(th, r, deadline(d), 0)
		}
	case syscall.SYS_CLOCK_NANOSLEEP:
		k := kindOf(r.Rdi)
		d, ok := t.timespec(th.tid, r.Rdx)
		switch {
		case k == clockNone || !ok:
		case r.Rsi&timerAbstime != 0:
			t.block(th, r, d-(t.virtual(k)-t.pub), 0)
		case d > 0:
			t.block(th, r, deadline(d), 0)
		}
	case sysFutex:
		cmd := r.Rsi & futexCmdMask
		if (cmd != futexWait && cmd != futexWaitBitset) || r.R10 == 0 {
			return
		}
		d, ok := t.timespec(th.tid, r.R10)
		if !ok {
			return
		}
		if cmd == futexWaitBitset { // absolute
			k := clockMono
			if r.Rsi&futexRealtime != 0 {
				k = clockReal
			}
			t.block(th, r, d-(t.virtual(k)-t.pub), -etimedout)
			return
		}
		t.block(th, r, deadline(d), -etimedout)
	case syscall.SYS_EPOLL_WAIT, syscall.SYS_POLL:
		if ms := int32(r.Rdx); ms > 0 {
			t.block(th, r, deadline(int64(ms)*1e6), 0)
		}
	case syscall.SYS_EPOLL_PWAIT:
		if ms := int32(r.R10); ms > 0 {
			t.block(th, r, deadline(int64(ms)*1e6), 0)
		}
	case sysEpollPwait2, syscall.SYS_PPOLL:
		ptr := r.R10
		if nr == syscall.SYS_PPOLL {
			ptr = r.Rdx
		}
		if d, ok := t.timespec(th.tid, ptr); ok {
			t.block(th, r, deadline(d), 0)
		}
	case syscall.SYS_SELECT:
		if d, ok := t.timeval(th.tid, r.R8); ok {
			t.block(th, r, deadline(d), 0)
		}
	case syscall.SYS_PSELECT6:
		if d, ok := t.timespec(th.tid, r.R8); ok {
			t.block(th, r, deadline(d), 0)
		}
	}
}

// block registers the call's wait and makes it unbounded in real time: a sleep becomes
// ppoll(NULL, 0, NULL, NULL), which only a signal ends; a futex, epoll, poll or select wait
// loses its timeout and keeps what it waits for. A deadline already past is fired at once.
func (t *Tracee) block(th *thread, r *syscall.PtraceRegs, deadline, result int64) {
	th.saved = *r
	m := *r
	switch r.Orig_rax {
	case syscall.SYS_NANOSLEEP, syscall.SYS_CLOCK_NANOSLEEP:
		m.Orig_rax = syscall.SYS_PPOLL
		m.Rdi, m.Rsi, m.Rdx, m.R10, m.R8 = 0, 0, 0, 0, 0
	case sysFutex, sysEpollPwait2:
		m.R10 = 0
	case syscall.SYS_EPOLL_PWAIT:
		m.R10 = uint64(0xffffffffffffffff) // -1
	case syscall.SYS_EPOLL_WAIT, syscall.SYS_POLL:
		m.Rdx = uint64(0xffffffffffffffff)
	case syscall.SYS_PPOLL:
		m.Rdx = 0
	case syscall.SYS_SELECT, syscall.SYS_PSELECT6:
		m.R8 = 0
	}
	if syscall.PtraceSetRegs(th.tid, &m) != nil {
		return
	}
	w := &wait{tid: th.tid, deadline: deadline, result: result}
	th.w = w
	t.waits[th.tid] = w
	if deadline <= t.horizon {
		t.fire(w)
	}
}

// exit finishes a call: a time read gets the virtual time, a registered wait gets its
// registers back and, when its deadline ended it, the result of a timeout.
func (t *Tracee) exit(th *thread, r *syscall.PtraceRegs) {
	ret := int64(r.Rax)
	if th.shake != nil {
		th.shake.returned = true
		th.shake = nil
	}
	if th.fix != clockNone && ret >= 0 {
		t.writeTime(th, r)
	}
	w := th.w
	if w == nil {
		return
	}
	th.w = nil
	if t.waits[th.tid] == w {
		delete(t.waits, th.tid)
	}
	interrupted := ret == -eintr || ret == -erestartsys || ret == -erestartnointr || ret == -erestartnohand || ret == -erestartblock
	switch {
	case w.fired && interrupted:
		ret = w.result
	case interrupted && ret != -eintr:
		// Another signal: the kernel restarts the original call (registers restored below),
		// which must keep this deadline.
		th.restart.nr, th.restart.deadline = th.saved.Orig_rax, w.deadline
		if th.saved.Orig_rax == syscall.SYS_NANOSLEEP || th.saved.Orig_rax == syscall.SYS_CLOCK_NANOSLEEP {
			ret = -erestartnohand // a sleep restarts as itself, or says EINTR to a handler
		}
	}
	out := th.saved
	out.Rax = uint64(ret)
	_ = syscall.PtraceSetRegs(th.tid, &out)
}

// writeTime stores the virtual time where the finished time read put the real one.
func (t *Tracee) writeTime(th *thread, r *syscall.PtraceRegs) {
	addr, b, n, ret, ok := timeResult(th.nr, t.virtual(th.fix), r)
	if !ok {
		return
	}
	if n > 0 {
		_, _ = syscall.PtracePokeData(th.tid, addr, b[:n])
	}
	if th.nr == syscall.SYS_TIME {
		r.Rax = ret
		_ = syscall.PtraceSetRegs(th.tid, r)
	}
}

// timespec reads a struct timespec (or a NULL pointer: ok false) as nanoseconds.
func (t *Tracee) timespec(tid int, addr uint64) (int64, bool) {
	if addr == 0 {
		return 0, false
	}
	var b [16]byte
	if _, err := syscall.PtracePeekData(tid, uintptr(addr), b[:]); err != nil {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[:8]))*1e9 + int64(binary.LittleEndian.Uint64(b[8:])), true
}

// timeval reads a struct timeval as nanoseconds.
func (t *Tracee) timeval(tid int, addr uint64) (int64, bool) {
	if addr == 0 {
		return 0, false
	}
	var b [16]byte
	if _, err := syscall.PtracePeekData(tid, uintptr(addr), b[:]); err != nil {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b[:8]))*1e9 + int64(binary.LittleEndian.Uint64(b[8:]))*1e3, true
}
