package vtime

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

func TestParseBacklog(t *testing.T) {
	const (
		cols15 = "0003124b 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %s 00000001 00000000 00000000\n"
		cols13 = "0003124b 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %s 00000000\n"
	)
	line := func(format, queued string) string { return strings.Replace(format, "%s", queued, 1) }
	for _, tc := range []struct {
		name   string
		in     string
		queued uint64
		ok     bool
	}{
		{"idle, Linux 6.x", line(cols15, "00000000") + line(cols15, "00000000"), 0, true},
		{"queued on one CPU", line(cols15, "00000000") + line(cols15, "00000002"), 2, true},
		{"queued on both, hex", line(cols15, "0000000a") + line(cols15, "00000001"), 11, true},
		{"Linux 5.10's 13 columns", line(cols13, "00000003"), 3, true},
		{"before 5.10: 11 columns", "0003124b 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n", 0, false},
		{"not hex", line(cols15, "0000000g"), 0, false},
		{"empty", "", 0, false},
		{"blank lines only", "\n\n", 0, false},
		{"no final newline", strings.TrimSuffix(line(cols15, "00000004"), "\n"), 4, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			queued, ok := parseBacklog([]byte(tc.in))
			if queued != tc.queued || ok != tc.ok {
				t.Errorf("parseBacklog = %d, %t; want %d, %t", queued, ok, tc.queued, tc.ok)
			}
		})
	}
}

func FuzzParseBacklog(f *testing.F) {
	f.Add([]byte("0 0 0 0 0 0 0 0 0 0 0 1 0 0 0\n"))
	f.Add([]byte("0 0 0\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		queued, ok := parseBacklog(b)
		if !ok && queued != 0 {
			t.Errorf("a failed parse returned %d queued", queued)
		}
	})
}

// The file is read afresh on every look, whole however many CPUs it lists, and opened afresh
// after a read that failed; a kernel without the column is never looked at again.
func TestSoftnetStatReadsAfresh(t *testing.T) {
	path := filepath.Join(t.TempDir(), "softnet_stat")
	row := func(queued string) string {
		return "00000001 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 " + queued + " 00000000 00000000 00000000\n"
	}
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &softnetStat{path: path}
	defer func() {
		if s.f != nil {
			s.f.Close()
		}
	}()
	write(row("00000000") + row("00000001"))
	if !s.backlogged() {
		t.Error("a queued packet was not seen")
	}
	write(row("00000000") + row("00000000"))
	if s.backlogged() {
		t.Error("empty backlogs read as queued: the file was not read afresh")
	}
	write(row("00000001"))
	s.f.Close() // a read that fails
	if s.backlogged() || s.failed {
		t.Errorf("a failed read: backlogged, failed = true, %t; want false, false", s.failed)
	}
	if !s.backlogged() {
		t.Error("after a failed read the file was not opened afresh")
	}
	many := strings.Repeat(row("00000000"), 255) + row("00000001") // 256 CPUs, over 4 KiB
	write(many)
	if !s.backlogged() {
		t.Error("a packet queued on the 256th CPU was not seen")
	}
	write("00000001 00000000 00000000\n")
	if s.backlogged() || !s.failed {
		t.Errorf("a kernel without the backlog column: backlogged, failed = true, %t; want false, true", s.failed)
	}
	write(row("00000001"))
	if s.backlogged() {
		t.Error("looked again after the kernel was found to have no backlog column")
	}
}

func TestSoftnetStatOnThisKernel(t *testing.T) {
	b, err := os.ReadFile("/proc/net/softnet_stat")
	if err != nil {
		t.Skipf("no /proc/net/softnet_stat here: %v", err)
	}
	if f := bytes.Fields(bytes.SplitN(b, []byte("\n"), 2)[0]); len(f) < 13 {
		t.Skipf("this kernel's softnet_stat has %d columns, no backlog column", len(f))
	}
	s := &softnetStat{path: "/proc/net/softnet_stat"}
	s.backlogged()
	s.backlogged() // the second look is a pread at offset 0 of the open file
	if s.failed {
		t.Fatal("this kernel's /proc/net/softnet_stat could not be read or parsed")
	}
	s.f.Close()
}

// An answer written to a client that is a process (no task of the clock at the other end) may
// still be in a CPU's backlog when the server's write returns. While it is unacknowledged and
// a backlog holds packets, the listener is busy, on a kept-alive connection and on one the
// server closed; once the backlogs were seen empty, a closed connection holds it no more.
// Delayed ACKs (the client asks for them) keep the answer unacknowledged for 40 ms, long
// enough to look; an attempt whose ACK came sooner is tried again.
func TestAnswerOnTheWireHoldsTheListener(t *testing.T) {
	var queued atomic.Bool
	backlogged = queued.Load
	defer func() { backlogged = softnet.backlogged }()

	c := newClock(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	vl := Listen(ln, c)
	l := vl.(*listener)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("ok", 100))
	})}
	Serve(srv)
	go func() { _ = srv.Serve(vl) }()
	defer srv.Close()

	// ask sends one request with delayed ACKs on and returns the client's connection unread.
	ask := func(closing bool) net.Conn {
		nc, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := nc.(*net.TCPConn).SyscallConn()
		_ = raw.Control(func(fd uintptr) {
			_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 0)
		})
		req := "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
		if closing {
			req = "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
		}
		if _, err := io.WriteString(nc, req); err != nil {
			t.Fatal(err)
		}
		return nc
	}
	idle := func() bool { ok, _ := l.Idle(); return ok }
	// serverUnacked is whether the server's one open connection has unacknowledged bytes.
	serverUnacked := func() (open, unacked bool) {
		l.mu.Lock()
		defer l.mu.Unlock()
		for k := range l.conns {
			info, _ := tcpInfo(k.Conn)
			return true, info.Unacked > 0
		}
		return false, false
	}
	waitFor := func(what string, cond func() bool) bool {
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Microsecond) {
			if cond() {
				return true
			}
		}
		t.Logf("gave up waiting for %s", what)
		return false
	}

	t.Run("kept alive", func(t *testing.T) {
		for range 50 {
			queued.Store(true)
			nc := ask(false)
			sent := waitFor("the answer", func() bool { _, u := serverUnacked(); return u })
			busy := !idle()
			_, still := serverUnacked()
			nc.Close()
			waitFor("the close", func() bool { open, _ := serverUnacked(); return !open })
			if !sent || !still {
				continue // acknowledged before the look: try again
			}
			if !busy {
				t.Fatal("idle while an unacknowledged answer may be in a backlog")
			}
			return
		}
		t.Fatal("no answer stayed unacknowledged long enough to look (are delayed ACKs off?)")
	})
	t.Run("closed by the server", func(t *testing.T) {
		for range 50 {
			queued.Store(false)
			for !idle() { // forget earlier connections
				time.Sleep(time.Millisecond)
			}
			queued.Store(true)
			nc := ask(true)
			waitFor("the close", func() bool { open, _ := serverUnacked(); return !open })
			l.mu.Lock()
			unacked := l.closedUnacked
			l.mu.Unlock()
			if !unacked {
				nc.Close()
				continue // acknowledged before the close: try again
			}
			if idle() {
				t.Fatal("idle while the answer of a closed connection may be in a backlog")
			}
			queued.Store(false)
			if !idle() {
				t.Fatal("busy with every backlog empty")
			}
			queued.Store(true)
			if !idle() {
				t.Fatal("a closed connection held the listener after the backlogs were seen empty")
			}
			nc.Close()
			return
		}
		t.Fatal("no answer stayed unacknowledged until its connection closed (are delayed ACKs off?)")
	})
}
