package vtime

import (
	"bufio"
	"net"
	"os"
	"testing"
	"time"
)

func TestBusySocketTable(t *testing.T) {
	const head = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
	line := func(local, rem, st, q string) string {
		return "   0: " + local + " " + rem + " " + st + " " + q + " 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0\n"
	}
	const port = 30000 // 7530
	cases := []struct {
		name string
		rows string
		busy bool
	}{
		{"idle listener", line("0100007F:7530", "00000000:0000", "0A", "00000000:00000000"), false},
		{"unaccepted connection", line("0100007F:7530", "00000000:0000", "0A", "00000000:00000001"), true},
		{"request unread by the server", line("0100007F:7530", "0100007F:9C40", "01", "00000000:0000004E"), true},
		{"answer unread by the client", line("0100007F:9C40", "0100007F:7530", "01", "00000000:00000080"), true},
		{"handshake", line("0100007F:9C40", "0100007F:7530", "02", "00000000:00000000"), true},
		{"quiet connection", line("0100007F:9C40", "0100007F:7530", "01", "00000000:00000000"), false},
		{"another port", line("0100007F:1F90", "0100007F:9C40", "01", "00000000:000000FF"), false},
		{"closed, unread", line("0100007F:9C40", "0100007F:7530", "08", "00000000:00000010"), true},
	}
	for _, c := range cases {
		if got := busySocket([]byte(head+c.rows), port); got != c.busy {
			t.Errorf("%s: busy = %v, want %v", c.name, got, c.busy)
		}
	}
}

func TestTCPPortSeesUnreadBytes(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp on this system")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	p := NewTCPPort(ln.Addr().(*net.TCPAddr).Port)
	p.fd = -2 // the socket table, as where sock_diag is refused
	defer p.Close()
	if idle, _ := p.Idle(); !idle {
		t.Fatal("a listener nobody dialled is busy")
	}
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if idle, _ := p.Idle(); idle {
		t.Fatal("a connection nobody accepted is idle")
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := c.Write([]byte("GET /health HTTP/1.1\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for idle, _ := p.Idle(); idle; idle, _ = p.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("a request the server has not read is idle")
		}
		time.Sleep(time.Millisecond)
	}
	if _, err := bufio.NewReader(s).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// bufio read everything there was: the queue is empty again.
	if idle, _ := p.Idle(); !idle {
		t.Fatal("a connection whose bytes were read is busy")
	}
}

func TestSockDiagAgreesWithTheTable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	if _, err := diagBusy(port); err != nil {
		t.Skipf("sock_diag unavailable here: %v", err)
	}
	check := func(want bool, what string) {
		t.Helper()
		if busy, _ := diagBusy(port); busy != want {
			t.Fatalf("%s: sock_diag busy = %v, want %v", what, busy, want)
		}
	}
	check(false, "idle listener")
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	check(true, "connection nobody accepted")
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(false, "accepted, quiet")
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond) // loopback delivery is immediate; this only bounds it
	check(true, "bytes the server has not read")
	if _, err := bufio.NewReader(s).ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	check(false, "bytes read")
}
