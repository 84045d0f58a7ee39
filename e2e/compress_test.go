package e2e

import (
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

// Virtual time must not change verdicts: each pair runs on virtual time and at S=1 (real
// time, so only short scenarios qualify) and must reach the same, pinned verdict. The pairs cover
// shell tools (curl, a python3 waiter), Go models on the clock and llmwait, a slow-health
// server (every /health takes >= 1 s), crashes and a stale listener. The founding loops run
// 10 minutes whatever the scenario, too long for this spec at S=1: bench/agreement.sh runs
// them on the full founding scenarios.
var _ = Describe("time compression", Ordered, ContinueOnFailure, Label("inprocess", "slow"), func() {
	pairs := []struct {
		scenario, tool string
		want           harness.Verdict
	}{
		{"s13-slow-health-1s", "curl-strict", harness.ReadyOK},
		{"s13-slow-health-1s", "llmwait", harness.ReadyOK},
		{"s13-slow-health-1s", "k8s-sglang", harness.FalseReady},
		{"s4-crash-during-load", "sglang-popen", harness.FailedFast},
		{"s4-crash-during-load", "curl-retry", harness.GaveUp}, // gives up on "connection refused" before the crash
		{"nccl-init-error", "compose-tuned", harness.FailedFast},
		{"s6-warmup-kill", "tc-log", harness.FailedFast},
		{"s8-stale-listener", "curl-strict", harness.FalseReady}, // another process holds the port and answers 200
		{"s1-empty-200", "sglang-popen", harness.ReadyOK},
	}
	type key struct {
		scenario, tool string
		speed          float64
	}
	results := map[key]harness.Result{}

	BeforeAll(func(ctx SpecContext) {
		ft, err := harness.FindFaketime()
		Expect(err).NotTo(HaveOccurred())
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, p := range pairs {
			s, err := scenarios.Lookup(p.scenario)
			Expect(err).NotTo(HaveOccurred())
			c, err := harness.NewCase(s, 1)
			Expect(err).NotTo(HaveOccurred())
			tools, err := harness.SelectTools(harness.Builtins(), []string{p.tool})
			Expect(err).NotTo(HaveOccurred())
			for _, speed := range []float64{harness.Virtual, 1} {
				wg.Go(func() {
					r := harness.Runner{Launcher: harness.InProcess{Dir: GinkgoT().TempDir()}, Faketime: ft, Speed: speed}.Run(ctx, c, tools[0])
					mu.Lock()
					results[key{p.scenario, p.tool, speed}] = r
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	}, NodeTimeout(5*time.Minute))

	for _, p := range pairs {
		It(fmt.Sprintf("%s x %s: the same verdict on virtual time and at S=1", p.scenario, p.tool), func() {
			fast, slow := results[key{p.scenario, p.tool, harness.Virtual}], results[key{p.scenario, p.tool, 1}]
			Expect(fast.Err).NotTo(HaveOccurred())
			Expect(slow.Err).NotTo(HaveOccurred())
			Expect(fast.Verdict).To(Equal(slow.Verdict), "virtual: %s (%s); S=1: %s (%s)", fast.Verdict, fast.Reason, slow.Verdict, slow.Reason)
			Expect(slow.Verdict).To(Equal(p.want), slow.Reason)
			AddReportEntry(p.scenario+" x "+p.tool, fmt.Sprintf("virtual %s after %s in %s wall; S=1 %s after %s in %s wall",
				fast.Verdict, fast.ClaimAfter().Round(time.Second), fast.Wall.Round(time.Millisecond),
				slow.Verdict, slow.ClaimAfter().Round(time.Second), slow.Wall.Round(time.Millisecond)))
		})
	}
})
