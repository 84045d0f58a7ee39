//go:build linux && amd64

package ptrace

import (
	"os"
	"runtime"
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
// ENOSYS: a released process (Options.Release) therefore stays traced, every stop of it
// resumed at once.

// seccompHelper marks the helper process: its value is the program to exec (argv follows in
// the helper's own arguments).
const seccompHelper = "VTIME_PTRACE_SECCOMP_EXEC"

// timeCalls are the system calls the tracer acts on (see enter).
var timeCalls = []uint32{
	sysClockGettime, syscall.SYS_GETTIMEOFDAY, syscall.SYS_TIME,
	syscall.SYS_NANOSLEEP, syscall.SYS_CLOCK_NANOSLEEP, sysFutex,
	syscall.SYS_EPOLL_WAIT, syscall.SYS_EPOLL_PWAIT, sysEpollPwait2,
	syscall.SYS_POLL, syscall.SYS_PPOLL, syscall.SYS_SELECT, syscall.SYS_PSELECT6,
}

const (
	auditArchX86_64      = 0xc000003e
	seccompRetAllow      = 0x7fff0000
	seccompRetTrace      = 0x7ff00000
	seccompSetModeFilter = 1
	sysSeccomp           = 317
	prSetNoNewPrivs      = 38
	ptraceOTraceSeccomp  = 0x80
	ptraceEventSeccomp   = 7
)

// seccompFilter assembles the filter: the calls of timeCalls (x86-64 only) trace, the rest pass.
func seccompFilter() ([]bpf.RawInstruction, error) {
	n := uint8(len(timeCalls))
	prog := []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4}, // seccomp_data.arch
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArchX86_64, SkipFalse: n + 1},
		bpf.LoadAbsolute{Off: 0, Size: 4}, // seccomp_data.nr
	}
	for i, nr := range timeCalls {
		// Jump to the RetConstant{trace} after the allow below.
		prog = append(prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: nr, SkipTrue: n - uint8(i)})
	}
	prog = append(prog, bpf.RetConstant{Val: seccompRetAllow}, bpf.RetConstant{Val: seccompRetTrace})
	return bpf.Assemble(prog)
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
