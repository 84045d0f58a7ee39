// Package bindtest tells whether a TCP address can be bound, leaving it free for the bind
// that follows.
package bindtest

import (
	"net"
	"syscall"
)

// Free binds addr, closes it at once and reports the port bound (the kernel's pick for port 0).
//
// It holds syscall.ForkLock (read side) meanwhile, the lock os/exec takes to fork: a child
// forked while the socket is open holds a copy until its exec, so the socket would stay
// listening after Close and a bind right after the check would fail with EADDRINUSE
// whenever another goroutine was starting a process (up to 2 binds in 100 beside four
// goroutines that fork).
func Free(addr string) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return 0, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port, nil
}
