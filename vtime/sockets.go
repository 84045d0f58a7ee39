package vtime

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// TCPPort is a participant for every loopback TCP connection to or from a port: it is busy
// while bytes wait in a socket's queue (a request the server has not read, an answer the
// client has not read), while a connection is half-open, or while the listener holds a
// connection nobody accepted. Those are the moments between two processes that no clock
// call or task can see.
type TCPPort struct {
	port int
	path string // the socket table read where sock_diag is refused

	mu sync.Mutex
	fd int // the sock_diag socket, -1 before the first ask; reused for every ask
}

// NewTCPPort watches port in the caller's network namespace.
func NewTCPPort(port int) *TCPPort { return &TCPPort{port: port, path: "/proc/net/tcp", fd: -1} }

// Idle implements Participant. It asks the kernel through sock_diag, and reads the socket
// table where that is refused.
func (p *TCPPort) Idle() (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd != -2 {
		busy, err := p.diag()
		if err == nil {
			return !busy, time.Time{}
		}
		p.fd = -2 // refused here: use the table from now on
	}
	b, err := os.ReadFile(p.path)
	if err != nil {
		return true, time.Time{} // no socket table: nothing to wait for
	}
	return !busySocket(b, p.port), time.Time{}
}

// Close releases the sock_diag socket.
func (p *TCPPort) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fd >= 0 {
		_ = syscall.Close(p.fd)
	}
	p.fd = -2
	return nil
}

// TCP states in /proc/net/tcp (include/net/tcp_states.h).
const (
	tcpEstablished = 0x01
	tcpSynSent     = 0x02
	tcpSynRecv     = 0x03
	tcpListen      = 0x0A
)

// busySocket reports whether the socket table b holds a socket on port with work pending.
// Lines read: "sl local rem st tx_queue:rx_queue ...", addresses as HEXIP:HEXPORT.
func busySocket(b []byte, port int) bool {
	want := []byte(":" + hex4(port))
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Scan() // header
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 5 {
			continue
		}
		local, rem := f[1], f[2]
		if !bytes.HasSuffix(local, want) && !bytes.HasSuffix(rem, want) {
			continue
		}
		st, err := strconv.ParseUint(string(f[3]), 16, 8)
		if err != nil {
			continue
		}
		tx, rx, ok := bytes.Cut(f[4], []byte(":"))
		if !ok {
			continue
		}
		txq, _ := strconv.ParseUint(string(tx), 16, 64)
		rxq, _ := strconv.ParseUint(string(rx), 16, 64)
		if pending(st, txq, rxq) {
			return true
		}
	}
	return false
}

// pending reports whether a socket in state st with tx and rx bytes queued is mid-exchange.
func pending(st, tx, rx uint64) bool {
	switch st {
	case tcpSynSent, tcpSynRecv:
		return true
	case tcpListen:
		return rx > 0 // accept backlog
	case tcpEstablished:
		return rx > 0 || tx > 0
	}
	return rx > 0 // closing states: bytes still unread on our side are work
}

func hex4(port int) string {
	const digits = "0123456789ABCDEF"
	return string([]byte{digits[port>>12&0xF], digits[port>>8&0xF], digits[port>>4&0xF], digits[port&0xF]})
}
