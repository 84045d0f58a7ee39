package vtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// linked returns a leader and a follower joined by a Unix socket, as a harness and a fake
// server in a container are; addr is where the follower's server will listen.
var t0 = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)

func linked(t *testing.T, addr string) (leader, follower *Clock, link *Link) {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "vclock.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	leader = New(t0, Options{})
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	fc, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	follower = Follow(fc, t0, Options{})
	follower.Join()
	lc, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	link = leader.Lead(lc, addr)
	t.Cleanup(func() {
		follower.Close()
		link.Close()
		leader.Close()
	})
	return leader, follower, link
}

func TestFollowerTimersInterleaveWithTheLeaders(t *testing.T) {
	leader, follower, _ := linked(t, "127.0.0.1:1")
	var mu sync.Mutex
	var got []string
	note := func(who string, c *Clock) {
		mu.Lock()
		got = append(got, fmt.Sprintf("%s %s", who, c.Now().Sub(t0)))
		mu.Unlock()
	}
	var wg sync.WaitGroup
	run := func(who string, c *Clock, steps ...time.Duration) {
		task := NewTask(c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer task.End()
			for _, d := range steps {
				if err := task.Sleep(context.Background(), d); err != nil {
					t.Error(err)
					return
				}
				note(who, c)
			}
		}()
	}
	start := time.Now()
	run("follower", follower, 3*time.Second, 2*time.Second, 10*time.Minute)
	run("leader", leader, 4*time.Second, 7*time.Minute)
	waited := make(chan struct{})
	go func() { wg.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the linked clocks stalled; wake-ups so far %v", got)
	}
	want := []string{"follower 3s", "leader 4s", "follower 5s", "leader 7m4s", "follower 10m5s"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("order of wake-ups = %v, want %v", got, want)
	}
	if wall := time.Since(start); wall > 5*time.Second {
		t.Errorf("10 minutes of linked virtual time took %s of wall time", wall)
	}
}

// linkedServer is a loopback listener for a follower's server, and the linked clocks.
func linkedServer(t *testing.T) (ln net.Listener, leader, follower *Clock) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	leader, follower, _ = linked(t, ln.Addr().String())
	return ln, leader, follower
}

// A Go client on the leader and a server on the follower hand a request over as they do on
// one clock: the client's 3 s timeout does not fire during the handler's 1 s wait, and a
// 500 ms one does, at 500 ms.
func TestLinkedRequestHandOver(t *testing.T) {
	ln, leader, follower := linkedServer(t)
	addr := ln.Addr().String()
	seen := make(chan time.Time, 1) // the follower's time as a handler begins
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		task := NewTask(follower)
		defer task.End()
		seen <- follower.Now()
		Started(r.Context())
		_ = task.Sleep(r.Context(), time.Second)
		Answered(r.Context())
		w.WriteHeader(http.StatusOK)
	})}
	Serve(srv)
	go srv.Serve(Listen(ln, follower))
	defer srv.Close()

	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: DialContext((&net.Dialer{}).DialContext)}}
	probe := func(timeout time.Duration) (time.Duration, error) {
		task := NewTask(leader)
		defer task.End()
		ctx, cancel := context.WithCancel(WithTask(context.Background(), task))
		defer cancel()
		// Jumps the follower takes no part in: it must still read the time they reach.
		if err := task.Sleep(ctx, 250*time.Millisecond); err != nil {
			return 0, err
		}
		tm := leader.AfterFunc(timeout, func() { task.Wake(); cancel() })
		defer tm.Stop()
		begin := leader.Now()
		var err error
		RequestDuring(ctx, leader, addr, func() {
			var req *http.Request
			req, err = http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
			if err != nil {
				return
			}
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
		select {
		case at := <-seen:
			if !at.Equal(begin) {
				t.Errorf("the follower's handler began at %s, the leader sent at %s", at.Sub(t0), begin.Sub(t0))
			}
		default:
			t.Error("no handler began")
		}
		return leader.Now().Sub(begin), err
	}
	for i := range 5 {
		took, err := probe(3 * time.Second)
		if err != nil || took != time.Second {
			t.Fatalf("probe %d with a 3 s timeout: took %s, err %v; want 1s, nil", i, took, err)
		}
	}
	took, err := probe(500 * time.Millisecond)
	if err == nil || took != 500*time.Millisecond {
		t.Fatalf("probe with a 500 ms timeout: took %s, err %v; want a timeout at 500ms", took, err)
	}
}

// Two things due at one instant, one on each clock, happen leader first on every run.
func TestLinkedTiesGoToTheLeaderFirst(t *testing.T) {
	leader, follower, _ := linked(t, "127.0.0.1:1")
	for i := range 20 {
		var mu sync.Mutex
		var order []string
		var wg sync.WaitGroup
		for _, side := range []struct {
			name string
			c    *Clock
		}{{"follower", follower}, {"leader", leader}} {
			task := NewTask(side.c)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer task.End()
				_ = task.Sleep(context.Background(), time.Second)
				mu.Lock()
				order = append(order, side.name)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if fmt.Sprint(order) != "[leader follower]" {
			t.Fatalf("round %d: wake-ups at one instant in order %v, want the leader's first", i, order)
		}
	}
}

func TestLinkReportsTheFollowersExit(t *testing.T) {
	_, follower, link := linked(t, "127.0.0.1:1")
	if _, ok := link.Exited(); ok {
		t.Fatal("exited before the follower said so")
	}
	follower.Exit(137)
	follower.Close()
	select {
	case <-link.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the link did not end when the follower closed")
	}
	if code, ok := link.Exited(); !ok || code != 137 {
		t.Fatalf("Exited() = %d, %v; want 137, true", code, ok)
	}
}

// A follower that announces its exit and leaves at once closes ExitAnnounced and Done
// together; whoever looks after both must still get the code (the tool sees the exit at its
// instant, not when Docker reports it). A select over the two lost it about half the time.
func TestWaitExitAfterTheStreamEnded(t *testing.T) {
	for i := range 50 {
		_, follower, link := linked(t, "127.0.0.1:1")
		follower.Exit(137)
		follower.Close()
		<-link.Done()
		code, announced, err := link.WaitExit(context.Background())
		if err != nil || !announced || code != 137 {
			t.Fatalf("run %d: WaitExit() = %d, %v, %v; want 137, true, nil", i, code, announced, err)
		}
	}
}

func TestWaitExitWithoutAnAnnouncement(t *testing.T) {
	_, follower, link := linked(t, "127.0.0.1:1")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := link.WaitExit(ctx); err == nil {
		t.Fatal("WaitExit on an ended context returned no error")
	}
	follower.Close()
	code, announced, err := link.WaitExit(context.Background())
	if err != nil || announced || code != 0 {
		t.Fatalf("WaitExit() = %d, %v, %v after a silent end; want 0, false, nil", code, announced, err)
	}
}

// The announced exit holds the clock until its consumer has seen it, however long the
// consumer takes: a wall-time bound on the hold let a tool starved of CPU on a loaded host
// see the exit only at its next check.
func TestExitHoldWaitsForASlowConsumer(t *testing.T) {
	leader, follower, link := linked(t, "127.0.0.1:1")
	follower.Exit(137)
	<-link.ExitAnnounced()
	follower.Close()
	<-link.Done()
	task := NewTask(leader)
	slept := make(chan error, 1)
	go func() {
		defer task.End()
		slept <- task.Sleep(context.Background(), 30*time.Second)
	}()
	time.Sleep(1500 * time.Millisecond) // the consumer has not run yet
	if got := leader.Now().Sub(t0); got != 0 {
		t.Fatalf("the clock moved to +%s before the exit was seen", got)
	}
	link.ExitSeen()
	select {
	case err := <-slept:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the clock did not move once the exit was seen")
	}
	if got := leader.Now().Sub(t0); got != 30*time.Second {
		t.Fatalf("clock at +%s after the sleep, want +30s", got)
	}
}

// The join instant is the clock's time at the hello, not at whatever later moment a
// goroutine woken by Joined reads the clock: nothing holds the clock after the hello.
func TestJoinedAtIsTheHelloInstant(t *testing.T) {
	leader, _, link := linked(t, "127.0.0.1:1")
	<-link.Joined()
	fired := make(chan struct{})
	leader.AfterFunc(50*time.Millisecond, func() { close(fired) })
	<-fired
	at, ok := link.JoinedAt()
	if !ok || !at.Equal(t0) {
		t.Fatalf("JoinedAt = %v, %v; want %v (the hello), the clock is at %v", at, ok, t0, leader.Now())
	}
}

// goneConn is a leader's end of a stream whose follower has gone: every write fails, while
// what the follower sent before it went is still in the socket, read as the test feeds it.
type goneConn struct{ r *io.PipeReader }

func (c goneConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c goneConn) Write(p []byte) (int, error) { return 0, syscall.EPIPE }
func (c goneConn) Close() error                { return c.r.Close() }

// A follower that announced its exit and ended its process makes the leader's next question
// fail to write before the leader has read the announcement. Counting it idle then let the
// clock jump past the exit to a tool's next probe (a container's exit seen 4-19 s late
// under load); the leader is idle only once it has read the stream to its end.
func TestAFailedQuestionWaitsForWhatTheFollowerSent(t *testing.T) {
	leader := New(t0, Options{})
	defer leader.Close()
	r, w := io.Pipe()
	link := leader.Lead(goneConn{r}, "127.0.0.1:1")
	defer link.Close()
	if _, err := io.WriteString(w, "H\n"); err != nil {
		t.Fatal(err)
	}
	<-link.Joined()
	task := NewTask(leader)
	go func() {
		defer task.End()
		_ = task.Sleep(context.Background(), 30*time.Second)
	}()
	time.Sleep(100 * time.Millisecond) // the leader asks, its write fails, the exit is unread
	if _, err := io.WriteString(w, "X 137\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	code, announced, err := link.WaitExit(context.Background())
	if err != nil || !announced || code != 137 {
		t.Fatalf("WaitExit() = %d, %v, %v; want 137, true, nil", code, announced, err)
	}
	if got := leader.Now().Sub(t0); got != 0 {
		t.Fatalf("the exit was read with the clock at +%s; want +0s (the follower's exit)", got)
	}
	link.ExitSeen()
}

// A follower whose process is busy outside its clock (a signal on its way to the server's
// handler) holds the leader even while the follower itself reports idle.
func TestWatchProcessHoldsTheLeader(t *testing.T) {
	leader, _, link := linked(t, "127.0.0.1:1")
	<-link.Joined()
	var busy atomic.Bool
	busy.Store(true)
	link.WatchProcess(busy.Load)
	fired := make(chan struct{})
	leader.AfterFunc(time.Second, func() { close(fired) })
	select {
	case <-fired:
		t.Fatal("the clock moved while the follower's process was busy")
	case <-time.After(200 * time.Millisecond):
	}
	busy.Store(false)
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the clock did not move once the follower's process was quiet")
	}
}

// slowEOFConn learns of its end 100 ms of wall time late, as a client starved of CPU does.
type slowEOFConn struct{ net.Conn }

func (c slowEOFConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil {
		time.Sleep(100 * time.Millisecond)
	}
	return n, err
}

// A follower's server that dies with a request in its handler closes the connection: the
// leader's client must learn of it before time moves on, however late the handler or the
// client see the close, or the client's own timeout fires first (a container's death seen
// 0.84 s late beside CPU hogs).
func TestLinkedCloseReachesTheClientBeforeTimeMoves(t *testing.T) {
	ln, leader, follower := linkedServer(t)
	addr := ln.Addr().String()
	srv := &http.Server{Handler: Handle(follower, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The death cuts the wait short once net/http's background read has seen the close:
		// here 100 ms of wall time late, as on a loaded host.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			<-r.Context().Done()
			time.Sleep(100 * time.Millisecond)
			cancel()
		}()
		_ = TaskFrom(r.Context()).Sleep(ctx, 5*time.Second)
	}))}
	Serve(srv)
	go srv.Serve(Listen(ln, follower))
	defer srv.Close()
	death := follower.AfterFunc(500*time.Millisecond, func() { srv.Close() })
	defer death.Stop()

	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return slowEOFConn{nc}, nil
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: DialContext(dial)}}
	within(t, 10*time.Second, func() {
		task := NewTask(leader)
		defer task.End()
		ctx, cancel := context.WithCancel(WithTask(context.Background(), task))
		defer cancel()
		tm := leader.AfterFunc(time.Second, func() { task.Wake(); cancel() })
		defer tm.Stop()
		var err error
		RequestDuring(ctx, leader, addr, func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/health", nil)
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				resp.Body.Close()
			}
		})
		if took := leader.Now().Sub(t0); err == nil || took != 500*time.Millisecond || errors.Is(err, context.Canceled) {
			t.Errorf("request ended at %s with %v; want the close at 500ms", took, err)
		}
	})
}
