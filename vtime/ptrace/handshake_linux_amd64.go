//go:build linux && amd64

package ptrace

import (
	"encoding/binary"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A connect to a loopback peer sends its SYN, and gets the answer (SYN-ACK or RST), through a
// CPU's backlog. On a loaded host ksoftirqd does that work, and a Go program's connect returns
// EINPROGRESS with the handshake still on its way while its threads sleep in epoll, seen
// idle: the dial's timeout could fire first. The backlog check (backlogged) most likely misses
// the packet while ksoftirqd carries it from the queue to the socket: llmwait's check that
// nothing accepts on a stopped server's port (a 1 s dial) still timed out in 9 of 776 runs of
// a watchdog cell beside two CPU hogs. So the tracer stops at loopback connects, and the
// tracee is busy while such a socket is in SYN-SENT, as the LD_PRELOAD library holds the
// clock for a shell tool.

// handshakeMax bounds one hold in real time: a handshake that long is a peer that drops SYNs
// (a full accept queue) or is not there, which a real host would wait out too.
const handshakeMax = time.Second

const tcpSynSent = 2 // TCP_SYN_SENT, tcp_info's tcpi_state

// handshake is a loopback connect the tracer saw enter.
type handshake struct {
	pid, fd  int       // the socket, in the tracee's process
	since    time.Time // wall time of the call's entry
	returned bool      // the call has returned (a blocking connect returns once it is done)
}

// loopbackAddr reports whether the sockaddr of length n at addr in thread tid's memory is a
// loopback address (see loopbackSockaddr).
func loopbackAddr(tid int, addr, n uint64) bool {
	var b [24]byte
	if addr == 0 || n < 8 {
		return false
	}
	m := min(int(n), len(b))
	if c, err := syscall.PtracePeekData(tid, uintptr(addr), b[:m]); err != nil || c < m {
		return false
	}
	return loopbackSockaddr(b[:m])
}

// loopbackSockaddr reports whether sockaddr b is a loopback IPv4 or IPv6 address (an
// IPv4-mapped one too).
func loopbackSockaddr(b []byte) bool {
	if len(b) < 8 {
		return false
	}
	switch binary.LittleEndian.Uint16(b[:2]) {
	case syscall.AF_INET:
		return netip.AddrFrom4([4]byte(b[4:8])).IsLoopback()
	case syscall.AF_INET6:
		return len(b) >= 24 && netip.AddrFrom16([16]byte(b[8:24])).Unmap().IsLoopback()
	}
	return false
}

// handshaking reports whether a loopback connect the tracer saw is still in SYN-SENT, and
// forgets those that are done; t.mu is held.
func (t *Tracee) handshaking() bool {
	busy := false
	keep := t.shakes[:0]
	for _, h := range t.shakes {
		st, ok := socketState(h.pid, h.fd)
		fresh := time.Since(h.since) < handshakeMax
		switch {
		case ok && st == tcpSynSent && fresh:
			busy = true
			keep = append(keep, h)
		case !h.returned && ok && fresh: // not begun yet, or a blocking connect: its thread says
			keep = append(keep, h)
		}
	}
	clear(t.shakes[len(keep):])
	t.shakes = keep
	return busy
}

// socketState reads the TCP state of socket fd of process pid through a duplicate of it;
// ok is false where the process or the descriptor is gone or is no TCP socket.
func socketState(pid, fd int) (uint8, bool) {
	pfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(pfd)
	dup, err := unix.PidfdGetfd(pfd, fd, 0)
	if err != nil {
		return 0, false
	}
	defer unix.Close(dup)
	info, err := unix.GetsockoptTCPInfo(dup, unix.IPPROTO_TCP, unix.TCP_INFO)
	if err != nil {
		return 0, false
	}
	return info.State, true
}
