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
	// Parallel bounds the pairs in flight; 0 picks DefaultParallel(). Runs spend most of their
	// time waiting on the compressed clock, so the bound is a multiple of the cores.
	Parallel int
	// Progress receives one line per finished pair; nil for none.
	Progress io.Writer
}

// DefaultParallel is 24 pairs per core: a pair mostly sleeps on the compressed clock (a Go
// tool's probe costs well under a millisecond; a shell loop ~4 ms of CPU per process it
// starts), so the cores are shared by many pairs. Measured on 2 cores: the 264-pair demo set
// takes 110 s at 16 in flight and 60 s at 48.
func DefaultParallel() int { return 24 * runtime.NumCPU() }

// Run runs the matrix and returns results in (case, tool) order. When ctx ends, pairs in
// flight are stopped (their process groups killed, servers closed) and pairs not started are
// reported with ctx's error.
func (m Matrix) Run(ctx context.Context, cases []Case, tools []Tool) []Result {
	type job struct {
		i    int
		c    Case
		t    Tool
		cost time.Duration
	}
	var jobs []job
	for ci, c := range cases {
		for ti, t := range tools {
			cost := Limit(c, t)
			if !t.Unscaled && m.Runner.Speed > 0 {
				cost = time.Duration(float64(cost) / m.Runner.Speed)
			}
			jobs = append(jobs, job{i: ci*len(tools) + ti, c: c, t: t, cost: cost})
		}
	}
	// Longest first: the matrix ends when its slowest pair does, so start those early. Shell
	// pairs cost CPU for every process they start (and under faketime that CPU time turns
	// into scenario time), Go pairs almost none: alternate them so the shell pairs spread out.
	slices.SortStableFunc(jobs, func(a, b job) int { return int(b.cost - a.cost) })
	var shell, goJobs []job
	for _, j := range jobs {
		if j.t.Wait == nil {
			shell = append(shell, j)
		} else {
			goJobs = append(goJobs, j)
		}
	}
	jobs = jobs[:0]
	for len(shell) > 0 || len(goJobs) > 0 {
		if len(shell) > 0 {
			jobs, shell = append(jobs, shell[0]), shell[1:]
		}
		if len(goJobs) > 0 {
			jobs, goJobs = append(jobs, goJobs[0]), goJobs[1:]
		}
	}

	par := m.Parallel
	if par <= 0 {
		par = DefaultParallel()
	}
	results := make([]Result, len(jobs))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	sem := make(chan struct{}, par)
	start := time.Now()
	for _, j := range jobs {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			results[j.i] = Result{Scenario: j.c.Name, Tool: j.t.Name, Err: ctx.Err(), MustPass: j.t.MustPass}
			continue
		}
		wg.Add(1)
		go func(j job) {
			defer wg.Done()
			defer func() { <-sem }()
			r := m.Runner.Run(ctx, j.c, j.t)
			mu.Lock()
			defer mu.Unlock()
			results[j.i] = r
			done++
			if m.Progress != nil {
				fmt.Fprintf(m.Progress, "[%3d/%d %5.1fs] %-28s %-16s %s\n", done, len(jobs), time.Since(start).Seconds(), r.Scenario, r.Tool, progressWord(r))
			}
		}(j)
	}
	wg.Wait()
	return results
}

func progressWord(r Result) string {
	switch {
	case r.Err != nil:
		return "ERROR " + r.Err.Error()
	case r.Expect != "" && r.Verdict != r.Expect:
		return fmt.Sprintf("%s (expected %s) at %s, wall %.1fs", r.Verdict, r.Expect, fmtDur(r.ClaimAfter()), r.Wall.Seconds())
	}
	return fmt.Sprintf("%s at %s, wall %.1fs", r.Verdict, fmtDur(r.ClaimAfter()), r.Wall.Seconds())
}
