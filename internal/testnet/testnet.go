// Package testnet holds network fixtures for tests.
package testnet

import (
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// FullListener listens on a loopback port whose accept queue is full, and returns its
// address: the kernel drops the SYN of every further connect (and retries it after a second),
// so a client's handshake stays on its way, as it does for milliseconds on a loaded host
// whose softirq work is deferred. Both close when the test ends.
func FullListener(tb testing.TB) string {
	tb.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		tb.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // a backlog of 0 queues one connection
		tb.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		tb.Fatal(err)
	}
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(sa.(*syscall.SockaddrInet4).Port))
	first, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { first.Close() })
	return addr
}
