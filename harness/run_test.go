package harness

import (
	"context"
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/sglang"

	"github.com/incident-replay/incident-replay/truth"
)

var epoch = time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)

// happyCase binds at 20 s and becomes ready after SGLang's live warmup (~21 s).
func happyCase() Case {
	tl := fakeserver.HappyPath(epoch, sglang.ProfileFor(sglang.EraC), 20*time.Second, 0, 0)
	return Case{Name: "happy", Timeline: tl, Expect: ReadyOK,
		Predicted: truth.Truth{Bound: truth.At(20 * time.Second), Ready: truth.At(21300 * time.Millisecond)}}
}

// crashCase dies with exit 1 at 15 s, before binding at 60 s.
func crashCase() Case {
	tl := fakeserver.HappyPath(epoch, sglang.ProfileFor(sglang.EraC), 60*time.Second, 15*time.Second, 1)
	return Case{Name: "crash", Timeline: tl.UntilExit(), Expect: FailedFast,
		Predicted: truth.Truth{Dead: truth.At(15 * time.Second), ExitCode: code(1)}}
}

func builtin(t *testing.T, name string) Tool {
	t.Helper()
	ts, err := SelectTools(Builtins(), []string{name})
	if err != nil {
		t.Fatal(err)
	}
	return ts[0]
}

func needShell(t *testing.T, speed float64, bins ...string) Faketime {
	t.Helper()
	for _, b := range append(bins, "bash", "curl") {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed", b)
		}
	}
	if speed == 1 || speed == Virtual {
		return Faketime{}
	}
	ft, err := FindFaketime()
	if err != nil {
		t.Skip(err)
	}
	return ft
}

// TestRunInProcess runs real tools against the in-process fake and checks their verdicts: the
// claim rules, the kill at the harness limit and the stand-in PID all take part. The runs are
// on virtual time, so a verdict cannot depend on how loaded the machine is.
func TestRunInProcess(t *testing.T) {
	cases := []struct {
		tool  string
		c     Case
		speed float64
		want  Verdict
	}{
		{"curl-strict", happyCase(), Virtual, ReadyOK},
		{"curl-retry", happyCase(), Virtual, MissedReady}, // connection refused is fatal without --retry-connrefused
		{"curl-any", crashCase(), Virtual, Hung},          // loops forever on a dead port
		{"curl-strict", crashCase(), Virtual, FailedSlow},
		{"sglang-popen", crashCase(), Virtual, FailedFast}, // watches the (stand-in) PID
		{"tc-port", happyCase(), Virtual, FalseReady},
		{"k8s-sglang", happyCase(), Virtual, FalseReady}, // no readiness probe: Ready at once
		{"compose-sglang", happyCase(), Virtual, ReadyOK},
		// No fatal line printed, the dead process is not seen by ForLog. At 60x: on virtual time
		// it ends the same way, but only after its 9,000 polls of 100 ms (seconds of wall time).
		{"tc-log", crashCase(), 60, FailedSlow},
		{"tc-http", crashCase(), Virtual, FailedFast},
		{"popen-launch", happyCase(), Virtual, ReadyOK},
		{"popen-launch", crashCase(), Virtual, FailedFast}, // its {{.Launch}} exits with the server
		{"llmwait", happyCase(), Virtual, ReadyOK},
		{"llmwait", crashCase(), Virtual, FailedFast},
	}
	for _, c := range cases {
		t.Run(c.tool+"/"+c.c.Name, func(t *testing.T) {
			t.Parallel()
			tool := builtin(t, c.tool)
			var ft Faketime
			if tool.Wait == nil {
				ft = needShell(t, c.speed, "python3")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Faketime: ft, Speed: c.speed}.Run(ctx, c.c, tool)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if r.Verdict != c.want {
				t.Fatalf("verdict %s (%s), want %s; claim %+v; output:\n%s", r.Verdict, r.Reason, c.want, r.Claim, r.Output)
			}
		})
	}
}

// TestShellClaimRules checks the three claim contracts with scripts that need no server.
func TestShellClaimRules(t *testing.T) {
	ready := regexp.MustCompile(`^READY`)
	cases := []struct {
		name    string
		cmd     string
		rule    ClaimRule
		outcome Outcome
	}{
		{"exit 0", "exit 0", ByExit, ClaimReady},
		{"exit 1", "exit 1", ByExit, ClaimFailed},
		{"line then exit 0", "echo READY now", ByLine, ClaimReady},
		{"no line, exit 0 (the founding loops)", "echo Waiting", ByLine, ClaimFailed},
		{"line but exit 1", "echo READY; exit 1", ByBoth, ClaimFailed},
		{"line and exit 0", "echo READY", ByBoth, ClaimReady},
		{"never returns", "sleep 600", ByExit, NoClaim},
		{"background child holds the pipe", "sleep 600 & echo READY", ByLine, ClaimReady},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			needShell(t, 1)
			tl := fakeserver.HappyPath(epoch, sglang.ProfileFor(sglang.EraC), time.Hour, 0, 0)
			tgt, err := InProcess{Dir: t.TempDir()}.Launch(context.Background(), Case{Name: "idle", Timeline: tl}, 1)
			if err != nil {
				t.Fatal(err)
			}
			clock := tgt.Clock()
			defer tgt.Stop(context.Background())
			tool := Tool{Name: "t", Command: c.cmd, Claim: c.rule, ReadyLine: ready}
			start := time.Now()
			claim, err := shellRun{tool: tool, clock: clock, target: tgt, limit: 300 * time.Millisecond, env: toolEnv()}.run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if claim.Outcome != c.outcome {
				t.Fatalf("outcome %s, want %s (%+v)", claim.Outcome, c.outcome, claim)
			}
			if time.Since(start) > 5*time.Second {
				t.Fatalf("took %s: the process group was not killed", time.Since(start))
			}
		})
	}
}

func TestLimitCoversBudgetAndHorizon(t *testing.T) {
	c := crashCase() // horizon 15 s
	if got := Limit(c, Tool{Wait: func(context.Context, Env) error { return nil }}); got != 15*time.Second+2*time.Minute {
		t.Fatalf("Go tool without budget: limit %s", got)
	}
	shell := Tool{Command: "true", Budget: 600 * time.Second}
	if got := Limit(c, shell); got < 900*time.Second {
		t.Fatalf("shell tool with a 600 s budget gets %s; faketime overhead needs >= 1.5x", got)
	}
}

func TestCompleteUsesPredictionOnlyAfterTheEnd(t *testing.T) {
	pred := truth.Truth{Bound: truth.At(20 * time.Second), Ready: truth.At(30 * time.Second), Dead: truth.At(90 * time.Second), ExitCode: code(137)}
	// The tool gave up at 25 s: bound comes from the journal, ready and dead are predicted.
	got, predicted := complete(truth.Truth{Bound: truth.At(21 * time.Second)}, pred, 25*time.Second)
	if *got.Bound != 21*time.Second || got.Ready != pred.Ready || got.Dead != pred.Dead || !predicted || got.ExitCode == nil || *got.ExitCode != 137 {
		t.Fatalf("complete = %+v", got)
	}
	// The tool ran past 30 s and the journal has no ready: the server did not become ready.
	got, _ = complete(truth.Truth{}, pred, 40*time.Second)
	if got.Ready != nil {
		t.Fatalf("a prediction that the journal contradicts was used: %+v", got)
	}
}

// TestPreflightRefusalIsNotAGiveUp: a shell tool exiting before the death is gave-up unless
// its exit status is its stated preflight refusal.
func TestPreflightRefusalIsNotAGiveUp(t *testing.T) {
	needShell(t, Virtual)
	for _, c := range []struct {
		preflightExit int
		want          Verdict
	}{{0, GaveUp}, {4, FailedFast}, {3, GaveUp}} {
		tool := Tool{Name: "refuser", Command: "exit 4", Interval: time.Second, PreflightExit: c.preflightExit}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, crashCase(), tool)
		cancel()
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if r.Verdict != c.want {
			t.Errorf("preflight_exit %d: verdict %s (%s), want %s", c.preflightExit, r.Verdict, r.Reason, c.want)
		}
	}
}

// TestToolLeavingAChildReturnsUnderFaketime: a launcher leaves its server running; the
// faketime wrapper waits for every descendant, so the tool's return is its bash's own exit.
func TestToolLeavingAChildReturnsUnderFaketime(t *testing.T) {
	ft := needShell(t, 60)
	tl := fakeserver.HappyPath(epoch, sglang.ProfileFor(sglang.EraC), time.Hour, 0, 0)
	tgt, err := InProcess{Dir: t.TempDir()}.Launch(context.Background(), Case{Name: "idle", Timeline: tl}, 60)
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Stop(context.Background())
	for _, c := range []struct {
		cmd  string
		want Outcome
		code int
	}{{"sleep 100000 & exit 0", ClaimReady, 0}, {"(sleep 100000; echo x) & exit 3", ClaimFailed, 3}} {
		start := time.Now()
		tool := Tool{Name: "launcher", Command: c.cmd, Interval: time.Second}
		claim, err := shellRun{tool: tool, clock: tgt.Clock(), target: tgt, limit: 10 * time.Minute, faketime: ft, env: toolEnv()}.run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if claim.Outcome != c.want || claim.ExitCode != c.code || time.Since(start) > 5*time.Second {
			t.Errorf("%q: claim %+v after %s, want %s with exit %d at once", c.cmd, claim, time.Since(start), c.want, c.code)
		}
	}
}

// A SIGTERM in the journal is a launch tool stopping its server: the journal is the
// scenario's own up to it, and up to its instant less the tolerance (a death the scenario
// states just after comes from its prediction).
func TestScenarioPartEndsAtSigterm(t *testing.T) {
	state := func(at time.Duration, st string) fakeserver.Record {
		return fakeserver.Record{At: at, Type: fakeserver.RecState, State: st}
	}
	j := []fakeserver.Record{state(5*time.Second, fakeserver.StateBound), state(11*time.Second, fakeserver.StateSigterm), state(11*time.Second, fakeserver.StateDead)}
	for _, tc := range []struct {
		name    string
		journal []fakeserver.Record
		claimed time.Duration
		wantLen int
		wantEnd time.Duration
	}{
		{"no SIGTERM", j[:1], 20 * time.Second, 1, 20 * time.Second},
		{"SIGTERM after the claim", j, 10 * time.Second, 1, 8 * time.Second},
		{"SIGTERM before the claim", j, 30 * time.Second, 1, 8 * time.Second},
	} {
		part, end := scenarioPart(tc.journal, tc.claimed, 3*time.Second)
		if len(part) != tc.wantLen || end != tc.wantEnd {
			t.Errorf("%s: %d records up to %v, want %d up to %v", tc.name, len(part), end, tc.wantLen, tc.wantEnd)
		}
	}
}

// stuckLauncher runs servers in-process; their Stop removes the server and then fails, as a
// container's does when the Docker daemon does not answer.
type stuckLauncher struct{ InProcess }

func (l stuckLauncher) Launch(ctx context.Context, c Case, speed float64) (Target, error) {
	t, err := l.InProcess.Launch(ctx, c, speed)
	if err != nil {
		return nil, err
	}
	return stuckTarget{t}, nil
}

type stuckTarget struct{ Target }

func (t stuckTarget) ToolStarted() { t.Target.(toolStarter).ToolStarted() }

func (t stuckTarget) Stop(ctx context.Context) error {
	if err := t.Target.Stop(ctx); err != nil {
		return err
	}
	return context.DeadlineExceeded
}

// A server that cannot be stopped once its run is scored does not take the verdict with it:
// the scorecard keeps the cell and lists the server apart.
func TestRunKeepsTheVerdictOfAServerThatWouldNotStop(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	r := Runner{Launcher: stuckLauncher{InProcess{Dir: t.TempDir()}}, Speed: Virtual}.Run(ctx, happyCase(), builtin(t, "llmwait"))
	if r.Err != nil || r.Verdict != ReadyOK {
		t.Fatalf("verdict %q, err %v; want %s and no error", r.Verdict, r.Err, ReadyOK)
	}
	if !errors.Is(r.StopErr, context.DeadlineExceeded) {
		t.Fatalf("StopErr %v, want the stop's deadline", r.StopErr)
	}
	card := Scorecard{Results: []Result{r}, Where: "inprocess"}
	var table, md strings.Builder
	if err := card.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if err := card.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct{ what, out, line string }{
		{"table", table.String(), "  happy x llmwait: stop happy (inprocess): context deadline exceeded"},
		{"markdown", md.String(), "- `happy` x `llmwait`: stop happy (inprocess): context deadline exceeded"},
	} {
		if !strings.Contains(f.out, " ok ") || !strings.Contains(f.out, unstoppedHead) || !strings.Contains(f.out, f.line) {
			t.Errorf("%s does not show the verdict and the unstopped server:\n%s", f.what, f.out)
		}
	}
	f, err := NewResults(Shard{I: 1, N: 1}, 1, card, []Pair{{Index: 0}}, []Case{happyCase()}, []Tool{builtin(t, "llmwait")})
	if err != nil {
		t.Fatal(err)
	}
	if back := f.Results[0].result(); back.StopErr == nil || back.StopErr.Error() != r.StopErr.Error() {
		t.Errorf("results file keeps StopErr %v, want %v", back.StopErr, r.StopErr)
	}
}
