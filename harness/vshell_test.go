package harness

import (
	"context"
	"testing"
	"time"

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
