package fakeserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
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
			if GroundTruth(mustJournal(t, r.Server)).ReadyOK != c.ready {
				t.Errorf("ready = %v, want %v", !c.ready, c.ready)
			}
		})
	}
}

func TestRequestFaults(t *testing.T) {
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Faults: []fault.Spec{
		{Kind: fault.FailRequests, Route: "/v1/models", Count: 2, Status: 429},
		{Kind: fault.Flap, At: 20 * time.Second, Period: 40 * time.Second},
	}})
	r.waitState(t, StateReady)
	for i, want := range []int{429, 429, 200} {
		if got, body := call(t, r.BaseURL(), "GET", "/v1/models", ""); got != want {
			t.Fatalf("request %d: %d want %d (%s)", i, got, want, body)
		}
	}
	// Flap: healthy for 40 s from 20 s, then down for 40 s.
	for r.Clock().Since(epoch) < 61*time.Second {
		time.Sleep(time.Millisecond)
	}
	if got, _ := call(t, r.BaseURL(), "GET", "/health", ""); got != 503 {
		t.Fatalf("flap down phase: /health %d, want 503", got)
	}
	for r.Clock().Since(epoch) < 101*time.Second {
		time.Sleep(time.Millisecond)
	}
	if got, _ := call(t, r.BaseURL(), "GET", "/health", ""); got != 200 {
		t.Fatalf("flap up phase: /health %d, want 200", got)
	}
}
