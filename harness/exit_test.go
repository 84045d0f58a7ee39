package harness

import (
	"context"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
)

// A Go tool sees the server's exit at the instant it happened on virtual time, however late
// anything watching Done runs: here Done closes 200 ms of wall time after the exit, long after
// the clock could have moved on to compose's next check (13 s after cuda-oom-capture's crash).
// Exit hooks run in the exit's own clock step, so the claim is at 47 s on every run.
func TestExitSeenAtItsInstant(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close() // nothing listens: every probe is refused, as after a crash

	const crash = 47 * time.Second
	for _, tc := range []struct {
		name string
		wait WaitFunc
		want string
	}{
		{"compose", Healthcheck{}.Wait, "container exited (137)"},
		{"kubelet", Pod{Startup: &Probe{Period: 10 * time.Second, FailureThreshold: 60}}.Wait, "exited with code 137"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			epoch := time.Unix(1_700_000_000, 0)
			clk := vtime.New(epoch, vtime.Options{})
			defer clk.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			var exits exitNotice
			done := make(chan struct{})
			srv := vtime.NewTask(clk)
			go func() {
				defer srv.End()
				if srv.Sleep(ctx, crash) != nil {
					return
				}
				exits.fire(137)
				go func() { // a watcher of Done that the scheduler runs late
					time.Sleep(200 * time.Millisecond)
					close(done)
				}()
			}()
			exited := func() (int, bool) {
				select {
				case <-done:
					return 137, true
				default:
					return 0, false
				}
			}
			task := vtime.NewTask(clk)
			defer task.End()
			env := Env{Clock: clk, URL: "http://127.0.0.1:" + strconv.Itoa(port), Host: "127.0.0.1", Port: port,
				Exited: exited, Done: done, OnExit: exits.OnExit}
			err := tc.wait(vtime.WithTask(ctx, task), env)
			at := clk.Since(epoch)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("wait = %v, want an error with %q", err, tc.want)
			}
			if at != crash {
				t.Fatalf("the exit was seen at %s, want %s (the instant of the crash)", at, crash)
			}
		})
	}
}

// OnExit after the exit runs at once with the code; fire counts once.
func TestExitNoticeLateRegistration(t *testing.T) {
	var n exitNotice
	var got []int
	n.OnExit(func(c int) { got = append(got, c) })
	n.fire(1)
	n.fire(2)
	n.OnExit(func(c int) { got = append(got, c) })
	if len(got) != 2 || got[0] != 1 || got[1] != 1 {
		t.Fatalf("got %v, want [1 1]", got)
	}
}

// exitAt is a server that exits at a virtual instant and whose Done watcher runs late.
type exitAt struct {
	clk   *vtime.Clock
	exits exitNotice
	done  chan struct{}
}

func (e *exitAt) Clock() replay.Clock     { return e.clk }
func (e *exitAt) Done() <-chan struct{}   { return e.done }
func (e *exitAt) OnExit(f func(code int)) { e.exits.OnExit(f) }
func (e *exitAt) Exited() (int, bool) {
	e.exits.mu.Lock()
	defer e.exits.mu.Unlock()
	return e.exits.code, e.exits.fired
}

// The {{.PID}} stand-in is gone at the instant of the exit: a tool that checks it the next
// second finds no process, however late the goroutine watching Done runs (here 200 ms of
// wall time). Before, the stand-in was killed only once Done was seen, and the clock could
// move on meanwhile: sglang-popen saw s6-warmup-kill's exit one 10 s check apart between
// two runs.
func TestStandInGoneAtTheExit(t *testing.T) {
	rd, err := NewRunDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	epoch := time.Unix(1_700_000_000, 0)
	clk := vtime.New(epoch, vtime.Options{})
	defer clk.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := &exitAt{clk: clk, done: make(chan struct{})}
	stop, pid, err := standIn(srv, rd, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	const crash = 26 * time.Second
	st := vtime.NewTask(clk)
	go func() {
		defer st.End()
		if st.Sleep(ctx, crash) != nil {
			return
		}
		srv.exits.fire(137)
		go func() {
			time.Sleep(200 * time.Millisecond)
			close(srv.done)
		}()
	}()
	tool := vtime.NewTask(clk)
	defer tool.End()
	if err := tool.Sleep(ctx, crash+time.Second); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Fatalf("the stand-in %d still runs at %s, 1s after the exit", pid, clk.Since(epoch))
	}
}

// A Go tool that works without ever waiting holds its clock where it is, so the harness limit
// cannot fall due: once the clock has stood still while the tool worked for stallWork it is
// stopped and scored hung, and the claim says what the clock waited for.
func TestGoToolThatNeverWaitsIsStopped(t *testing.T) {
	defer func(d time.Duration) { stallWork = d }(stallWork)
	stallWork = time.Second
	spin := Tool{Name: "spin", Wait: func(ctx context.Context, env Env) error {
		for ctx.Err() == nil {
			time.Sleep(time.Millisecond) // real time: the clock never hears of it
		}
		return ctx.Err()
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, happyCase(), spin)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Verdict != Hung {
		t.Fatalf("verdict %s (%s), want %s", r.Verdict, r.Reason, Hung)
	}
	if !strings.Contains(r.Claim.Detail, "of wall time while the tool worked") || !strings.Contains(r.Claim.Detail, "work in progress: 1,") {
		t.Errorf("claim detail %q does not say that the tool worked and what the clock waited for", r.Claim.Detail)
	}
	if wall := time.Since(begin); wall > 10*time.Second {
		t.Errorf("stopped after %s of wall time, want a few seconds", wall)
	}
}

// A clock held by something other than the tool (a server that stopped answering) is not the
// tool's fault: a tool that waits on the clock all the while is not scored hung, however long
// the clock stands; the run ends with an error that says what held it.
func TestClockHeldByAnotherIsNotTheToolsHang(t *testing.T) {
	defer func(w, d time.Duration) { stallWork, stallWall = w, d }(stallWork, stallWall)
	stallWork, stallWall = time.Second, 4*time.Second
	patient := Tool{Name: "patient", Wait: func(ctx context.Context, env Env) error {
		release := env.Clock.(*vtime.Clock).Hold() // the server's side: the clock stops
		defer release()
		return vtime.Sleep(ctx, env.Clock, time.Minute)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, happyCase(), patient)
	if r.Err == nil || !strings.Contains(r.Err.Error(), "while the tool did not work") || !strings.Contains(r.Err.Error(), "something else holds it") {
		t.Fatalf("verdict %s, error %v; want an error saying something other than the tool held the clock", r.Verdict, r.Err)
	}
}

// A shell tool that busy-loops without a wait is stopped once its processes have used
// stallWork of CPU with the clock standing still, and scored hung.
func TestShellToolThatNeverWaitsIsStopped(t *testing.T) {
	needShell(t, Virtual)
	defer func(d time.Duration) { stallWork = d }(stallWork)
	stallWork = time.Second
	spin := Tool{Name: "spin", Command: "while :; do :; done", Interval: time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, happyCase(), spin)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if r.Verdict != Hung || !strings.Contains(r.Claim.Detail, "while the tool worked") || !strings.Contains(r.Claim.Detail, "of CPU") {
		t.Fatalf("verdict %s, claim %+v; want hung, stopped for the CPU it used", r.Verdict, r.Claim)
	}
}
