//go:build linux && amd64

package ptrace

import (
	"encoding/binary"
	"syscall"
	"testing"

	"golang.org/x/net/bpf"
)

// TestSeccompFilter runs the filter on seccomp_data for each kind of call: time reads and
// sleeps always stop for the tracer, waits only with a timeout, everything else never.
func TestSeccompFilter(t *testing.T) {
	raw, err := seccompFilter()
	if err != nil {
		t.Fatal(err)
	}
	insns, ok := bpf.Disassemble(raw)
	if !ok {
		t.Fatal("the filter does not disassemble")
	}
	vm, err := bpf.NewVM(insns)
	if err != nil {
		t.Fatal(err)
	}
	const ptr = 0x7ffc_0000_1000
	cases := []struct {
		name  string
		arch  uint32
		nr    uint32
		args  [6]uint64
		trace bool
	}{
		{"clock_gettime", auditArchX86_64, sysClockGettime, [6]uint64{1, ptr}, true},
		{"gettimeofday", auditArchX86_64, syscall.SYS_GETTIMEOFDAY, [6]uint64{ptr}, true},
		{"nanosleep", auditArchX86_64, syscall.SYS_NANOSLEEP, [6]uint64{ptr}, true},
		{"clock_nanosleep", auditArchX86_64, syscall.SYS_CLOCK_NANOSLEEP, [6]uint64{1, 0, ptr}, true},
		{"futex wait with timeout", auditArchX86_64, sysFutex, [6]uint64{ptr, futexWait | 128, 0, ptr}, true},
		{"futex wait_bitset with timeout", auditArchX86_64, sysFutex, [6]uint64{ptr, futexWaitBitset | 256, 0, ptr}, true},
		{"futex wait, high half of the timeout only", auditArchX86_64, sysFutex, [6]uint64{ptr, futexWait, 0, 1 << 40}, true},
		{"futex wait without timeout", auditArchX86_64, sysFutex, [6]uint64{ptr, futexWait | 128}, false},
		{"futex wake", auditArchX86_64, sysFutex, [6]uint64{ptr, 1 | 128, 1, ptr}, false},
		{"epoll_pwait 10 ms", auditArchX86_64, syscall.SYS_EPOLL_PWAIT, [6]uint64{4, ptr, 128, 10}, true},
		{"epoll_pwait -1", auditArchX86_64, syscall.SYS_EPOLL_PWAIT, [6]uint64{4, ptr, 128, 0xffffffff}, false},
		{"epoll_pwait 0", auditArchX86_64, syscall.SYS_EPOLL_PWAIT, [6]uint64{4, ptr, 128, 0}, false},
		{"epoll_wait 5 ms", auditArchX86_64, syscall.SYS_EPOLL_WAIT, [6]uint64{4, ptr, 5}, true},
		{"poll -1", auditArchX86_64, syscall.SYS_POLL, [6]uint64{ptr, 1, 0xffffffffffffffff}, false},
		{"epoll_pwait2 with timeout", auditArchX86_64, sysEpollPwait2, [6]uint64{4, ptr, 128, ptr}, true},
		{"epoll_pwait2 without", auditArchX86_64, sysEpollPwait2, [6]uint64{4, ptr, 128, 0}, false},
		{"ppoll with timeout", auditArchX86_64, syscall.SYS_PPOLL, [6]uint64{ptr, 1, ptr}, true},
		{"ppoll without", auditArchX86_64, syscall.SYS_PPOLL, [6]uint64{ptr, 1, 0}, false},
		{"select with timeout", auditArchX86_64, syscall.SYS_SELECT, [6]uint64{1, ptr, 0, 0, ptr}, true},
		{"pselect6 without", auditArchX86_64, syscall.SYS_PSELECT6, [6]uint64{1, ptr, 0, 0, 0}, false},
		{"read", auditArchX86_64, syscall.SYS_READ, [6]uint64{0, ptr, 10}, false},
		{"openat", auditArchX86_64, syscall.SYS_OPENAT, [6]uint64{0, ptr, 0, ptr}, false},
		{"i386 clock_gettime number", 0x40000003, sysClockGettime, [6]uint64{1, ptr}, false},
	}
	for _, c := range cases {
		// The VM loads words in network order; seccomp in the host's. Each 32-bit field is
		// written so that the VM reads the value the kernel would.
		in := make([]byte, 64)
		put := func(off int, v uint32) { binary.BigEndian.PutUint32(in[off:], v) }
		put(0, c.nr)
		put(4, c.arch)
		for i, a := range c.args {
			put(int(argLow(uint32(i))), uint32(a))
			put(int(argHigh(uint32(i))), uint32(a>>32))
		}
		got, err := vm.Run(in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want := seccompRetAllow
		if c.trace {
			want = seccompRetTrace
		}
		if uint32(got) != uint32(want) {
			t.Errorf("%s: the filter returns %#x, want %#x", c.name, got, want)
		}
	}
}
