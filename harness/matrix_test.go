package harness

import (
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
)

// The matrix starts the longest pairs first; a count-bound loop against a server that answers
// slowly (or not at all, once dead with its port kept) runs far past its budget.
func TestExpectedWallOrdersSlowAnswersFirst(t *testing.T) {
	caseOf := func(name string) Case {
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
	loop := builtin(t, "founding-loop-1")
	happy, slow, zombie := caseOf("s0-happy-era-c"), caseOf("s13b-slow-health-25s"), caseOf("crash-running-era-b-zombie")
	base := expectedWall(happy, loop)
	if want := time.Duration(float64(Limit(happy, loop)) * 6 / 5); base != want {
		t.Errorf("happy path: %v, want the limit times (5 s interval + 1 s health) / 5 s = %v", base, want)
	}
	for _, c := range []Case{slow, zombie} {
		got := expectedWall(c, loop)
		if cap := time.Duration(MaxExtension * float64(Limit(c, loop))); got != cap {
			t.Errorf("%s: %v, want the cap %v (every probe waits 20 s or more)", c.Name, got, cap)
		}
	}
	if tc := builtin(t, "tc-http"); expectedWall(slow, tc) != Limit(slow, tc) {
		t.Errorf("a Go tool's estimate is its limit: got %v, want %v", expectedWall(slow, tc), Limit(slow, tc))
	}
}
