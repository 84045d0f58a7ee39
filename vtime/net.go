package vtime

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/jonboulle/clockwork"
	"golang.org/x/sys/unix"
)

// A request between a Go client and a server on one virtual clock is handed over exactly. The
// client's task makes it inside RequestDuring: the task is idle, and the request holds the
// clock from before it is sent until the server's handler has begun (Started); the handler's
// task is busy until it answers, and its answer (Answered) holds the clock until the client's
// task is busy again. A client that is not a task of the clock (curl, a script) sleeps in its
// own process once it has written; the listener is busy while a connection waits to be
// accepted or holds bytes nobody has read, so the server always picks them up before time
// moves, and while its answer may still be in the kernel on its way to that process.

// Listen wraps a server's listener for clock c and attaches it to c. Serve the returned
// listener with an http.Server passed through Serve.
func Listen(ln net.Listener, c *Clock) net.Listener {
	l := &listener{Listener: ln, c: c, conns: map[*serverConn]struct{}{}}
	if tl, ok := ln.(*net.TCPListener); ok {
		if f, err := tl.File(); err == nil {
			if raw, err := f.SyscallConn(); err == nil {
				l.file, l.raw = f, raw
			} else {
				f.Close()
			}
		}
	}
	l.detach = c.Attach(l)
	c.mu.Lock()
	c.listeners[ln.Addr().String()] = true
	c.mu.Unlock()
	return l
}

// Serve sets srv's ConnContext and ConnState so that a request's connection is known to its
// handler (Started, Answered) and a connection net/http answered by itself hands its client
// over too.
func Serve(srv *http.Server) {
	prevCtx, prevState := srv.ConnContext, srv.ConnState
	srv.ConnContext = func(ctx context.Context, nc net.Conn) context.Context {
		if prevCtx != nil {
			ctx = prevCtx(ctx, nc)
		}
		if k, ok := nc.(*serverConn); ok {
			return context.WithValue(ctx, connKey{}, k)
		}
		return ctx
	}
	srv.ConnState = func(nc net.Conn, st http.ConnState) {
		if prevState != nil {
			prevState(nc, st)
		}
		if k, ok := nc.(*serverConn); ok && (st == http.StateIdle || st == http.StateClosed || st == http.StateHijacked) {
			k.handed()
			k.flushed()
		}
	}
}

// Started tells the clock that the handler serving ctx's request has begun its own task: the
// connection's hold ends and a client task waiting for the hand-over is parked.
func Started(ctx context.Context) {
	if k, ok := ctx.Value(connKey{}).(*serverConn); ok {
		k.handed()
		k.mu.Lock()
		k.asked = true
		k.mu.Unlock()
		addr := k.RemoteAddr().String()
		if cc := k.c.client(addr); cc != nil {
			cc.t.taken()
		} else {
			k.c.handOver("S", addr)
		}
	}
}

// Answered tells the clock that the handler serving ctx's request has answered: a client task
// on the other end is busy from now on (its answer is on its way; a close that cut the request
// short has told it already), and the connection holds the clock until net/http has written
// the whole answer (ConnState idle or closed), so a client that is a process (curl) has it
// before time moves.
func Answered(ctx context.Context) {
	if k, ok := ctx.Value(connKey{}).(*serverConn); ok {
		k.mu.Lock()
		if k.flushing == nil {
			k.flushing = k.c.Hold()
		}
		asked := k.asked
		k.asked = false
		k.mu.Unlock()
		if asked {
			k.answer()
		}
	}
}

// answer tells the client of k that its request has ended: it is busy from now on.
func (k *serverConn) answer() {
	addr := k.RemoteAddr().String()
	if cc := k.c.client(addr); cc != nil {
		cc.answered()
	} else {
		k.c.handOver("A", addr)
	}
}

type connKey struct{}

// Handle wraps h so that each request is work on clock from the moment its handler begins
// until it returns, except while it waits through its task (TaskFrom(r.Context())): the
// handler runs as a task of its own, between Started and Answered. On a clock other than a
// *Clock it is h with a plain task.
func Handle(clock clockwork.Clock, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		task := NewTask(clock)
		defer task.End()
		r = r.WithContext(WithTask(r.Context(), task))
		Started(r.Context())
		defer Answered(r.Context())
		h.ServeHTTP(w, r)
	})
}

type listener struct {
	net.Listener
	c      *Clock
	detach func()
	// file is a TCP listener's socket, duplicated, and raw its poller: accept waits on them
	// so that it can take the clock before a connection leaves the queue. nil for others.
	file *os.File
	raw  syscall.RawConn

	mu    sync.Mutex
	conns map[*serverConn]struct{}
	// closedUnacked: a connection closed with its last answer unacknowledged, which may still
	// be on its way (an HTTP/1.0 client's, or one that asked to close).
	closedUnacked bool
}

func (l *listener) Accept() (net.Conn, error) {
	nc, release, err := l.accept()
	if err != nil {
		return nil, err
	}
	if testHookAccepted != nil {
		testHookAccepted()
	}
	k := &serverConn{Conn: nc, c: l.c, l: l}
	l.mu.Lock()
	l.conns[k] = struct{}{}
	l.mu.Unlock()
	release()
	return k, nil
}

// testHookAccepted runs between taking a connection and registering it (tests widen the gap).
var testHookAccepted func()

// accept takes the next connection with the clock held from before it leaves the accept
// queue until the caller has made it one of l.conns (then it calls release): in between,
// Idle would find it in neither, and a request written to it could wait out a jump.
func (l *listener) accept() (nc net.Conn, release func(), err error) {
	if l.raw == nil {
		nc, err := l.Listener.Accept()
		return nc, func() {}, err
	}
	for {
		var nfd int
		var aerr error
		err = l.raw.Read(func(fd uintptr) bool {
			release = l.c.Hold()
			nfd, _, aerr = syscall.Accept4(int(fd), syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC)
			if aerr == syscall.EAGAIN || aerr == syscall.EINTR {
				release()
				return false // wait until a connection is queued
			}
			return true
		})
		switch {
		case err != nil: // closed
			return nil, nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: net.ErrClosed}
		case aerr == syscall.ECONNABORTED: // gone before it was taken; net.Listener skips it too
			release()
			continue
		case aerr != nil:
			release()
			return nil, nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.Addr(), Err: os.NewSyscallError("accept4", aerr)}
		}
		f := os.NewFile(uintptr(nfd), "tcp")
		nc, err = net.FileConn(f) // a duplicate of nfd, on the runtime's poller
		f.Close()
		if err != nil {
			release()
			return nil, nil, err
		}
		return nc, release, nil
	}
}

func (l *listener) Close() error {
	if l.file != nil {
		_ = l.file.Close() // ends a wait in accept; the listening socket is closed below
	}
	l.detach()
	l.c.mu.Lock()
	delete(l.c.listeners, l.Listener.Addr().String())
	l.c.mu.Unlock()
	return l.Listener.Close()
}

func (l *listener) exactIdle() {}

// Idle implements Participant: busy while a connection waits in the accept queue, a
// connection received bytes that no hold covers yet (unread, or read by a goroutine that has
// not taken its hold), or an answer may still be on its way to a client that is a process: it
// is unacknowledged and a CPU's backlog holds packets (see backlogged). An unacknowledged
// answer alone is not waited for: a client's delayed ACK would hold the clock for 40 ms of
// wall time per request.
func (l *listener) Idle() (bool, time.Time) {
	if info, _ := tcpInfo(l.Listener); info.Unacked > 0 {
		return false, time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	sent := l.closedUnacked
	for k := range l.conns {
		uncovered, unacked := k.lookLocked()
		if uncovered {
			return false, time.Time{}
		}
		sent = unacked || sent
	}
	if sent && backlogged() {
		return false, time.Time{}
	}
	// The backlogs were empty: what the closed connections sent has left them.
	l.closedUnacked = false
	return true, time.Time{}
}

type serverConn struct {
	net.Conn
	c *Clock
	l *listener

	mu       sync.Mutex
	release  func() // bytes read, no handler yet
	flushing func() // answered, not yet written
	asked    bool   // a handler has begun (Started) and not answered

	// taken counts the bytes Read returned, each once a hold covered it. The kernel counts
	// what it received (tcpi_bytes_received); more than taken is a request unread, or read
	// by a goroutine the scheduler stopped before it took its hold: on a loaded host a read's
	// return is where a thread is preempted, for milliseconds, while curl sleeps in poll.
	taken atomic.Uint64
}

// lookLocked reports whether k received bytes that no hold covers (uncovered) and whether
// bytes it sent are unacknowledged; l.mu is held. One TCP_INFO answers both.
func (k *serverConn) lookLocked() (uncovered, unacked bool) {
	info, full := tcpInfo(k.Conn)
	return receivedBeyond(k.Conn, info, full, &k.taken), info.Unacked > 0
}

// receivedBeyond reports whether nc received more bytes than taken counts as read under a
// hold, from its TCP_INFO (full: the kernel filled in Bytes_received). A kernel before 4.1
// counts no bytes: what waits unread is then all it can tell.
func receivedBeyond(nc net.Conn, info unix.TCPInfo, full bool, taken *atomic.Uint64) bool {
	if full {
		return info.Bytes_received > taken.Load()
	}
	return unread(nc) > 0
}

// Read does not end Answered's hold: net/http's background read (started before the handler,
// to notice a client that goes away) may first call it after the handler answered, with the
// answer still unwritten. ConnState's idle, closed or hijacked (after the write) or Close ends it.
func (k *serverConn) Read(p []byte) (int, error) {
	n, err := k.Conn.Read(p)
	if n > 0 {
		if testHookRead != nil {
			testHookRead()
		}
		k.mu.Lock()
		if k.release == nil {
			k.release = k.c.Hold()
		}
		k.mu.Unlock()
		k.taken.Add(uint64(n))
	}
	return n, err
}

// testHookRead runs between a read's return and its hold (tests widen the gap).
var testHookRead func()

func (k *serverConn) handed() {
	k.mu.Lock()
	r := k.release
	k.release = nil
	k.mu.Unlock()
	if r != nil {
		r()
	}
}

// flushed ends the hold Answered took, once net/http has written the answer (see Read).
func (k *serverConn) flushed() {
	k.mu.Lock()
	f := k.flushing
	k.flushing = nil
	k.mu.Unlock()
	if f != nil {
		f()
	}
}

// Close hands work to the client, which learns of the close only once it reads: the clock
// waits out its quiet window. A client waiting for the answer to a request the close cuts
// short (the server died) is told now, as of an answer, so the clock waits for it to act:
// the handler's own Answered comes only once net/http's background read has seen the close
// and ended its context, and in that gap the handler's task is idle. Beside CPU hogs a
// container's server took longer than that, and a Go client's 1 s request timeout fired
// before it learned of the death (claimed 0.84 s of virtual time late).
func (k *serverConn) Close() error {
	defer k.c.handOff()
	k.handed()
	k.flushed()
	k.mu.Lock()
	cut := k.asked
	k.asked = false
	k.mu.Unlock()
	if cut {
		k.answer()
	}
	k.l.mu.Lock()
	_, unacked := k.lookLocked()
	k.l.closedUnacked = unacked || k.l.closedUnacked
	delete(k.l.conns, k)
	k.l.mu.Unlock()
	return k.Conn.Close()
}

// DialContext wraps a client's dial function so that a server on the clock can find the task
// at the other end of a connection (Started, Answered). Without a task of a virtual clock in
// the context it dials plainly.
//
// The dial itself holds the clock: refused or connected, its outcome comes in real time, and a
// refusal reaches the task through net/http's own goroutines, so the hold is kept until the
// task is busy again. A connection to a listener that is not on the clock (a stale server from
// an earlier run) holds the clock while bytes wait in it unread, and from each read that
// returns some until the task is busy again: its answers come in real time too.
func DialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		t := TaskFrom(ctx)
		if t == nil || t.c == nil {
			return dial(ctx, network, addr)
		}
		c := t.c
		release := c.Hold()
		defer release()
		t.onWire()
		nc, err := dial(ctx, network, addr)
		if err != nil {
			t.holdUntilBusy()
			return nc, err
		}
		c.mu.Lock()
		onClock := c.listeners[nc.RemoteAddr().String()]
		c.mu.Unlock()
		if !onClock {
			o := &offClockConn{Conn: nc, t: t}
			o.detach = c.Attach(o)
			return o, nil
		}
		k := &clientConn{Conn: nc, t: t, local: nc.LocalAddr().String()}
		c.mu.Lock()
		c.clients[k.local] = k
		c.mu.Unlock()
		return k, nil
	}
}

// offClockConn is a task's connection to a listener the clock does not know.
type offClockConn struct {
	net.Conn
	t      *Task
	once   sync.Once
	detach func()
	taken  atomic.Uint64 // bytes Read returned, each once it held the clock (see serverConn)
}

func (o *offClockConn) Write(p []byte) (int, error) {
	n, err := o.Conn.Write(p)
	o.t.onWire()
	return n, err
}

func (o *offClockConn) Read(p []byte) (int, error) {
	n, err := o.Conn.Read(p)
	if n > 0 && testHookRead != nil {
		testHookRead()
	}
	if n > 0 || err != nil {
		o.t.holdUntilBusy() // what was read is on its way to the task
	}
	if n > 0 {
		o.taken.Add(uint64(n))
	}
	return n, err
}

// Idle implements Participant: busy while an answer waits unread or was read before its hold.
func (o *offClockConn) Idle() (bool, time.Time) {
	info, full := tcpInfo(o.Conn)
	return !receivedBeyond(o.Conn, info, full, &o.taken), time.Time{}
}

func (o *offClockConn) exactIdle() {}

func (o *offClockConn) Close() error {
	defer o.t.c.handOff()
	o.once.Do(o.detach)
	return o.Conn.Close()
}

type clientConn struct {
	net.Conn
	t     *Task
	local string
	wrote uint64 // the task's Idle the last request was written in (see Task.idles); c.mu
}

// Write records the Idle of the task's in which the request goes out: only there does the
// task wait for its answer.
func (k *clientConn) Write(p []byte) (int, error) {
	c := k.t.c
	c.mu.Lock()
	k.wrote = k.t.idles
	c.mu.Unlock()
	return k.Conn.Write(p)
}

// answered holds the clock for the task until it is busy again, if it still waits in the
// Idle it wrote its last request in.
func (k *clientConn) answered() {
	c := k.t.c
	c.mu.Lock()
	held := k.wrote != 0 && k.t.holdUntilBusyLocked(k.wrote)
	c.mu.Unlock()
	if held {
		c.act.Add(1)
	}
}

// Close hands work to the server, whose handler learns of the close (its request's context
// ends) only once net/http reads: the clock waits out its quiet window.
func (k *clientConn) Close() error {
	c := k.t.c
	defer c.handOff()
	c.mu.Lock()
	if c.clients[k.local] == k {
		delete(c.clients, k.local)
	}
	c.mu.Unlock()
	return k.Conn.Close()
}

// client is the connection of a Go client whose local address is addr, or nil.
func (c *Clock) client(addr string) *clientConn {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clients[addr]
}

// tcpInfo is TCP_INFO of a TCP socket (zero for others), and whether the kernel filled it up
// to Bytes_received. On a listening socket its Unacked is how many connections wait in the
// accept queue.
func tcpInfo(s any) (info unix.TCPInfo, full bool) {
	sc, ok := s.(syscall.Conn)
	if !ok {
		return info, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return info, false
	}
	size := uint32(unsafe.Sizeof(info))
	_ = rc.Control(func(fd uintptr) {
		if _, _, e := syscall.Syscall6(syscall.SYS_GETSOCKOPT, fd, syscall.IPPROTO_TCP, syscall.TCP_INFO,
			uintptr(unsafe.Pointer(&info)), uintptr(unsafe.Pointer(&size)), 0); e != 0 {
			size = 0
		}
	})
	return info, uintptr(size) >= unsafe.Offsetof(info.Bytes_received)+unsafe.Sizeof(info.Bytes_received)
}

// unread is the bytes waiting in a connection's receive queue, 0 when that cannot be read.
func unread(nc net.Conn) int {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return 0
	}
	return Unread(sc)
}

// Unread is the bytes waiting to be read from a socket or pipe (SIOCINQ, which is FIONREAD
// and TIOCINQ), 0 when that cannot be read.
func Unread(sc syscall.Conn) int {
	rc, err := sc.SyscallConn()
	if err != nil {
		return 0
	}
	var n int32
	_ = rc.Control(func(fd uintptr) {
		_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&n)))
	})
	return int(n)
}
