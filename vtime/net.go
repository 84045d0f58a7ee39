package vtime

import (
	"context"
	"net"
	"net/http"
	"sync"
)

// Listen wraps a server's listener for clock c: bytes read from a connection are work from the
// read until the handler that serves them has begun (Started), or the connection goes idle or
// closes (net/http answered it by itself). Together with TCPPort, which sees the bytes while
// they wait in the kernel, a request is never nobody's work.
//
// Serve with ConnContext and ConnState of the returned listener's Server hooks: see Serve.
func Listen(ln net.Listener, c *Clock) net.Listener { return &listener{Listener: ln, c: c} }

// Serve sets srv's ConnContext and ConnState so that Started and idle connections release
// the hold a connection took; srv must serve a listener from Listen.
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
		}
	}
}

// Started tells the clock that the handler serving ctx's request has begun its own task.
func Started(ctx context.Context) {
	if k, ok := ctx.Value(connKey{}).(*serverConn); ok {
		k.handed()
	}
}

type connKey struct{}

type listener struct {
	net.Listener
	c *Clock
}

func (l *listener) Accept() (net.Conn, error) {
	nc, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverConn{Conn: nc, c: l.c}, nil
}

type serverConn struct {
	net.Conn
	c       *Clock
	mu      sync.Mutex
	release func()
}

func (k *serverConn) Read(p []byte) (int, error) {
	n, err := k.Conn.Read(p)
	if n > 0 {
		k.mu.Lock()
		if k.release == nil {
			k.release = k.c.Hold()
		}
		k.mu.Unlock()
	}
	return n, err
}

func (k *serverConn) handed() {
	k.mu.Lock()
	r := k.release
	k.release = nil
	k.mu.Unlock()
	if r != nil {
		r()
	}
}

func (k *serverConn) Close() error {
	k.handed()
	return k.Conn.Close()
}

// DialContext wraps a client's dial function for the task its context carries: once the
// client has written its request the task is idle (the bytes are the kernel's, then the
// server's), and it is busy again from the moment a read returns bytes, before the transport
// hands the answer over. Without a task of a virtual clock in the context it dials plainly.
// A timeout that cancels such a request must Wake the task before it cancels.
func DialContext(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := dial(ctx, network, addr)
		t := TaskFrom(ctx)
		if err != nil || t == nil || t.c == nil {
			return nc, err
		}
		return &clientConn{Conn: nc, t: t}, nil
	}
}

type clientConn struct {
	net.Conn
	t *Task
}

func (k *clientConn) Write(p []byte) (int, error) {
	n, err := k.Conn.Write(p)
	k.t.Park()
	return n, err
}

func (k *clientConn) Read(p []byte) (int, error) {
	n, err := k.Conn.Read(p)
	if n > 0 || err != nil {
		k.t.Wake()
	}
	return n, err
}
