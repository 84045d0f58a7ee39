package fakeserver

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/incident-replay/incident-replay/internal/bindtest"
)

// A server binds its port only when its timeline says so, minutes in, but its URL is known
// from the start, so the port is picked long before it is bound. A port the kernel hands out
// (bind to port 0) is one it may hand out again meanwhile: as the local port of an outgoing
// connection, to docker-proxy or to another process's server. The server would then die of
// Errno 98 at its bind, a verdict made by the machine. So ports are picked below the kernel's
// ephemeral range, where neither bind(0) nor connect() goes, and each pick is locked across
// processes (a byte-range lock on one file per user, which the kernel drops with the process).
// The port is not bound meanwhile: a tool's preflight that bind-tests it must find it free,
// as it is before real SGLang binds.

const (
	pickLow    = 10000 // ports below this are left to services that ask for fixed ones
	pickTries  = 512
	lockPrefix = "incident-replay-ports-"
)

// scanStart spreads processes' scans apart, so that locks rarely meet.
var scanStart = func() int { return os.Getpid() * 7919 }

// hostPorts hands out the loopback ports of servers that bind later.
var hostPorts = &portSet{used: map[int]bool{}}

type portSet struct {
	mu   sync.Mutex
	used map[int]bool // this process's picks (a process's own locks never conflict)
	next int          // where the next scan starts
	lock *os.File     // nil: no cross-process lock could be had
	init bool
	low  int // the range picks come from, read once (pickRange)
	high int
}

// pickRange is [low, high): from pickLow to the start of the ephemeral range.
func pickRange() (low, high int) {
	low, high = pickLow, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > pickLow+1000 {
				high = n
			}
		}
	}
	return low, high
}

func (p *portSet) take() (*Reservation, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.init {
		p.init = true
		p.low, p.high = pickRange()
		p.next = p.low + scanStart()%(p.high-p.low)
		name := filepath.Join(os.TempDir(), lockPrefix+strconv.Itoa(os.Getuid()))
		if f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600); err == nil {
			p.lock = f
		}
	}
	low, high := p.low, p.high
	for range pickTries {
		port := p.next
		p.next++
		if p.next >= high {
			p.next = low
		}
		if port < low || port >= high || p.used[port] || !p.lockPort(port, syscall.F_WRLCK) {
			continue
		}
		if _, err := bindtest.Free(net.JoinHostPort("127.0.0.1", strconv.Itoa(port))); err != nil {
			p.lockPort(port, syscall.F_UNLCK) // a service of the machine has it
			continue
		}
		p.used[port] = true
		return &Reservation{port: port}, nil
	}
	return nil, fmt.Errorf("pick a loopback port: no free one in %d tries in %d-%d; servers of this or other runs hold them", pickTries, low, high-1)
}

// lockPort sets (F_WRLCK) or clears (F_UNLCK) the cross-process lock on port's byte; it
// reports whether the lock is this process's (always true without a lock file).
func (p *portSet) lockPort(port int, typ int16) bool {
	if p.lock == nil {
		return true
	}
	lk := syscall.Flock_t{Type: typ, Whence: 0, Start: int64(port), Len: 1}
	return syscall.FcntlFlock(p.lock.Fd(), syscall.F_SETLK, &lk) == nil
}

func (p *portSet) give(port int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used[port] {
		delete(p.used, port)
		p.lockPort(port, syscall.F_UNLCK)
	}
}

// A Reservation is a loopback port picked for a server that binds it only later: no other
// reservation, of this process or another, gets it until Release.
type Reservation struct {
	port int
	once sync.Once
}

// ReservePort picks a free loopback port and reserves it until Release.
func ReservePort() (*Reservation, error) { return hostPorts.take() }

// Port is the reserved port.
func (r *Reservation) Port() int { return r.port }

// Release frees the port. It is safe to call more than once.
func (r *Reservation) Release() { r.once.Do(func() { hostPorts.give(r.port) }) }

// freePort asks the kernel for a free port and releases it, for a server on a host other than
// loopback. Another process could take it before the server binds; Errno 98 is then the
// honest outcome, as with real SGLang.
func freePort(host string) (int, error) {
	port, err := bindtest.Free(net.JoinHostPort(dialHost(host), "0"))
	if err != nil {
		return 0, fmt.Errorf("fakeserver: cannot reserve a port on %s: %w", host, err)
	}
	return port, nil
}
