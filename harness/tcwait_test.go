package harness

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/truth"
)

// catalogueCase compiles a catalogue scenario with seed 1.
func catalogueCase(t *testing.T, name string) Case {
	t.Helper()
	s, err := scenarios.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCase(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestTCHTTPRows runs the testcontainers ForHTTP rows on virtual time: how the strategy is
// attached sets when it gives up (WithWaitStrategy's 60 s deadline over the 15-minute startup
// timeout), a dead container ends it at once, and era A's unconditional 200 is taken the
// moment the port opens.
func TestTCHTTPRows(t *testing.T) {
	// WaitingFor with a startup timeout: the tc-http row's strategy, with a limit short enough
	// for this test (15 minutes of 100 ms polls take a minute of wall time here).
	waitingFor := Tool{Name: "tc-http-100s", Wait: TCWait(TCHTTP{Path: "/health", StartupTimeout: 100 * time.Second}), Interval: time.Second}
	bound := func(tr truth.Truth) time.Duration { return *tr.Bound }
	cases := []struct {
		tool     Tool
		scenario string
		want     Verdict
		from     func(truth.Truth) time.Duration // nil: the scenario's start
		min, max time.Duration                   // when the claim falls, after from
	}{
		// Wedged at 86 s, never ready, never exits: only the strategy's own limit ends the wait,
		// which under WithWaitStrategy is 60 s, before the wedge: it gave up.
		{builtin(t, "tc-http-withwaitstrategy"), "s7b-stall-load", GaveUp, nil, 60 * time.Second, 60*time.Second + 10*time.Millisecond},
		{waitingFor, "s7b-stall-load", FailedSlow, nil, 100 * time.Second, 100*time.Second + 10*time.Millisecond},
		// A healthy era C /health answers 1 s plus 2-15 ms after the request: past the client's
		// 1 s timeout, every time.
		{builtin(t, "tc-http-withwaitstrategy"), "s0-happy-era-c", MissedReady, nil, 60 * time.Second, 60*time.Second + 10*time.Millisecond},
		// Exits 137 at 11 s: the next container check ends the wait.
		{builtin(t, "tc-http"), "s4-crash-during-load", FailedFast, nil, 11 * time.Second, 11*time.Second + 1200*time.Millisecond},
		{builtin(t, "tc-http-withwaitstrategy"), "s4-crash-during-load", FailedFast, nil, 11 * time.Second, 11*time.Second + 1200*time.Millisecond},
		// Era A's /health is a 200 from the moment the port opens: the first poll after it.
		{builtin(t, "tc-http"), "s0-happy-era-a", FalseReady, bound, 0, 150 * time.Millisecond},
		{builtin(t, "tc-http-withwaitstrategy"), "s0-happy-era-a", FalseReady, bound, 0, 150 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.tool.Name+"/"+c.scenario, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, catalogueCase(t, c.scenario), c.tool)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Verdict != c.want {
				t.Fatalf("verdict %s (%s), want %s; claim %+v", r.Verdict, r.Reason, c.want, r.Claim)
			}
			at := r.ClaimAfter()
			if c.from != nil {
				at -= c.from(r.Truth)
			}
			if at < c.min || at > c.max {
				t.Fatalf("claimed %s at %s (%s after the reference), want within [%s, %s] after it", r.Claim.Outcome, r.ClaimAfter(), at, c.min, c.max)
			}
		})
	}
}

// TestTCHTTPProbes checks the requests ForHTTP makes, in the journal of a server that binds
// at 20 s and answers 503 until it is ready: none sooner than two poll intervals in (one
// before the port mapping is read, one before the first request), one poll interval between
// the end of one and the start of the next, and one kept-alive connection for the quick 503s.
func TestTCHTTPProbes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Bound at once: a refused connection leaves no record.
	c := Case{Name: "quick", Timeline: fakeserver.HappyPath(epoch, sglang.ProfileFor(sglang.EraC), 0, 0, 0),
		Predicted: truth.Truth{Bound: truth.At(0), Ready: truth.At(1300 * time.Millisecond)}}
	tool := Tool{Name: "tc-http-10s", Wait: TCWait(TCHTTP{Path: "/health", StartupTimeout: 10 * time.Second}), Interval: time.Second}
	r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, c, tool)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	var probes []fakeserver.Record
	for _, rec := range r.Journal {
		if rec.Type == "request" && !rec.Internal && rec.Route == "/health" {
			probes = append(probes, rec)
		}
	}
	if len(probes) < 3 {
		t.Fatalf("%d probes in the journal, want at least 3", len(probes))
	}
	if first := probes[0].At - probes[0].Latency; first < 2*tcPoll {
		t.Errorf("first request at %s, want no sooner than %s", first, 2*tcPoll)
	}
	clients := map[string]int{}
	for i, p := range probes {
		if p.Status == http.StatusServiceUnavailable {
			clients[p.Client]++
		}
		if i == 0 || p.Outcome != "" || probes[i-1].Outcome != "" {
			continue // an abandoned request is journaled when the handler notices, not when the client left
		}
		prev := probes[i-1]
		if gap := p.At - p.Latency - prev.At; gap < tcPoll {
			t.Errorf("probe %d began %s after probe %d was answered, want >= %s", i, gap, i-1, tcPoll)
		}
	}
	if len(clients) != 1 {
		t.Errorf("the 503s came over %d connections (%v), want one kept alive", len(clients), clients)
	}
}

// TestTCHTTPClient checks ForHTTP's client on the real clock against plain servers: the
// proxy comes from the environment (and never serves loopback), and an answer slower than
// the 1 s client timeout never passes however long the strategy waits.
func TestTCHTTPClient(t *testing.T) {
	answer := func(status int, delay time.Duration) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			time.Sleep(delay)
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		return srv
	}
	var proxied atomic.Int32
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proxied.Add(1)
		if r.URL.Host != "upstream.invalid" {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	t.Cleanup(proxy.Close)
	unavailable := answer(http.StatusServiceUnavailable, 0).URL

	cases := []struct {
		name    string
		url     string
		environ []string
		ready   bool
		proxied bool
	}{
		{"through http_proxy", "http://upstream.invalid", []string{"http_proxy=" + proxy.URL}, true, true},
		{"HTTP_PROXY wins over http_proxy", "http://upstream.invalid", []string{"http_proxy=http://127.0.0.1:9", "HTTP_PROXY=" + proxy.URL}, true, true},
		{"no_proxy names the host", "http://upstream.invalid", []string{"http_proxy=" + proxy.URL, "no_proxy=upstream.invalid"}, false, false},
		{"loopback is never proxied", unavailable, []string{"http_proxy=" + proxy.URL}, false, false},
		{"a 0.2 s answer passes", answer(http.StatusOK, 200*time.Millisecond).URL, nil, true, false},
		// 1.5 s past the client's timeout: a loaded host fires a timer late by a few hundred ms
		{"a 2.5 s answer never passes", answer(http.StatusOK, 2500*time.Millisecond).URL, nil, false, false},
		{"a 204 is not a 200", answer(http.StatusNoContent, 0).URL, nil, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := proxied.Load()
			env := Env{Clock: replay.Real(), URL: c.url, ServerEnv: c.environ}
			// Long enough for the 2.5 s answer to arrive if the client waited for it.
			err := TCWait(TCHTTP{Path: "/health", StartupTimeout: 3500 * time.Millisecond})(context.Background(), env)
			if (err == nil) != c.ready {
				t.Fatalf("ready %v (err %v), want %v", err == nil, err, c.ready)
			}
			if got := proxied.Load() > before; got != c.proxied {
				t.Fatalf("went through the proxy: %v, want %v", got, c.proxied)
			}
			if err != nil && !strings.Contains(err.Error(), "timed out") {
				t.Fatalf("gave up with %v, want the startup timeout", err)
			}
		})
	}
}
