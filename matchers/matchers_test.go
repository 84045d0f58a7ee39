package matchers_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/matchers"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/truth"
	"github.com/incident-replay/incident-replay/vtime"
)

func code(c int) *int { return &c }

var (
	m   = time.Minute
	s   = time.Second
	log = func(at time.Duration, kind sglang.Kind, line string) fakeserver.Record {
		return fakeserver.Record{At: at, Type: fakeserver.RecLog, Kind: kind.String(), Line: line}
	}
	state = func(at time.Duration, st string) fakeserver.Record {
		return fakeserver.Record{At: at, Type: fakeserver.RecState, State: st}
	}
	request = func(at time.Duration, route string, status int) fakeserver.Record {
		return fakeserver.Record{At: at, Type: fakeserver.RecRequest, Method: "GET", Route: route, Status: status}
	}
)

// founding is incident 1 as its journal tells it: bound at 10m32s, ready at 10m33s, probed
// throughout, stopped once the grep loop had given up.
var founding = []fakeserver.Record{
	log(0, sglang.KindServerArgs, "server_args=ServerArgs(...)"),
	state(10*m+32*s, fakeserver.StateBound),
	request(10*m+32*s, "/health", 503),
	{At: 10*m + 32*s, Type: fakeserver.RecRequest, Method: "GET", Route: "/model_info", Status: 200, Internal: true},
	state(10*m+33*s, fakeserver.StateReady),
	log(10*m+33*s, sglang.KindReady, "The server is fired up and ready to roll!"),
	request(10*m+37*s, "/health", 200),
	request(10*m+42*s, "/health", 200),
	state(16*m+52*s, fakeserver.StateStopped),
}

// starting is the founding incident caught at the bind, before warmup ended.
var starting = founding[:4]

// crash is a launch that dies during load.
var crash = []fakeserver.Record{
	log(0, sglang.KindServerArgs, "server_args=ServerArgs(...)"),
	log(14*s, sglang.KindTracebackStart, "Traceback (most recent call last):"),
	{At: 14 * s, Type: fakeserver.RecState, State: fakeserver.StateDead, Code: code(1)},
}

// failure runs Expect(actual).To(matcher) (or NotTo) and returns the message a suite would
// print, "" when the assertion held.
func failure(actual any, matcher types.GomegaMatcher, negate bool) string {
	var msg string
	g := NewGomega(func(message string, _ ...int) { msg = message })
	if negate {
		g.Expect(actual).NotTo(matcher)
	} else {
		g.Expect(actual).To(matcher)
	}
	return msg
}

func TestServerMatchersTellTheIncident(t *testing.T) {
	cases := []struct {
		name    string
		actual  any
		matcher types.GomegaMatcher
		negate  bool
		want    string // "" : the assertion holds
	}{
		{"ready too late", founding, matchers.BeReadyWithin(2 * m), false,
			"expected ready within 2m; port bound at 10m32s, /health 200 from 10m33s, stopped from outside at 16m52s"},
		{"ready in time", founding, matchers.BeReadyWithin(11 * m), false, ""},
		{"negated ready", founding, matchers.BeReadyWithin(11 * m), true,
			"expected not ready within 11m; port bound at 10m32s, /health 200 from 10m33s, stopped from outside at 16m52s"},
		{"not ready yet", starting, matchers.BeReadyWithin(11*m + 30*s), false,
			"expected ready within 11m30s; port bound at 10m32s, never ready, still running at 10m32s"},
		{"never bound", crash, matchers.BeBound(), false,
			"expected the port bound; port never bound, exited with code 1 at 14s"},
		{"bound", founding, matchers.BeBound(), false, ""},
		{"stopped is no exit", founding, matchers.HaveDiedWith(1), false,
			"expected an exit with code 1; port bound at 10m32s, /health 200 from 10m33s, stopped from outside at 16m52s"},
		{"died with 1", crash, matchers.HaveDiedWith(1), false, ""},
		{"died with another code", crash, matchers.HaveDiedWith(137), false,
			"expected an exit with code 137; port never bound, exited with code 1 at 14s"},
		{"served 200", founding, matchers.HaveServed("/health", 200), false, ""},
		{"only 503 so far", starting, matchers.HaveServed("/health", 200), false,
			"expected /health to have answered 200; /health answered 503 x1 (first at 10m32s); port bound at 10m32s, never ready, still running at 10m32s"},
		{"negated served", founding, matchers.HaveServed("/health", 200), true,
			"expected /health never to answer 200; /health answered 503 x1 (first at 10m32s), 200 x2 (first at 10m37s); port bound at 10m32s, /health 200 from 10m33s, stopped from outside at 16m52s"},
		{"warmup requests do not count", founding, matchers.HaveServed("/model_info", 200), false,
			"expected /model_info to have answered 200; no client asked for /model_info (requests: /health x3); port bound at 10m32s, /health 200 from 10m33s, stopped from outside at 16m52s"},
		{"no request at all", crash, matchers.HaveServed("/health", 200), false,
			"expected /health to have answered 200; no client request reached the server; port never bound, exited with code 1 at 14s"},
		{"logged ready", founding, matchers.HaveLogged(sglang.KindReady), false, ""},
		{"no ready line", crash, matchers.HaveLogged(sglang.KindReady), false,
			"expected a ready line in the log; no ready line among 2 logged (the last kinds: server_args, traceback_start); port never bound, exited with code 1 at 14s"},
		{"negated logged", crash, matchers.HaveLogged(sglang.KindTracebackStart), true,
			`expected no traceback_start line in the log; at 14s it printed "Traceback (most recent call last):"; port never bound, exited with code 1 at 14s`},
		{"a result's journal", harness.Result{Journal: founding}, matchers.BeReadyWithin(2 * m), false,
			"expected ready within 2m; port bound at 10m32s, /health 200 from 10m33s, stopped from outside at 16m52s"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := failure(c.actual, c.matcher, c.negate); got != c.want {
				t.Fatalf("message:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// scored is the founding loop's run on incident 1, judged as the harness judges it.
func scored(claim harness.Claim) harness.Result {
	start := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	tr := truth.Truth{Bound: truth.At(10*m + 32*s), Ready: truth.At(10*m + 33*s)}
	claim.At = start.Add(claim.At.Sub(time.Time{}))
	if claim.Outcome == harness.NoClaim {
		claim.At = start.Add(20 * m)
	}
	v, why := harness.Classify(tr, start, claim, harness.PolicyFor(5*s, s, 60, 0))
	return harness.Result{Scenario: "hicache-48-cold-start", Tool: "founding-loop-1", Verdict: v, Reason: why,
		Claim: claim, Start: start, Truth: tr, Limit: 20 * m}
}

func TestRunMatchersTellTheIncident(t *testing.T) {
	gaveUp := scored(harness.Claim{Outcome: harness.ClaimFailed, At: time.Time{}.Add(16*m + 52*s)})
	ontime := scored(harness.Claim{Outcome: harness.ClaimReady, At: time.Time{}.Add(10*m + 36*s)})
	hung := scored(harness.Claim{Outcome: harness.NoClaim})
	cases := []struct {
		name    string
		actual  any
		matcher types.GomegaMatcher
		negate  bool
		want    string
	}{
		{"missed ready", gaveUp, matchers.HaveVerdict(harness.ReadyOK), false,
			"expected ready-ok; founding-loop-1 on hicache-48-cold-start was missed-ready: gave up at 16m52s although the server had been ready since 10m33s (server: port bound at 10m32s, /health 200 from 10m33s)"},
		{"pointer to a result", &ontime, matchers.HaveVerdict(harness.ReadyOK), false, ""},
		{"negated verdict", ontime, matchers.HaveVerdict(harness.ReadyOK), true,
			"expected a verdict other than ready-ok; founding-loop-1 on hicache-48-cold-start was ready-ok: claimed ready at 10m36s, 3.0s after t_ready 10m33s (slack 16s) (server: port bound at 10m32s, /health 200 from 10m33s)"},
		{"claim too late", gaveUp, matchers.ClaimWithin(11 * m), false,
			"expected a claim within 11m; founding-loop-1 claimed failed at 16m52s (server: port bound at 10m32s, /health 200 from 10m33s)"},
		{"claim in time", ontime, matchers.ClaimWithin(11 * m), false, ""},
		{"no claim", hung, matchers.ClaimWithin(time.Hour), false,
			"expected a claim within 1h; founding-loop-1 made no claim: killed at the harness limit 20m (server: port bound at 10m32s, /health 200 from 10m33s)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := failure(c.actual, c.matcher, c.negate); got != c.want {
				t.Fatalf("message:\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

// A value the matchers cannot read is an error whichever way the assertion is written, never
// a silent pass of NotTo.
func TestBadActualIsAnError(t *testing.T) {
	cases := []struct {
		name    string
		actual  any
		matcher types.GomegaMatcher
		want    string
	}{
		{"a string as a server", "http://127.0.0.1:30000", matchers.BeBound(), "want a fakeserver.Target, a []fakeserver.Record or a harness.Result, got string"},
		{"a journal as a run", founding, matchers.HaveVerdict(harness.ReadyOK), "want a harness.Result (from harness.Runner.Run), got []fakeserver.Record"},
		{"a run that did not score", harness.Result{Tool: "t", Scenario: "s", Err: context.DeadlineExceeded}, matchers.ClaimWithin(m), "t on s was not scored: context deadline exceeded"},
		{"a nil result", (*harness.Result)(nil), matchers.HaveVerdict(harness.ReadyOK), "got a nil *harness.Result"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, negate := range []bool{false, true} {
				if got := failure(c.actual, c.matcher, negate); !strings.Contains(got, c.want) {
					t.Fatalf("negate=%v: message %q does not say %q", negate, got, c.want)
				}
			}
		})
	}
}

// The matchers read a live in-process server's journal through Target, on virtual time.
func TestLiveServer(t *testing.T) {
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := vtime.New(start, vtime.Options{})
	defer clock.Close()
	cfg := fakeserver.Config{
		Profile:  sglang.ProfileFor(sglang.EraC),
		Timeline: fakeserver.HappyPath(start, sglang.ProfileFor(sglang.EraC), 30*s, 90*s, 137),
		Clock:    clock,
		Journal:  &bytes.Buffer{},
	}
	srv, err := fakeserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	g := NewWithT(t)
	g.Eventually(srv).WithTimeout(30 * time.Second).Should(matchers.HaveDiedWith(137))
	g.Expect(srv).To(matchers.BeBound())
	g.Expect(srv).To(matchers.BeReadyWithin(time.Minute))
	g.Expect(srv).NotTo(matchers.BeReadyWithin(30 * s))
	g.Expect(srv).To(matchers.HaveLogged(sglang.KindReady))
	if msg := failure(srv, matchers.BeReadyWithin(10*s), false); !strings.HasPrefix(msg, "expected ready within 10s; port bound at 30s, /health 200 from 3") || !strings.HasSuffix(msg, ", exited with code 137 at 90s") {
		t.Fatalf("message %q", msg)
	}
}
