// Package ptrace puts a process tree on a virtual clock from outside, for programs that an
// LD_PRELOAD library cannot reach: Go binaries (they read the time through the vDSO and
// sleep in raw system calls) and static binaries.
//
// The tracer starts the program under ptrace and, at every exec, writes over the new image's
// vDSO clock_gettime a block of code that answers clock_gettime, gettimeofday and time from
// data words the tracer keeps at the virtual time (through /proc/PID/mem, at each jump), and
// points the vDSO's gettimeofday and time there: Go's runtime and glibc read the clock
// through the vDSO, so a read costs no stop. Where the vDSO is not the image the tracer
// knows, it turns AT_SYSINFO_EHDR in the auxiliary vector into AT_IGNORE instead: the
// program then reads the time with system calls, and at their exit the tracer writes the
// virtual time. A timed wait (nanosleep, clock_nanosleep, futex with a timeout,
// epoll_wait, epoll_pwait, epoll_pwait2, poll, ppoll, select, pselect6) is registered with
// its virtual deadline and made unbounded in real time; when the clock reaches the deadline
// the tracer interrupts the thread with SIGURG, makes the call return as if its timeout had
// passed, and drops the signal.
//
// Only those calls stop the tracee: it runs under a seccomp filter that traces them and lets
// every other call through (Options.EveryCall stops at every call instead). A Go launcher's
// process-tree scan, tens of thousands of calls, then costs no stops.
//
// The tracee is a participant of the clock: idle when every thread sleeps in the kernel
// (a registered wait, or a wait for something another participant must do first, such as a
// read from the fake server), none is stopped for the tracer, no interrupt is on its way, and
// no CPU's network backlog holds packets (a dial's handshake may wait there).
//
// Limits: timerfd, socket timeouts (SO_RCVTIMEO) and
// interval timers are not virtualised; a wait interrupted by another signal and restarted
// by the kernel keeps its deadline, one that the program itself retries is registered anew.
package ptrace

import (
	"errors"
	"os"
)

// Options say how to start the tracee.
type Options struct {
	Argv []string // Argv[0] is a path
	Env  []string
	Dir  string
	// Out receives the tracee's stdout and stderr; nil: /dev/null.
	Out *os.File
	// Release names executables whose processes leave the trace when they exec one: they
	// keep time by other means (a fake server that follows the clock over its socket).
	Release []string
	// EveryCall stops the tracee at every system call instead of only at the calls it
	// rewrites (a seccomp filter picks those): slower, for comparison.
	EveryCall bool
}

// ErrUnsupported is returned by Start where the tracer is not built (it needs linux/amd64).
var ErrUnsupported = errors.New("vtime/ptrace: tracing a tool onto virtual time needs linux/amd64; run the tool in real time instead")
