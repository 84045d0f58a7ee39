package harness

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/vtime/ptrace"
)

// A Go binary scored on virtual time is traced (its own time is virtual, not the machine's):
// its probes land where its 5 s interval puts them and the claim is exact.
func TestGoBinaryToolIsTraced(t *testing.T) {
	if !ptrace.Supported {
		t.Skip("no tracer on this platform")
	}
	needShell(t, Virtual)
	dir := t.TempDir()
	buildGoWaiter(t, dir)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	tool := Tool{Name: "gowaiter", Command: "gowaiter -url {{.URL}}/health -timeout 2m", Interval: 5 * time.Second, Budget: 2 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, speed := range []float64{Virtual, 60} {
		start := time.Now()
		r := Runner{Launcher: InProcess{}, Speed: speed}.Run(ctx, happyCase(), tool)
		wall := time.Since(start)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		t.Logf("speed %g: %s %s at %s, mode %s, wall %s: %s", speed, r.Verdict, r.Reason, r.ClaimAfter(), r.Mode, wall, r.Output)
		if r.Mode != ModePtrace || r.Exec != ExecGo {
			t.Errorf("speed %g: mode %q (%s), want %q", speed, r.Mode, r.Exec, ModePtrace)
		}
		// Probes at 0, 5, 10, 15 s find no listener, the one at 20 s a 503 (bound, not
		// ready); the one at 25 s is answered 200 after SGLang's 1 s health check and its
		// 2-15 ms check-and-respond overhead.
		if d := r.ClaimAfter() - 26*time.Second; r.Verdict != ReadyOK || d < 2*time.Millisecond || d > 15*time.Millisecond {
			t.Errorf("speed %g: %s at %s, want %s at 26s", speed, r.Verdict, r.ClaimAfter(), ReadyOK)
		}
		if wall > 15*time.Second {
			t.Errorf("speed %g: 25 s of polling took %s of wall time", speed, wall)
		}
	}
}

// A single-process poller that never accepts an answer keeps asking past the harness limit:
// its requests reach the server, so it is not hung; it is stopped at the end of the extension
// and scored as giving up then.
func TestStillProbingIsNotHung(t *testing.T) {
	if !ptrace.Supported {
		t.Skip("no tracer on this platform")
	}
	needShell(t, Virtual)
	dir := t.TempDir()
	buildGoWaiter(t, dir)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	tool := Tool{Name: "forever", Command: "gowaiter -url {{.URL}}/no-such-route -timeout 1000h", Interval: 5 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := happyCase()
	r := Runner{Launcher: InProcess{}, Speed: Virtual}.Run(ctx, c, tool)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	t.Logf("%s at %s: %s; %s", r.Verdict, r.ClaimAfter(), r.Reason, r.Claim.Detail)
	if r.Verdict == Hung || r.Claim.Outcome != ClaimFailed {
		t.Fatalf("a poller still asking was scored %s (%s)", r.Verdict, r.Claim.Outcome)
	}
	if want := time.Duration(MaxExtension * float64(Limit(c, tool))); r.ClaimAfter() < want {
		t.Errorf("stopped at %s, before the end of the extension %s", r.ClaimAfter(), want)
	}
}

// A Go binary that a wrapper starts (the first program, timeout, is dynamic) is found in the
// group while the pair runs on the library; the pair is run again traced and scores as if
// the binary had been first.
func TestUntracedChildRerunsTraced(t *testing.T) {
	if !ptrace.Supported {
		t.Skip("no tracer on this platform")
	}
	needShell(t, Virtual, "timeout")
	dir := t.TempDir()
	buildGoWaiter(t, dir)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	tool := Tool{Name: "wrapped", Command: "timeout 600 gowaiter -url {{.URL}}/health -timeout 2m", Interval: 5 * time.Second, Budget: 2 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := Runner{Launcher: InProcess{}, Speed: Virtual}.Run(ctx, happyCase(), tool)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	t.Logf("%s at %s, mode %s: %s", r.Verdict, r.ClaimAfter(), r.Mode, r.Reason)
	if r.Mode != ModePtrace {
		t.Errorf("mode %q, want %q", r.Mode, ModePtrace)
	}
	if d := r.ClaimAfter() - 26*time.Second; r.Verdict != ReadyOK || d < 2*time.Millisecond || d > 15*time.Millisecond {
		t.Errorf("%s at %s, want %s at 26s and the health check's overhead", r.Verdict, r.ClaimAfter(), ReadyOK)
	}
}
