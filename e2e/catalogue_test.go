package e2e

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/truth"
)

// catalogueSpeed is the time compression the catalogue runs at: the 11-minute cold start
// takes about 11 s of wall time.
const catalogueSpeed = 60

// Every catalogue scenario validates, compiles, runs in an in-process fakesglang at 60x, and
// the ground truth in its journal matches its own expect block. All scenarios run at once
// (they share nothing but the CPU), so the whole catalogue costs about its longest member.
var _ = Describe("the scenario catalogue", Serial, Ordered, ContinueOnFailure, Label("inprocess"), func() {
	all, loadErr := scenarios.Catalogue()
	results := map[string]runResult{}

	BeforeAll(func(ctx SpecContext) {
		Expect(loadErr).NotTo(HaveOccurred())
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, s := range all {
			wg.Go(func() {
				r := runScenario(ctx, s)
				mu.Lock()
				results[s.Name] = r
				mu.Unlock()
			})
		}
		wg.Wait()
	}, NodeTimeout(90*time.Second))

	var entries []TableEntry
	for _, s := range all {
		entries = append(entries, Entry(s.Name, s))
	}
	DescribeTable("matches its expect block", func(s *scenarios.Scenario) {
		r := results[s.Name]
		Expect(r.err).NotTo(HaveOccurred(), "%s", s.Name)
		Expect(s.Expect.Check(r.truth)).To(Succeed())
	}, entries)
})

type runResult struct {
	truth truth.Truth
	err   error
}

// runScenario compiles s, plays it at catalogueSpeed until the process exits, or until its
// timeline and every expected moment have passed, and returns the journal's ground truth.
func runScenario(ctx context.Context, s *scenarios.Scenario) runResult {
	c, err := scenarios.Compile(s, 1)
	if err != nil {
		return runResult{err: err}
	}
	cfg := fakeserver.FromCompiled(c)
	cfg.Args.Port = 0 // scenarios run in parallel; the port the flags name is not ours
	cfg.Clock = replay.Scaled(c.Timeline.Start, catalogueSpeed)
	cfg.Journal = new(bytes.Buffer)
	srv, err := fakeserver.Start(ctx, cfg)
	if err != nil {
		return runResult{err: fmt.Errorf("%s: start: %w", s.Name, err)}
	}
	defer srv.Stop(context.WithoutCancel(ctx))
	select {
	case <-srv.Done():
	case <-time.After(max(horizon(s.Expect), c.Timeline.Duration()+5*time.Second) / catalogueSpeed):
	case <-ctx.Done():
		return runResult{err: ctx.Err()}
	}
	recs, err := srv.Journal(ctx)
	if err != nil {
		return runResult{err: err}
	}
	return runResult{truth: fault.SeenTruth(fakeserver.GroundTruth(recs), s.Faults)}
}

// horizon is the latest expected moment plus slack for the tolerance.
func horizon(e scenarios.Expect) time.Duration {
	var h time.Duration
	for _, d := range []*scenarios.Duration{e.Bound, e.Ready, e.Dead} {
		if d != nil {
			h = max(h, d.D())
		}
	}
	return h + 2*e.Tolerance.D() + 5*time.Second
}
