package vtime

import (
	"net"
	"path/filepath"
	"testing"
	"time"
)

// A listener handed over keeps the connections queued on it before the hand-over.
func TestHandedOverListenerKeepsItsQueue(t *testing.T) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	early, err := net.Dial("tcp", ln.Addr().String()) // queued: nobody accepts yet
	if err != nil {
		t.Fatal(err)
	}
	defer early.Close()

	leader, follower := unixPair(t)
	if err := SendListener(leader, ln); err != nil {
		t.Fatal(err)
	}
	ln.Close()
	if _, err := leader.Write([]byte("rest")); err != nil { // the clock's stream follows
		t.Fatal(err)
	}

	got, err := ReceiveListener(follower)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.Addr().String() != early.RemoteAddr().String() {
		t.Fatalf("received a listener on %s, want %s", got.Addr(), early.RemoteAddr())
	}
	_ = got.(*net.TCPListener).SetDeadline(time.Now().Add(5 * time.Second))
	c, err := got.Accept()
	if err != nil {
		t.Fatalf("the connection queued before the hand-over is gone: %v", err)
	}
	c.Close()
	rest := make([]byte, 4)
	if _, err := follower.Read(rest); err != nil || string(rest) != "rest" {
		t.Fatalf("the stream after the listener reads %q, %v; want \"rest\"", rest, err)
	}
}

// A follower that expects a listener and gets the clock's stream instead says so.
func TestReceiveListenerWithoutOne(t *testing.T) {
	a, b := unixPair(t)
	if _, err := a.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReceiveListener(b); err == nil {
		t.Fatal("no error for a stream that carries no listener")
	}
}

func unixPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "p")
	ul, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	b, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	a, err := ul.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, b
}
