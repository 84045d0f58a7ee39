package vtime

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// BenchmarkPollLoop is a Go tool's poll loop on virtual time, as testcontainers' ForHTTP
// runs it: 100 ms sleeps, each a jump of the clock. Its wall time per poll is what a jump
// costs the driver (a 15-minute startup timeout is 9,000 polls): a task's wait needs no
// quiet window.
func BenchmarkPollLoop(b *testing.B) {
	c := New(t0, Options{})
	defer c.Close()
	task := NewTask(c)
	defer task.End()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := task.Sleep(ctx, 100*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if got, want := c.Now().Sub(t0), time.Duration(b.N)*100*time.Millisecond; got != want {
		b.Fatalf("the clock read +%s after %d polls, want +%s", got, b.N, want)
	}
}

// BenchmarkListenerIdle is the listener's idle look with four kept-alive connections whose
// answers were read and acknowledged: what the driver asks after each step of a run whose
// clients keep their connections (the Go tools).
func BenchmarkListenerIdle(b *testing.B) {
	c := New(t0, Options{})
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	vl := Listen(ln, c)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })}
	Serve(srv)
	go func() { _ = srv.Serve(vl) }()
	defer srv.Close()
	for range 4 {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		defer nc.Close()
		if _, err := io.WriteString(nc, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			b.Fatal(err)
		}
		if _, err := http.ReadResponse(bufio.NewReader(nc), nil); err != nil {
			b.Fatal(err)
		}
	}
	l := vl.(*listener)
	// Every answer acknowledged (the client's delayed ACK has gone out) and every request read.
	deadline := time.Now().Add(5 * time.Second)
	for idle, _ := l.Idle(); !idle || anyUnacked(l); idle, _ = l.Idle() {
		if time.Now().After(deadline) {
			b.Fatal("the connections did not settle")
		}
		time.Sleep(time.Millisecond)
	}
	b.ResetTimer()
	for b.Loop() {
		if idle, _ := l.Idle(); !idle {
			b.Fatal("busy")
		}
	}
}

func anyUnacked(l *listener) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.conns {
		if info, _ := tcpInfo(k.Conn); info.Unacked > 0 {
			return true
		}
	}
	return len(l.conns) < 4
}
