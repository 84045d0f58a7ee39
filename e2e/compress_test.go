package e2e

import (
	"fmt"
	"regexp"
	"strings"
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
// server (every /health takes >= 1 s), crashes and a stale listener, and both founding
// loops on the founding scenarios. Those run 10 minutes, too long at S=1 here, so they are
// shortened copies (founding below): the loops' own text with fewer iterations, against the
// founding scenarios with a start-up of under a minute; bench/agreement.sh runs the
// full-length pairs.
var _ = Describe("time compression", Ordered, ContinueOnFailure, Label("inprocess", "slow"), func() {
	pairs := []struct {
		scenario, tool string
		want           harness.Verdict
	}{
		// the server is ready within a minute; the loop ignores its empty-body 200s, gives up
		{"hicache-48-cold-start", "founding-loop-1", harness.MissedReady},
		// the host OOM kills the server within a minute; the loop runs out at about 100 s
		{"hicache-300-host-oom", "founding-loop-2", harness.FailedSlow},
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
			tools, err := harness.SelectTools(harness.Builtins(), []string{p.tool})
			Expect(err).NotTo(HaveOccurred())
			if strings.HasPrefix(p.tool, "founding-loop-") {
				s, tools[0] = founding(s, tools[0])
			}
			c, err := harness.NewCase(s, 1)
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
	}, NodeTimeout(6*time.Minute))

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

// founding returns shortened copies of a founding scenario and a founding loop: the load takes
// 0.5 s a shard instead of 9 s and graph capture a sixth of its time (a start-up of under a
// minute instead of 10.5), and the loop makes 90 s of probes (18 x 5 s, or 9 x 10 s) instead
// of 10 minutes, its text otherwise unchanged.
func founding(s *scenarios.Scenario, tool harness.Tool) (*scenarios.Scenario, harness.Tool) {
	GinkgoHelper()
	text, err := scenarios.FileText(s.Name)
	Expect(err).NotTo(HaveOccurred())
	yaml := string(text)
	for _, r := range []struct{ old, new string }{
		{"per_shard: 9s", "per_shard: 0.5s"},
		{"capture_per_bs: 1.2s", "capture_per_bs: 0.2s"},
		{"name: " + s.Name, "name: " + s.Name + "-short"},
	} {
		Expect(yaml).To(ContainSubstring(r.old), "the founding scenario changed: update the shortened copy")
		yaml = strings.Replace(yaml, r.old, r.new, 1)
	}
	// The expected instants (and the exit code, which needs one) are the full-length run's;
	// the verdict and tolerance stay: the spec pins its own verdict.
	yaml = regexp.MustCompile(`(?m)^  (bound|ready|dead|exit_code): .*\n`).ReplaceAllString(yaml, "")
	short, err := scenarios.Load(s.Name+"-short", []byte(yaml))
	Expect(err).NotTo(HaveOccurred())

	probes := map[string]struct{ from, to string }{
		"founding-loop-1": {"seq 1 120", "seq 1 18"},
		"founding-loop-2": {"seq 1 60", "seq 1 9"},
	}[tool.Name]
	Expect(tool.Command).To(ContainSubstring(probes.from), "the founding loop changed: update the shortened copy")
	tool.Command = strings.Replace(tool.Command, probes.from, probes.to, 1)
	tool.Name += "-90s"
	tool.Budget = 2 * time.Minute
	return short, tool
}
