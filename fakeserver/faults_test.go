package fakeserver

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

func TestFaultEndings(t *testing.T) {
	cases := []struct {
		name     string
		f        fault.Spec
		code     int
		line     string
		preBind  int // status of /health before the timeline binds (refused = none)
		ready    bool
		deadLine string
	}{
		{"errno98", fault.Spec{Kind: fault.Errno98}, 1, "[Errno 98] error while attempting to bind on address ('127.0.0.1', ", closed, false, ""},
		{"stale listener answers 200", fault.Spec{Kind: fault.StaleListener}, 1, "address already in use", 200, false, ""},
		{"warmup through proxy", fault.Spec{Kind: fault.WarmupProxyFailure, For: 30 * time.Second}, 137, "Initialization failed. warmup error: Traceback", refused, false, "AssertionError: res=<Response [502]>, res.text=''"},
		{"crash while loading", fault.Spec{Kind: fault.Crash, AfterLine: "Load weight end", Message: "torch.OutOfMemoryError: CUDA out of memory."}, 137, "Received sigquit from a child process.", refused, false, "torch.OutOfMemoryError: CUDA out of memory."},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraB), Faults: []fault.Spec{c.f},
				Timeline: HappyPath(epoch, sglang.ProfileFor(sglang.EraB), 200*time.Second, 0, 0)})
			if got, _ := call(t, r.BaseURL(), "GET", "/health", ""); got != c.preBind {
				t.Errorf("before bind: /health %d, want %d", got, c.preBind)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			code, err := r.Wait(ctx)
			if err != nil || code != c.code {
				t.Fatalf("exit %d (%v), want %d", code, err, c.code)
			}
			logs := string(mustLogs(t, r.Server))
			for _, want := range []string{c.line, c.deadLine} {
				if !strings.Contains(logs, want) {
					t.Errorf("log lacks %q:\n%s", want, logs)
				}
			}
			if (GroundTruth(mustJournal(t, r.Server)).Ready != nil) != c.ready {
				t.Errorf("ready = %v, want %v", !c.ready, c.ready)
			}
		})
	}
}

func TestRequestFaults(t *testing.T) {
	// On virtual time the test is a task of the run: each request is answered at exactly the
	// scenario instant the test woke at, however loaded the machine is.
	clk := vtime.New(epoch, vtime.Options{})
	t.Cleanup(clk.Close)
	task := vtime.NewTask(clk)
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Clock: clk, Faults: []fault.Spec{
		{Kind: fault.FailRequests, Route: "/v1/models", Count: 2, Status: 429},
		{Kind: fault.Flap, At: 20 * time.Second, Period: 40 * time.Second},
	}})
	defer task.End()
	ctx := vtime.WithTask(context.Background(), task)
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: vtime.DialContext((&net.Dialer{}).DialContext)}}
	get := func(path string) int {
		req, _ := http.NewRequestWithContext(ctx, "GET", r.BaseURL()+path, nil)
		var (
			resp *http.Response
			err  error
		)
		vtime.RequestDuring(ctx, clk, req.URL.Host, func() { resp, err = client.Do(req) })
		if err != nil {
			t.Fatalf("GET %s at %v: %v", path, clk.Since(epoch), err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	sleepUntil := func(at time.Duration) {
		if err := task.Sleep(ctx, at-clk.Since(epoch)); err != nil {
			t.Fatal(err)
		}
	}
	sleepUntil(10 * time.Second) // the 2 s happy path is ready well before
	for i, want := range []int{429, 429, 200} {
		if got := get("/v1/models"); got != want {
			t.Fatalf("request %d: %d want %d", i, got, want)
		}
	}
	// Flap: healthy for 40 s from 20 s, then down for 40 s, then healthy again.
	for _, c := range []struct {
		at   time.Duration
		want int
	}{{59 * time.Second, 200}, {61 * time.Second, 503}, {99 * time.Second, 503}, {101 * time.Second, 200}} {
		sleepUntil(c.at)
		if got := get("/health"); got != c.want {
			t.Fatalf("flap at %v: /health %d, want %d", c.at, got, c.want)
		}
	}
}

func TestRedirectCarriesLocation(t *testing.T) {
	clk := vtime.New(epoch, vtime.Options{})
	t.Cleanup(clk.Close)
	task := vtime.NewTask(clk)
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Clock: clk, Faults: []fault.Spec{
		{Kind: fault.FailRequests, Route: "/health", Status: 302, Location: "/v1/models"},
	}})
	defer task.End()
	ctx := vtime.WithTask(context.Background(), task)
	if err := task.Sleep(ctx, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, follow := range []bool{false, true} {
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: vtime.DialContext((&net.Dialer{}).DialContext)}}
		if !follow {
			client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		}
		req, _ := http.NewRequestWithContext(ctx, "GET", r.BaseURL()+"/health", nil)
		var (
			resp *http.Response
			err  error
		)
		vtime.RequestDuring(ctx, clk, req.URL.Host, func() { resp, err = client.Do(req) })
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want, loc := 302, "/v1/models"
		if follow {
			want, loc = 200, ""
		}
		if resp.StatusCode != want || resp.Header.Get("Location") != loc {
			t.Errorf("follow=%v: %d Location %q, want %d %q", follow, resp.StatusCode, resp.Header.Get("Location"), want, loc)
		}
	}
}
