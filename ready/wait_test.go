package ready

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
	"github.com/jonboulle/clockwork"
)

// fakeProc is a Process the test ends.
type fakeProc struct {
	done chan struct{}
	st   ExitStatus
}

func (f *fakeProc) Done() <-chan struct{} { return f.done }
func (f *fakeProc) Status() ExitStatus    { return f.st }

// drive advances the fake clock in small steps until Wait returns, and returns what it
// returned with the clock time it returned at.
func drive(t *testing.T, clk *clockwork.FakeClock, spec Spec, during func(now time.Duration)) (Report, error, time.Duration) {
	t.Helper()
	type res struct {
		r   Report
		err error
	}
	out := make(chan res, 1)
	go func() {
		r, err := Wait(context.Background(), spec)
		out <- res{r, err}
	}()
	limit := time.Now().Add(20 * time.Second)
	for time.Now().Before(limit) {
		select {
		case r := <-out:
			return r.r, r.err, clk.Since(t0)
		default:
		}
		if during != nil {
			during(clk.Since(t0))
		}
		clk.Advance(50 * time.Millisecond)
		time.Sleep(300 * time.Microsecond)
	}
	t.Fatal("Wait did not return within 20 s of wall time")
	return Report{}, nil, 0
}

// The server answers 503 until 10 s, then 200 with an empty body (SGLang's /health). The
// claim time is exact: Wait runs on a virtual clock that the server's listener is on too, so
// the clock moves only while no probe is in flight, however slowly the machine answers. (On a
// fake clock stepped in wall time while a timer waited, a probe's own timeout timer let it
// step during slow probes: claims of 11.25 s and 11.3 s under load failed the bound below.)
func TestWaitReadyAfterWarmup(t *testing.T) {
	clk := vtime.New(t0, vtime.Options{})
	defer clk.Close()
	// Wait's loop runs as this task: busy from here, it keeps the clock at 0 s until Wait waits.
	task := vtime.NewTask(clk)
	defer task.End()
	var up atomic.Bool
	up10 := clk.AfterFunc(10*time.Second, func() { up.Store(true) })
	defer up10.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: vtime.Handle(clk, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" && up.Load() {
			w.WriteHeader(200) // empty body, as SGLang
			return
		}
		w.WriteHeader(503)
	}))}
	vtime.Serve(srv)
	go func() { _ = srv.Serve(vtime.Listen(ln, clk)) }()
	defer srv.Close()

	var events []Progress
	ctx, cancel := context.WithTimeout(vtime.WithTask(t.Context(), task), 20*time.Second)
	defer cancel()
	rep, err := Wait(ctx, Spec{Endpoint: "http://" + ln.Addr().String(), Clock: clk, Interval: time.Second,
		Observe: func(p Progress) { events = append(events, p) }})
	if err != nil || rep.Code != CodeReady {
		t.Fatalf("Wait = %v %+v, want ready", err, rep)
	}
	last := events[len(events)-1]
	if last.Event != "verdict" || *last.Code != 0 {
		t.Fatalf("last event %+v, want a ready verdict", last)
	}
	// Ready at 10 s: one probe interval finds it, the confirming round goes at once.
	when := time.Duration(last.T * float64(time.Second))
	t.Logf("ready claimed at %s", when)
	if when < 10*time.Second || when > 11*time.Second+200*time.Millisecond {
		t.Errorf("ready claimed at %s, want within one interval of 10s", when)
	}
}

func TestWaitFailsFastOnFatalLineAndExit(t *testing.T) {
	l := freePortURL(t) // nothing listens: refused throughout
	tests := []struct {
		name string
		log  string
		exit bool
		want Code
	}{
		{"fatal line, process lingers (S5)", "[2026-03-01 12:00:05 TP0] Init torch distributed begin.\n[2026-03-01 12:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):\nRuntimeError: NCCL error: unhandled system error\n", false, CodeFatalLog},
		{"process exits (S4)", "[2026-03-01 12:00:05 TP0] Load weight begin. avail mem=30.00 GB\n", true, CodeExited},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clockwork.NewFakeClockAt(t0)
			pr, pw := io.Pipe()
			proc := &fakeProc{done: make(chan struct{}), st: ExitStatus{Code: 1}}
			spec := Spec{Endpoint: l, Clock: clk, Log: pr, Process: proc, Timeout: 10 * time.Minute}
			written := false
			rep, err, when := drive(t, clk, spec, func(now time.Duration) {
				if !written && now >= 5*time.Second {
					written = true
					go func() { io.WriteString(pw, tc.log) }()
				}
				if tc.exit && now >= 8*time.Second && proc.done != nil {
					select {
					case <-proc.done:
					default:
						close(proc.done)
						pw.Close()
					}
				}
			})
			pw.Close()
			if ExitCode(err) != int(tc.want) || rep.Code != tc.want {
				t.Fatalf("Wait = %v (%+v), want code %d", err, rep, tc.want)
			}
			if when > 12*time.Second {
				t.Errorf("failure reported at %s: want within 2 s of the fatal line or exit, not at the 10 min timeout", when)
			}
			if tc.want == CodeFatalLog && !strings.Contains(rep.Cause, "NCCL error") {
				t.Errorf("cause %q does not quote the NCCL error", rep.Cause)
			}
			if len(rep.Lines) == 0 {
				t.Error("no log lines in the report")
			}
		})
	}
}

func TestWaitTimeoutIs124(t *testing.T) {
	clk := clockwork.NewFakeClockAt(t0)
	rep, err, when := drive(t, clk, Spec{Endpoint: freePortURL(t), Clock: clk, Timeout: 30 * time.Second}, nil)
	if ExitCode(err) != 124 || rep.Code != CodeTimeout {
		t.Fatalf("Wait = %v, want timeout", err)
	}
	if when < 30*time.Second || when > 31*time.Second {
		t.Errorf("timed out at %s, want 30s", when)
	}
	if rep.Probes != 0 {
		// Refused connections are not HTTP requests.
		t.Errorf("%d HTTP requests sent to a closed port", rep.Probes)
	}
}

func freePortURL(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	return u
}

// Era A answers /health 200 throughout warmup; only the log says the warmup is running. A
// follower that polls must not lose that race to a fast probe: Wait syncs the log before a
// healthy round counts. The follower here would not look again for an hour on its own.
func TestWaitSyncsTheLogBeforeAHealthyProbeCounts(t *testing.T) {
	var bound atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bound.Load() {
			w.WriteHeader(503)
			return
		}
		w.WriteHeader(200)
	}))
	defer srv.Close()
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	appendLine := func(line string) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := FollowFile(ctx, path, time.Hour)
	defer log.Close()
	clk := clockwork.NewFakeClockAt(t0)
	var uvicorn, fired bool
	rep, err, when := drive(t, clk, Spec{Endpoint: srv.URL, Clock: clk, Interval: time.Second, Log: log},
		func(now time.Duration) {
			if now >= 5*time.Second && !uvicorn {
				uvicorn = true
				appendLine("[2025-02-17 05:20:26] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)")
				bound.Store(true)
			}
			if now >= 10*time.Second && !fired {
				fired = true
				appendLine("[2025-02-17 05:20:31] The server is fired up and ready to roll!")
			}
		})
	if err != nil || rep.Code != CodeReady {
		t.Fatalf("Wait = %v %+v, want ready", err, rep)
	}
	if when < 10*time.Second || when > 11*time.Second+200*time.Millisecond {
		t.Fatalf("ready claimed at %s, want within one interval after the ready line at 10s (the warmup ran from 5s)", when)
	}
}
