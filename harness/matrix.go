package harness

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Matrix runs every (case, tool) pair, several at once.
type Matrix struct {
	Runner Runner
	// Parallel bounds the shell pairs in flight; 0 picks DefaultParallel(). Shell pairs cost
	// CPU for every process they start, and under faketime that CPU time turns into scenario
	// time, so they are bounded by the cores.
	Parallel int
	// GoParallel bounds the Go pairs (models and llmwait's library) in flight; 0 runs them all
	// at once. They sleep on the compressed clock almost all the time. A Container launcher
	// bounds its own containers beside both.
	GoParallel int
	// Progress receives one line per finished pair; nil for none.
	Progress io.Writer
}

// DefaultParallel is 16 shell pairs per core. A shell loop sleeps on the compressed clock
// between the processes it starts, but each curl costs ~9 ms of CPU, and under faketime CPU
// contention turns into scenario time: packed tighter, the founding loops stretch (600 s
// nominal became 19-21 min at 32 pairs, 26-29 min at 48 and 40 min at 64 on 2 cores) and
// the Python waiters turn late. Measured on 2 cores, 264-pair demo set: 55 s at 32 pairs,
// 47-49 s at 48 with the waiters' verdicts drifting.
func DefaultParallel() int { return 16 * runtime.NumCPU() }

// VirtualParallel is the shell pairs in flight on virtual time: 8 per core. There a pair's
// sleeps cost nothing and its wall time is the CPU of the processes it starts plus the
// driver's quiet windows, in which the pair leaves the cores to others. Measured on 2 cores,
// the 363-pair default matrix: 55.8 s at 8 pairs, 44.7 s at 12, 43.2-43.9 s at 16 and 51.8 s
// at 24 (the clock drivers' work of telling busy groups from idle ones), every verdict the
// same.
func VirtualParallel() int { return 8 * runtime.NumCPU() }

// Run runs the matrix and returns results in (case, tool) order. When ctx ends, pairs in
// flight are stopped (their process groups killed, servers closed) and pairs not started are
// reported with ctx's error.
func (m Matrix) Run(ctx context.Context, cases []Case, tools []Tool) []Result {
	return m.RunPairs(ctx, Pairs(cases, tools, Shard{}))
}

// RunPairs runs the given pairs (a shard of a matrix, see Pairs) and returns their results
// in the order given; ctx ending is handled as in Run.
func (m Matrix) RunPairs(ctx context.Context, pairs []Pair) []Result {
	shell, goJobs := m.plan(pairs)
	par, goPar := m.parallel(len(goJobs))
	f := &feeder{m: m, total: len(shell) + len(goJobs), start: time.Now()}
	f.results = make([]Result, f.total)
	// One feeder per pool, so a full shell pool never holds back the Go pairs.
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); f.feed(ctx, shell, par) }()
	go func() { defer wg.Done(); f.feed(ctx, goJobs, goPar) }()
	wg.Wait()
	return f.results
}

// pairJob is one pair to run: its place in the results and its expected wall time.
type pairJob struct {
	i    int
	c    Case
	t    Tool
	cost time.Duration
}

// plan splits the pairs into shell and Go jobs, each longest first.
func (m Matrix) plan(pairs []Pair) (shell, goJobs []pairJob) {
	for i, p := range pairs {
		c, t := p.Case, p.Tool
		cost := expectedWall(c, t)
		if !t.Unscaled && m.Runner.Speed > 0 {
			cost = time.Duration(float64(cost) / m.Runner.Speed)
		}
		j := pairJob{i: i, c: c, t: t, cost: cost}
		if t.Wait == nil {
			shell = append(shell, j)
		} else {
			goJobs = append(goJobs, j)
		}
	}
	// Longest first: the matrix ends when its slowest pair does, so start those early.
	longest := func(a, b pairJob) int { return int(b.cost - a.cost) }
	slices.SortStableFunc(shell, longest)
	slices.SortStableFunc(goJobs, longest)
	return shell, goJobs
}

// parallel is how many shell and how many of the goJobs Go pairs run at once.
func (m Matrix) parallel(goJobs int) (par, goPar int) {
	par, goPar = m.Parallel, m.GoParallel
	if par <= 0 {
		par = DefaultParallel()
		if m.Runner.Speed == Virtual {
			par = VirtualParallel()
		}
	}
	if goPar <= 0 {
		goPar = max(goJobs, 1)
	}
	return par, goPar
}

// feeder runs jobs into the results, reporting each finished pair.
type feeder struct {
	m     Matrix
	total int
	start time.Time

	mu      sync.Mutex
	results []Result
	done    int
}

// feed runs jobs at most limit at a time; jobs not started when ctx ends get ctx's error.
func (f *feeder) feed(ctx context.Context, jobs []pairJob, limit int) {
	sem := make(chan struct{}, limit)
	var pool sync.WaitGroup
	defer pool.Wait()
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			f.mu.Lock()
			f.results[j.i] = Result{Scenario: j.c.Name, Tool: j.t.Name, Err: ctx.Err(), MustPass: j.t.MustPass}
			f.mu.Unlock()
			continue
		}
		pool.Add(1)
		go func(j pairJob) {
			defer pool.Done()
			defer func() { <-sem }()
			r := f.m.Runner.Run(ctx, j.c, j.t)
			f.mu.Lock()
			defer f.mu.Unlock()
			f.results[j.i] = r
			f.done++
			if f.m.Progress != nil {
				fmt.Fprintf(f.m.Progress, "[%3d/%d %5.1fs] %-28s %-16s %s\n", f.done, f.total, time.Since(f.start).Seconds(), r.Scenario, r.Tool, progressWord(r))
			}
		}(j)
	}
}

// expectedWall estimates a pair's scenario-time run length, to start the longest first. A
// count-bound shell loop takes its budget times (interval + its slowest answer) / interval;
// the harness cuts it at MaxExtension times the limit.
func expectedWall(c Case, t Tool) time.Duration {
	limit := Limit(c, t)
	if t.Wait != nil || t.Interval <= 0 {
		return limit
	}
	est := time.Duration(float64(limit) * float64(t.Interval+c.SlowestAnswer()) / float64(t.Interval))
	return min(est, time.Duration(MaxExtension*float64(limit)))
}

func progressWord(r Result) string {
	switch {
	case r.Err != nil:
		return "ERROR " + r.Err.Error()
	case r.Expect != "" && r.Verdict != r.Expect:
		return fmt.Sprintf("%s (expected %s) at %s, wall %.1fs", r.Verdict, r.Expect, FormatDuration(r.ClaimAfter()), r.Wall.Seconds())
	}
	return fmt.Sprintf("%s at %s, wall %.1fs", r.Verdict, FormatDuration(r.ClaimAfter()), r.Wall.Seconds())
}
