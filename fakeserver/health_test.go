package fakeserver

import (
	"context"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

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
	r := start(t, Config{Profile: prof, Clock: clk, Seed: seed})
	c := newVClient(t, clk)
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
