package harness

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/scenarios"
)

// On virtual time a shell tool's sleeps cost no wall time and its claim lands exactly where
// its script puts it, whatever the machine does meanwhile.
func TestShellToolOnVirtualTime(t *testing.T) {
	s, err := scenarios.Resolve("s4-crash-during-load")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCase(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	tool := Tool{Name: "sleeper", Command: `for i in 1 2 3; do curl -s {{.URL}}/health >/dev/null; sleep 5; done; exit 1`,
		Interval: 5 * time.Second, Budget: time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for range 2 {
		start := time.Now()
		r := Runner{Launcher: InProcess{}, Speed: Virtual}.Run(ctx, c, tool)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if got := r.ClaimAfter(); got != 15*time.Second {
			t.Fatalf("claim at %s of scenario time, want exactly 15s (3 x sleep 5)", got)
		}
		if wall := time.Since(start); wall > 20*time.Second {
			t.Fatalf("15 s of sleeps took %s of wall time", wall)
		}
	}
}

// A process the server wakes reads the instant it was woken at: curl's probe of a healthy
// /health takes SGLang's 1 s (plus a few seeded milliseconds) of virtual time, and the shell
// reads that much time passing around it. The time a process reads is shown at each jump,
// before the server's timers due then fire; its own waits due then end only after them.
func TestWokenProcessReadsItsInstant(t *testing.T) {
	s, err := scenarios.Resolve("s0-happy-era-b")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewCase(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	tool := Tool{Name: "timed-probe", Command: `sleep 120; a=$(date +%s.%N); curl -s -o /dev/null {{.URL}}/health; b=$(date +%s.%N); echo "$a $b"; exit 1`,
		Interval: 5 * time.Second, Budget: 5 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := Runner{Launcher: InProcess{}, Speed: Virtual}.Run(ctx, c, tool)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	f := strings.Fields(strings.TrimSpace(r.Output))
	if len(f) < 2 {
		t.Fatalf("output %q, want two times", r.Output)
	}
	a, errA := strconv.ParseFloat(f[len(f)-2], 64)
	b, errB := strconv.ParseFloat(f[len(f)-1], 64)
	if errA != nil || errB != nil {
		t.Fatalf("output %q, want two times", r.Output)
	}
	var latency time.Duration
	for _, rec := range r.Journal {
		if rec.Type == fakeserver.RecRequest && rec.Route == "/health" {
			latency = rec.Latency
		}
	}
	if latency < time.Second {
		t.Fatalf("the journal has no 1 s health check: %+v", r.Journal)
	}
	// date's %N and the float parse lose well under a millisecond.
	if d := time.Duration((b - a) * float64(time.Second)); (d - latency).Abs() > time.Millisecond {
		t.Fatalf("the probe took %s of the shell's time, want the server's %s", d, latency)
	}
}
