package fakeserver

import (
	"context"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// vclient is a client task on a run's virtual clock: its requests carry a timeout in scenario
// time that, like a real client's, counts from before the dial.
type vclient struct {
	t     testing.TB
	clk   *vtime.Clock
	task  *vtime.Task
	ctx   context.Context
	httpc *http.Client
}

func newVClient(t testing.TB, clk *vtime.Clock) *vclient {
	task := vtime.NewTask(clk)
	t.Cleanup(task.End)
	return &vclient{t: t, clk: clk, task: task, ctx: vtime.WithTask(context.Background(), task),
		httpc: &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: vtime.DialContext((&net.Dialer{}).DialContext)}}}
}

// do sends one request; code is 0 when no answer came within timeout.
func (c *vclient) do(method, url string, timeout time.Duration) (code int, took time.Duration, resp *http.Response) {
	c.t.Helper()
	rctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	timer := c.clk.AfterFunc(timeout, func() { c.task.Wake(); cancel() })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(rctx, method, url, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	begin := c.clk.Now()
	vtime.RequestDuring(c.ctx, c.clk, req.URL.Host, func() {
		resp, err = c.httpc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	})
	took = c.clk.Since(begin)
	if err != nil {
		if rctx.Err() == nil {
			c.t.Fatalf("%s %s: %v", method, url, err)
		}
		return 0, took, nil
	}
	return resp.StatusCode, took, resp
}

func (c *vclient) sleepUntil(at time.Duration, start time.Time) {
	c.t.Helper()
	if err := c.task.Sleep(c.ctx, at-c.clk.Since(start)); err != nil {
		c.t.Fatal(err)
	}
}

// healthLatencies probes a ready server's /health n times with a 2 s client timeout and
// returns how long each 200 took, after checking that a 1 s client timeout never gets one.
func healthLatencies(t *testing.T, prof sglang.Profile, seed int64, n int) []time.Duration {
	clk := vtime.New(epoch, vtime.Options{})
	t.Cleanup(clk.Close)
	c := newVClient(t, clk)
	r := start(t, Config{Profile: prof, Clock: clk, Seed: seed})
	c.sleepUntil(10*time.Second, epoch) // the 2 s happy path is ready well before
	var lat []time.Duration
	for i := range n {
		for _, path := range []string{"/health", "/health_generate"} {
			if code, took, _ := c.do("GET", r.BaseURL()+path, time.Second); code != 0 {
				t.Fatalf("%s probe %d with a 1 s timeout: %d after %v, want no answer (SGLang answers after its 1 s sleep)", path, i, code, took)
			}
		}
		code, took, _ := c.do("GET", r.BaseURL()+"/health", 2*time.Second)
		if code != http.StatusOK {
			t.Fatalf("probe %d with a 2 s timeout: %d, want 200", i, code)
		}
		lat = append(lat, took)
	}
	return lat
}

func TestHealthLatencyIsSleepPlusOverhead(t *testing.T) {
	for _, prof := range []sglang.Profile{sglang.ProfileFor(sglang.EraB), sglang.ProfileFor(sglang.EraC)} {
		t.Run(prof.Version, func(t *testing.T) {
			lat := healthLatencies(t, prof, 7, 6)
			for i, d := range lat {
				if d < time.Second+DefaultHealthOverheadMin || d > time.Second+DefaultHealthOverheadMax {
					t.Errorf("probe %d answered after %v, want 1 s + %v..%v", i, d, DefaultHealthOverheadMin, DefaultHealthOverheadMax)
				}
			}
			if again := healthLatencies(t, prof, 7, 6); !slices.Equal(lat, again) {
				t.Errorf("seed 7 gave %v, then %v: the overhead must follow the seed", lat, again)
			}
			if other := healthLatencies(t, prof, 8, 6); slices.Equal(lat, other) {
				t.Errorf("seeds 7 and 8 both gave %v: the overhead is not drawn from the seed", lat)
			}
		})
	}
}

func TestHealthOverheadValidated(t *testing.T) {
	for _, b := range []Behavior{
		{HealthOverheadMin: -time.Millisecond, HealthOverheadMax: time.Millisecond},
		{HealthOverheadMin: 0, HealthOverheadMax: time.Millisecond},
		{HealthOverheadMin: 5 * time.Millisecond, HealthOverheadMax: time.Millisecond},
	} {
		cfg := Config{Behavior: b, Timeline: HappyPath(epoch, sglang.ProfileFor(sglang.EraC), 2*time.Second, 0, 0)}
		if s, err := Start(context.Background(), cfg); err == nil {
			_ = s.Stop(context.Background())
			t.Errorf("overhead %v..%v accepted, want an error", b.HealthOverheadMin, b.HealthOverheadMax)
		}
	}
}

// A check whose client left (a 1 s probe timeout) still runs to its end on the server, as
// uvicorn does not cancel SGLang's handler: it logs "Health check failed" after the health
// timeout and sets UnHealthy, and once the scheduler is back a check whose client left again
// still passes and sets the status back. No access line is printed for either.
func TestAbandonedHealthCheckFinishes(t *testing.T) {
	for _, prof := range []sglang.Profile{sglang.ProfileFor(sglang.EraA), sglang.ProfileFor(sglang.EraB), sglang.ProfileFor(sglang.EraC)} {
		t.Run(prof.Version, func(t *testing.T) {
			clk := vtime.New(epoch, vtime.Options{})
			t.Cleanup(clk.Close)
			c := newVClient(t, clk)
			r := start(t, Config{Profile: prof, Clock: clk, Seed: 3,
				Faults: []fault.Spec{{Kind: fault.WedgeScheduler, At: 10 * time.Second, For: 30 * time.Second}}})
			c.sleepUntil(12*time.Second, epoch)
			if code, _, _ := c.do("GET", r.BaseURL()+"/health_generate", time.Second); code != 0 {
				t.Fatalf("a wedged scheduler's check answered %d within 1 s", code)
			}
			c.sleepUntil(31*time.Second, epoch)
			failed := "Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 16:30:12. last_heartbeat time: 16:30:"
			if strings.Contains(string(mustLogs(t, r.Server)), "Health check failed") {
				t.Fatal("the abandoned check failed before its 20 s ran out")
			}
			c.sleepUntil(33*time.Second, epoch)
			if logs := string(mustLogs(t, r.Server)); !strings.Contains(logs, failed) {
				t.Fatalf("no %q line after the abandoned check's 20 s:\n%s", failed, logs)
			}
			unhealthy := journalStates(mustJournal(t, r.Server), StateUnhealthy)
			if len(unhealthy) != 1 || unhealthy[0] != 32*time.Second {
				t.Fatalf("unhealthy at %v, want once at 32s (tic 12 s + 20 s)", unhealthy)
			}
			c.sleepUntil(45*time.Second, epoch) // the scheduler resumed at 40 s
			if code, _, _ := c.do("GET", r.BaseURL()+"/health_generate", time.Second); code != 0 {
				t.Fatalf("a check answered %d within 1 s; it takes 1 s plus overhead", code)
			}
			c.sleepUntil(47*time.Second, epoch)
			recs := mustJournal(t, r.Server)
			healthy := journalStates(recs, StateHealthy)
			switch {
			case !prof.HealthGatedOnStatus:
				if len(healthy) != 0 {
					t.Errorf("era A has no status to set back, got healthy at %v", healthy)
				}
			case len(healthy) != 1 || healthy[0] <= 46*time.Second || healthy[0] > 46*time.Second+DefaultHealthOverheadMax:
				t.Errorf("healthy at %v, want once just after 46 s (the abandoned check passed)", healthy)
			}
			var abandoned int
			for _, rec := range recs {
				if rec.Type == RecRequest && !rec.Internal {
					if rec.Outcome != "abandoned" {
						t.Errorf("request %s %s at %v: outcome %q status %d, want abandoned", rec.Method, rec.Route, rec.At, rec.Outcome, rec.Status)
					}
					abandoned++
				}
			}
			if logs := string(mustLogs(t, r.Server)); abandoned != 2 || strings.Contains(logs, `"GET /health`) {
				t.Errorf("%d abandoned requests (want 2) and no access line for them:\n%s", abandoned, logs)
			}
		})
	}
}

// journalStates lists when the journal recorded state.
func journalStates(recs []Record, state string) []time.Duration {
	var at []time.Duration
	for _, rec := range recs {
		if rec.Type == RecState && rec.State == state {
			at = append(at, rec.At)
		}
	}
	return at
}

// A gate's answer is ready before the handler would go idle: it is answered at the instant
// of the request even when the handler's goroutine is kept off the CPU, not at the client's
// timeout after a jump.
func TestGateAnswerDoesNotWaitForAGoroutine(t *testing.T) {
	clk := vtime.New(epoch, vtime.Options{})
	t.Cleanup(clk.Close)
	c := newVClient(t, clk)
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraA), Clock: clk, Seed: 1})
	c.sleepUntil(10*time.Second, epoch)
	testHookHealthIdle = func() { time.Sleep(50 * time.Millisecond) }
	t.Cleanup(func() { testHookHealthIdle = nil })
	for i := range 3 {
		if code, took, _ := c.do("GET", r.BaseURL()+"/health", 5*time.Second); code != http.StatusOK || took != 0 {
			t.Fatalf("probe %d: %d after %v, want era A's unconditional 200 at once", i, code, took)
		}
	}
}
