package harness

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/truth"
)

func TestDetectionLatency(t *testing.T) {
	t0 := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ready := truth.Truth{Bound: secs(600), Ready: secs(660)}
	dead := truth.Truth{Dead: secs(120), ExitCode: code(137)}
	readyThenDead := truth.Truth{Bound: secs(60), Ready: secs(100), Dead: secs(300), ExitCode: code(1)}
	deadBeforeReady := truth.Truth{Ready: secs(200), Dead: secs(150), ExitCode: code(1)}
	stuck := truth.Truth{Bound: secs(60)}
	res := func(tr truth.Truth, o Outcome, claimAt time.Time) Result {
		return Result{Start: t0, Truth: tr, Claim: Claim{Outcome: o, At: claimAt}}
	}

	cases := []struct {
		name string
		r    Result
		want time.Duration
		ok   bool
	}{
		{"ready claim after t_ready", res(ready, ClaimReady, at(661.5)), 1500 * time.Millisecond, true},
		{"ready claim long after t_ready (late)", res(ready, ClaimReady, at(1260)), 600 * time.Second, true},
		{"ready claim before t_ready (503 counted)", res(ready, ClaimReady, at(610)), -50 * time.Second, true},
		{"ready claim between ready and death", res(readyThenDead, ClaimReady, at(102)), 2 * time.Second, true},
		{"ready claim after the death", res(readyThenDead, ClaimReady, at(310)), 0, false},
		{"ready claim on a server that never got ready", res(dead, ClaimReady, at(50)), 0, false},
		{"ready claim on a server that died before its ready", res(deadBeforeReady, ClaimReady, at(160)), 0, false},
		{"ready claim on a stuck server", res(stuck, ClaimReady, at(70)), 0, false},
		{"failure claim after death", res(dead, ClaimFailed, at(121)), time.Second, true},
		{"failure claim at own timeout", res(dead, ClaimFailed, at(720)), 600 * time.Second, true},
		{"failure claim before death (preflight)", res(dead, ClaimFailed, at(0.2)), -119800 * time.Millisecond, true},
		{"failure claim on a server that died before ready", res(deadBeforeReady, ClaimFailed, at(151)), time.Second, true},
		{"gave up on a ready server", res(ready, ClaimFailed, at(700)), 0, false},
		{"gave up on a ready-then-dead server", res(readyThenDead, ClaimFailed, at(320)), 0, false},
		{"gave up on a stuck server", res(stuck, ClaimFailed, at(900)), 0, false},
		{"no claim (hung)", res(ready, NoClaim, at(2000)), 0, false},
		{"no claim on a dead server", res(dead, NoClaim, at(2000)), 0, false},
		{"claim without a time", res(ready, ClaimReady, time.Time{}), 0, false},
		{"harness error", Result{Truth: ready, Claim: Claim{Outcome: ClaimReady, At: at(661)}, Err: errors.New("launch")}, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := DetectionLatency(c.r)
			if got != c.want || ok != c.ok {
				t.Fatalf("DetectionLatency = %v, %v; want %v, %v", got, ok, c.want, c.ok)
			}
		})
	}
}

func TestLatencyTable(t *testing.T) {
	t0 := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ready := truth.Truth{Bound: secs(600), Ready: secs(660)}
	dead := truth.Truth{Dead: secs(120), ExitCode: code(137)}
	run := func(scen, tool string, tr truth.Truth, o Outcome, claim float64, v Verdict) Result {
		return Result{Scenario: scen, Tool: tool, Start: t0, Truth: tr, Claim: Claim{Outcome: o, At: at(claim)}, Verdict: v}
	}
	tab := NewLatencyTable("llmwait", "loop")
	for _, r := range []Result{
		// cold start: llmwait 2 s after ready (median of 1, 2, 4), the loop never claims ready.
		run("cold", "llmwait", ready, ClaimReady, 661, ReadyOK),
		run("cold", "llmwait", ready, ClaimReady, 664, ReadyOK),
		run("cold", "llmwait", ready, ClaimReady, 662, ReadyOK),
		run("cold", "loop", ready, ClaimFailed, 700, MissedReady),
		// crash: llmwait 2 s after the death, the loop at its own timeout.
		run("crash", "llmwait", dead, ClaimFailed, 122, FailedFast),
		run("crash", "loop", dead, ClaimFailed, 720, FailedSlow),
		run("crash", "loop", dead, ClaimFailed, 730, FailedSlow),
		// preflight: llmwait fails before the death, so the ratio is a lower bound.
		run("oom", "llmwait", dead, ClaimFailed, 0.1, FailedFast),
		run("oom", "loop", dead, ClaimFailed, 620, FailedSlow),
		// a tool outside the table is ignored.
		run("oom", "other", dead, ClaimFailed, 1, FailedFast),
		// the loop gave up before the death: no negative multiple.
		run("early", "llmwait", dead, ClaimFailed, 122, FailedFast),
		run("early", "loop", dead, ClaimFailed, 100, FailedFast),
		{Scenario: "broken", Tool: "llmwait", Err: errors.New("launch failed")},
	} {
		tab.Add(r)
	}
	if got, want := strings.Join(tab.Scenarios(), ","), "cold,crash,oom,early,broken"; got != want {
		t.Fatalf("Scenarios = %s, want %s", got, want)
	}
	if _, ok := tab.Cell("oom", "other"); ok {
		t.Fatal("a tool outside the table got a cell")
	}

	cold, _ := tab.Cell("cold", "llmwait")
	if m, ok := cold.Median(); !ok || m != 2*time.Second || cold.Event != ClaimReady || cold.Runs() != 3 {
		t.Fatalf("cold llmwait cell: median %v %v, event %v, runs %d", m, ok, cold.Event, cold.Runs())
	}
	crash, _ := tab.Cell("crash", "loop")
	if m, _ := crash.Median(); m != 605*time.Second {
		t.Fatalf("crash loop median = %v, want 605s (mean of the middle two)", m)
	}
	broken, _ := tab.Cell("broken", "llmwait")
	if broken.Errors != 1 || broken.Runs() != 1 {
		t.Fatalf("broken cell = %+v", broken)
	}

	ratios := []struct {
		scen        string
		want        float64
		atLeast, ok bool
	}{
		{"cold", 0, false, false},     // the loop detected nothing
		{"crash", 302.5, false, true}, // 605 s / 2 s
		{"oom", 500, true, true},      // (620 - 120) s / the 1 s floor
		{"broken", 0, false, false},   // no baseline latency
	}
	for _, c := range ratios {
		r, lb, ok := tab.Ratio(c.scen, "loop")
		if ok != c.ok || lb != c.atLeast || math.Abs(r-c.want) > 1e-9 {
			t.Errorf("Ratio(%s) = %v, %v, %v; want %v, %v, %v", c.scen, r, lb, ok, c.want, c.atLeast, c.ok)
		}
	}
	r, lb, n, never := tab.MedianRatio("loop")
	if math.Abs(r-302.5) > 1e-9 || !lb || n != 3 || never != 1 {
		t.Fatalf("MedianRatio = %v, %v, %d, %d; want 302.5, true, 3, 1", r, lb, n, never)
	}

	var b strings.Builder
	if err := tab.Write(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"+2.0s (ready-ok) 3/3", "missed-ready at 11m40s", "never",
		"+10m05s (failed-slow) 2/2", "302x",
		"-120s (failed-fast)", "≥500x",
		"loop vs llmwait: median ratio ≥302x over 3 scenario(s); detected nothing on 1 where llmwait did",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// A cell whose runs detected different events keeps the first event and counts the rest as
// missed, so a median never mixes ready and death latencies.
func TestLatencyTableMixedEvents(t *testing.T) {
	t0 := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	tab := NewLatencyTable("b")
	tab.Add(Result{Scenario: "s", Tool: "b", Start: t0, Truth: truth.Truth{Ready: truth.At(10 * time.Second)},
		Claim: Claim{Outcome: ClaimReady, At: t0.Add(12 * time.Second)}, Verdict: ReadyOK})
	tab.Add(Result{Scenario: "s", Tool: "b", Start: t0, Truth: truth.Truth{Dead: truth.At(10 * time.Second)},
		Claim: Claim{Outcome: ClaimFailed, At: t0.Add(11 * time.Second)}, Verdict: FailedFast})
	c, _ := tab.Cell("s", "b")
	if m, ok := c.Median(); !ok || m != 2*time.Second || c.Missed != 1 || c.Event != ClaimReady {
		t.Fatalf("cell = %+v (median %v)", c, m)
	}
}
