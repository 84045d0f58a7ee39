package harness

import (
	"testing"
	"time"
)

// The matrix starts the longest pairs first; a count-bound loop against a server that answers
// slowly (or not at all, once dead with its port kept) runs far past its budget.
func TestExpectedWallOrdersSlowAnswersFirst(t *testing.T) {
	// founding-loop-1 probes every 5 s with a 700 s budget: its limit is 1.5 x 700 s = 1050 s
	// plus a fifth of that, 21 m, on every scenario here (all are shorter). tc-http is a Go
	// tool with a 15 m budget: 15 m + 3 m.
	tests := []struct {
		scenario, tool string
		limit, want    time.Duration
		why            string
	}{
		{"s0-happy-era-c", "founding-loop-1", 21 * time.Minute, 25*time.Minute + 12*time.Second,
			"each 5 s interval also waits the 1 s health answer: 21 m x 6/5"},
		{"s13b-slow-health-25s", "founding-loop-1", 21 * time.Minute, 42 * time.Minute,
			"every probe waits 25 s: 21 m x 30/5 is past the cap of twice the limit"},
		{"crash-running-era-b-zombie", "founding-loop-1", 21 * time.Minute, 42 * time.Minute,
			"the dead server keeps its port, so every probe waits out the 20 s health timeout: capped"},
		{"s13b-slow-health-25s", "tc-http", 18 * time.Minute, 18 * time.Minute,
			"a Go tool runs on the run's clock, so its estimate is its limit"},
	}
	for _, tc := range tests {
		c, tool := catalogueCase(t, tc.scenario), builtin(t, tc.tool)
		if got := Limit(c, tool); got != tc.limit {
			t.Errorf("%s x %s: limit %v, want %v", tc.scenario, tc.tool, got, tc.limit)
		}
		if got := expectedWall(c, tool); got != tc.want {
			t.Errorf("%s x %s: expected wall %v, want %v (%s)", tc.scenario, tc.tool, got, tc.want, tc.why)
		}
	}
}
