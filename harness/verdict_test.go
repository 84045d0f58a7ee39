package harness

import (
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/truth"
)

func TestClassify(t *testing.T) {
	t0 := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	ready := truth.Truth{Bound: secs(600), Ready: secs(660)}
	dead := truth.Truth{Dead: secs(120), ExitCode: code(137)}
	readyThenDead := truth.Truth{Bound: secs(60), Ready: secs(100), Dead: secs(300), ExitCode: code(1)}
	stuck := truth.Truth{Bound: secs(60)}
	p := Policy{Slack: 15 * time.Second, FastWindow: 15 * time.Second}

	logged := p
	logged.FatalLine = secs(110) // the fatal line 10 s before the death at 120 s
	cases := []struct {
		name  string
		truth truth.Truth
		claim Claim
		want  Verdict
		pol   *Policy
	}{
		{"failed after the fatal line, before death (read the log)", dead, Claim{Outcome: ClaimFailed, At: at(111)}, FailedFast, &logged},
		{"gave up before the fatal line", dead, Claim{Outcome: ClaimFailed, At: at(100)}, GaveUp, &logged},
		{"ready within slack", ready, Claim{Outcome: ClaimReady, At: at(670)}, ReadyOK, nil},
		{"ready exactly at slack", ready, Claim{Outcome: ClaimReady, At: at(675)}, ReadyOK, nil},
		{"ready after slack", ready, Claim{Outcome: ClaimReady, At: at(676)}, ReadyLate, nil},
		{"ready before t_ready (503 counted)", ready, Claim{Outcome: ClaimReady, At: at(610)}, FalseReady, nil},
		{"ready at port open (TCP only)", ready, Claim{Outcome: ClaimReady, At: at(600)}, FalseReady, nil},
		{"ready on a dead server", dead, Claim{Outcome: ClaimReady, At: at(200)}, FalseReady, nil},
		{"ready after ready-then-dead died", readyThenDead, Claim{Outcome: ClaimReady, At: at(310)}, FalseReady, nil},
		{"ready on a stuck server", stuck, Claim{Outcome: ClaimReady, At: at(70)}, FalseReady, nil},
		{"gave up after ready (grep -q ok)", ready, Claim{Outcome: ClaimFailed, At: at(700)}, MissedReady, nil},
		{"gave up before ready (budget too short)", ready, Claim{Outcome: ClaimFailed, At: at(600)}, MissedReady, nil},
		{"gave up after ready then dead", readyThenDead, Claim{Outcome: ClaimFailed, At: at(900)}, MissedReady, nil},
		{"failed right after death", dead, Claim{Outcome: ClaimFailed, At: at(125)}, FailedFast, nil},
		{"refused in preflight before death", dead, Claim{Outcome: ClaimFailed, At: at(1), Preflight: true}, FailedFast, nil},
		{"gave up before death (retries ran out)", dead, Claim{Outcome: ClaimFailed, At: at(100)}, GaveUp, nil},
		{"gave up a moment before death", dead, Claim{Outcome: ClaimFailed, At: at(119)}, GaveUp, nil},
		{"failed at the death", dead, Claim{Outcome: ClaimFailed, At: at(120)}, FailedFast, nil},
		{"gave up before ready-then-dead became ready", readyThenDead, Claim{Outcome: ClaimFailed, At: at(50)}, MissedReady, nil},
		{"failed at own timeout after death", dead, Claim{Outcome: ClaimFailed, At: at(720)}, FailedSlow, nil},
		{"failed just outside fast window", dead, Claim{Outcome: ClaimFailed, At: at(136)}, FailedSlow, nil},
		{"gave up on a stuck server", stuck, Claim{Outcome: ClaimFailed, At: at(900)}, FailedSlow, nil},
		{"never returned", ready, Claim{Outcome: NoClaim, At: at(2000)}, Hung, nil},
		{"never returned on a dead server", dead, Claim{Outcome: NoClaim}, Hung, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := p
			if c.pol != nil {
				pol = *c.pol
			}
			got, why := Classify(c.truth, t0, c.claim, pol)
			if got != c.want {
				t.Fatalf("Classify = %s (%s), want %s", got, why, c.want)
			}
			if why == "" {
				t.Fatal("Classify gave no reason")
			}
		})
	}
}

func TestDefinitionsCoverEveryVerdict(t *testing.T) {
	defs := Definitions()
	vs := scenarios.Verdicts()
	if len(defs) != len(vs) {
		t.Fatalf("%d definitions for %d verdict classes", len(defs), len(vs))
	}
	for i, d := range defs {
		if d.Verdict != vs[i] || d.Meaning == "" || d.Cell == "" {
			t.Errorf("definition %d = %+v, want %s with a meaning and a cell text", i, d, vs[i])
		}
	}
}

func TestFmtDur(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Millisecond: "1.5s",
		95 * time.Second:        "95s",
		11 * time.Minute:        "11m00s",
		-3 * time.Second:        "-3.0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// secs is an offset of s seconds, for truth literals.
func secs(s float64) *time.Duration { return truth.At(time.Duration(s * float64(time.Second))) }

func code(n int) *int { return &n }
