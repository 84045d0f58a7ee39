package harness

import (
	"context"
	"sync"
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

// countingLauncher runs servers in-process and records the most that were up at once.
type countingLauncher struct {
	InProcess
	bound         int
	mu            sync.Mutex
	running, most int
}

func (l *countingLauncher) MaxInFlight() int { return l.bound }

func (l *countingLauncher) Launch(ctx context.Context, c Case, speed float64) (Target, error) {
	t, err := l.InProcess.Launch(ctx, c, speed)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.running++
	l.most = max(l.most, l.running)
	l.mu.Unlock()
	return &countedTarget{Target: t, l: l}, nil
}

type countedTarget struct {
	Target
	l    *countingLauncher
	once sync.Once
}

// ToolStarted passes the start on: an in-process server's virtual clock waits for it.
func (t *countedTarget) ToolStarted() {
	if ts, ok := t.Target.(toolStarter); ok {
		ts.ToolStarted()
	}
}

func (t *countedTarget) Stop(ctx context.Context) error {
	t.once.Do(func() {
		t.l.mu.Lock()
		t.l.running--
		t.l.mu.Unlock()
	})
	return t.Target.Stop(ctx)
}

// A bounded launcher (a Docker daemon) gets at most MaxInFlight servers at once, shell and Go
// pairs together, however wide each pool is.
func TestMatrixKeepsABoundedLauncherWithinItsBound(t *testing.T) {
	var cases []Case
	for _, name := range []string{"s0-happy-era-a", "s1-empty-200", "s4-crash-during-load", "s19-auth"} {
		cases = append(cases, catalogueCase(t, name))
	}
	tools, err := SelectTools(Builtins(), []string{"curl-strict", "k8s-kserve", "llmwait"})
	if err != nil {
		t.Fatal(err)
	}
	l := &countingLauncher{InProcess: InProcess{Dir: t.TempDir()}, bound: 2}
	m := Matrix{Runner: Runner{Launcher: l, Speed: Virtual}, Parallel: 8, GoParallel: 8}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	results := m.Run(ctx, cases, tools)
	if len(results) != len(cases)*len(tools) {
		t.Fatalf("%d results for %d pairs", len(results), len(cases)*len(tools))
	}
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("%s x %s: %v", r.Scenario, r.Tool, r.Err)
		}
	}
	if l.most > l.bound {
		t.Errorf("%d servers up at once, above the launcher's bound of %d", l.most, l.bound)
	}
}
