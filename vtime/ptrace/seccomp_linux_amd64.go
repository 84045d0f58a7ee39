//go:build linux && amd64

package ptrace

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/net/bpf"
)

// A tracee that stops at every system call costs two ptrace round trips per call: a Go
// program scanning /proc makes tens of thousands of calls that have nothing to do with time.
// So the tracee runs under a seccomp filter that returns SECCOMP_RET_TRACE for the calls the
// tracer rewrites (timeCalls) and lets every other call through without a stop. The filter
// must be installed by the tracee itself before it execs the program, so the tracer starts
// its own executable with seccompHelper set: that process installs the filter and execs the
// program (init below), and the tracer follows from the exec on.
//
// A filter cannot be removed, and SECCOMP_RET_TRACE without a tracer fails the call with
// ENOSYS: a released process (Options.Release) therefore stays traced. Where the tracer may
// (CAP_SYS_ADMIN), it suspends the filter for that process and the threads it makes
// (PTRACE_O_SUSPEND_SECCOMP), so only its clones and exit stop; elsewhere every stop of it
// is resumed at once, and a Go server's runtime makes timed waits all the time.

// seccompHelper marks the helper process: its value is the program to exec (argv follows in
// the helper's own arguments).
const seccompHelper = "VTIME_PTRACE_SECCOMP_EXEC"

// timeCalls are the system calls the tracer acts on (see enter), each with the argument
// that says whether this call needs the tracer: a wait without a timeout (a futex wake, an
// untimed futex wait, epoll or poll that blocks or does not wait at all) passes the filter
// without a stop. A Go runtime makes such calls at every handoff between its threads.
var timeCalls = []struct {
	nr   uint32
	when argTest
}{
	{sysClockGettime, always}, {syscall.SYS_GETTIMEOFDAY, always}, {syscall.SYS_TIME, always},
	{syscall.SYS_NANOSLEEP, always}, {syscall.SYS_CLOCK_NANOSLEEP, always},
	{sysFutex, futexTimedWait},
	{syscall.SYS_EPOLL_WAIT, argPositive(2)}, {syscall.SYS_POLL, argPositive(2)},
	{syscall.SYS_EPOLL_PWAIT, argPositive(3)}, {sysEpollPwait2, argNonNull(3)},
	{syscall.SYS_PPOLL, argNonNull(2)}, {syscall.SYS_SELECT, argNonNull(4)}, {syscall.SYS_PSELECT6, argNonNull(4)},
	{syscall.SYS_CONNECT, always}, // not a wait: the tracer watches a loopback handshake (see handshake)
}

// An argTest is a kind of check on a call's arguments: the call traces when it holds.
type argTest struct {
	kind int // testAlways, testPositive (an int timeout > 0), testNonNull (a pointer), testFutex
	arg  uint32
}

const (
	testAlways = iota
	testPositive
	testNonNull
	testFutex
)

var (
	always         = argTest{kind: testAlways}
	futexTimedWait = argTest{kind: testFutex}
)

func argPositive(i uint32) argTest { return argTest{kind: testPositive, arg: i} }
func argNonNull(i uint32) argTest  { return argTest{kind: testNonNull, arg: i} }

// argLow and argHigh are the offsets of argument i's 32-bit halves in seccomp_data
// (nr, arch, instruction_pointer, then args[6], little-endian).
func argLow(i uint32) uint32  { return 16 + 8*i }
func argHigh(i uint32) uint32 { return 20 + 8*i }

const (
	auditArchX86_64       = 0xc000003e
	seccompRetAllow       = 0x7fff0000
	seccompRetTrace       = 0x7ff00000
	seccompSetModeFilter  = 1
	sysSeccomp            = 317
	prSetNoNewPrivs       = 38
	ptraceOTraceSeccomp   = 0x80
	ptraceOSuspendSeccomp = 0x200000
	ptraceEventSeccomp    = 7
)

// seccompFilter assembles the filter: on x86-64, the calls of timeCalls whose arguments need
// the tracer trace; every other call passes.
func seccompFilter() ([]bpf.RawInstruction, error) {
	var a asm
	a.add(bpf.LoadAbsolute{Off: 4, Size: 4}) // seccomp_data.arch
	a.jump(bpf.JumpNotEqual, auditArchX86_64, "allow", "")
	a.add(bpf.LoadAbsolute{Off: 0, Size: 4}) // seccomp_data.nr
	for i, c := range timeCalls {
		a.jump(bpf.JumpEqual, c.nr, "call"+strconv.Itoa(i), "")
	}
	a.add(bpf.RetConstant{Val: seccompRetAllow})
	for i, c := range timeCalls {
		a.label("call" + strconv.Itoa(i))
		switch c.when.kind {
		case testAlways:
			a.add(bpf.RetConstant{Val: seccompRetTrace})
		case testPositive: // an int: > 0 as a signed 32-bit value
			a.add(bpf.LoadAbsolute{Off: argLow(c.when.arg), Size: 4})
			a.jump(bpf.JumpEqual, 0, "allow", "")
			a.jump(bpf.JumpBitsSet, 0x80000000, "allow", "trace")
		case testNonNull:
			a.add(bpf.LoadAbsolute{Off: argLow(c.when.arg), Size: 4})
			a.jump(bpf.JumpNotEqual, 0, "trace", "")
			a.add(bpf.LoadAbsolute{Off: argHigh(c.when.arg), Size: 4})
			a.jump(bpf.JumpNotEqual, 0, "trace", "allow")
		case testFutex: // FUTEX_WAIT or FUTEX_WAIT_BITSET with a timeout (args[3])
			a.add(bpf.LoadAbsolute{Off: argLow(1), Size: 4})
			a.add(bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: futexCmdMask})
			a.jump(bpf.JumpEqual, futexWait, "futexTimeout", "")
			a.jump(bpf.JumpEqual, futexWaitBitset, "futexTimeout", "allow")
		}
	}
	a.label("futexTimeout")
	a.add(bpf.LoadAbsolute{Off: argLow(3), Size: 4})
	a.jump(bpf.JumpNotEqual, 0, "trace", "")
	a.add(bpf.LoadAbsolute{Off: argHigh(3), Size: 4})
	a.jump(bpf.JumpNotEqual, 0, "trace", "allow")
	a.label("allow") // BPF jumps only forward: the two endings come last
	a.add(bpf.RetConstant{Val: seccompRetAllow})
	a.label("trace")
	a.add(bpf.RetConstant{Val: seccompRetTrace})
	prog, err := a.resolve()
	if err != nil {
		return nil, err
	}
	return bpf.Assemble(prog)
}

// asm is a BPF program with forward jumps to labels; "" falls through.
type asm struct {
	prog   []bpf.Instruction
	labels map[string]int
	jumps  []pendingJump
}

type pendingJump struct {
	at              int
	cond            bpf.JumpTest
	val             uint32
	onTrue, onFalse string
}

func (a *asm) add(in bpf.Instruction) { a.prog = append(a.prog, in) }

func (a *asm) label(name string) {
	if a.labels == nil {
		a.labels = map[string]int{}
	}
	a.labels[name] = len(a.prog)
}

func (a *asm) jump(cond bpf.JumpTest, val uint32, onTrue, onFalse string) {
	a.jumps = append(a.jumps, pendingJump{at: len(a.prog), cond: cond, val: val, onTrue: onTrue, onFalse: onFalse})
	a.prog = append(a.prog, nil)
}

func (a *asm) resolve() ([]bpf.Instruction, error) {
	skip := func(from int, label string) (uint8, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := a.labels[label]
		if !ok || to <= from || to-from-1 > 255 {
			return 0, fmt.Errorf("seccomp filter: no forward jump from %d to %q", from, label)
		}
		return uint8(to - from - 1), nil
	}
	for _, j := range a.jumps {
		t, err := skip(j.at, j.onTrue)
		if err != nil {
			return nil, err
		}
		f, err := skip(j.at, j.onFalse)
		if err != nil {
			return nil, err
		}
		a.prog[j.at] = bpf.JumpIf{Cond: j.cond, Val: j.val, SkipTrue: t, SkipFalse: f}
	}
	return a.prog, nil
}

// helperArgv is how the tracer starts argv under the filter, or nil when it cannot (no
// executable of its own to run): then every call stops.
func helperArgv(argv, env []string) ([]string, []string) {
	self, err := os.Executable()
	if err != nil {
		return nil, nil
	}
	return append([]string{self}, argv...), append(env[:len(env):len(env)], seccompHelper+"="+argv[0])
}

func init() {
	prog := os.Getenv(seccompHelper)
	if prog == "" || len(os.Args) < 2 {
		return
	}
	// The filter is the calling thread's and goes with it through exec.
	runtime.LockOSThread()
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, seccompHelper+"=") {
			env = append(env, kv)
		}
	}
	if err := installFilter(); err != nil {
		os.Stderr.WriteString("vtime/ptrace: install the seccomp filter: " + err.Error() + "\n")
		os.Exit(126)
	}
	err := syscall.Exec(prog, os.Args[1:], env)
	os.Stderr.WriteString("vtime/ptrace: exec " + prog + ": " + err.Error() + "\n")
	os.Exit(127)
}

func installFilter() error {
	raw, err := seccompFilter()
	if err != nil {
		return err
	}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0, 0, 0, 0); e != 0 {
		return e
	}
	fprog := struct {
		len    uint16
		filter *bpf.RawInstruction
	}{uint16(len(raw)), &raw[0]}
	if _, _, e := syscall.RawSyscall(sysSeccomp, seccompSetModeFilter, 0, uintptr(unsafe.Pointer(&fprog))); e != 0 {
		return e
	}
	return nil
}
