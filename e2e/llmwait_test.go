package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

// llmwait must reach every catalogue scenario's expected verdict, as the library (the
// harness's built-in tool) and as the binary (llmwait attach, following the server's log
// file), both on the run's virtual clock. Servers run in-process; pairs run in parallel.
var _ = Describe("llmwait against the catalogue", Serial, Ordered, ContinueOnFailure, Label("inprocess", "slow"), func() {
	all, loadErr := scenarios.Catalogue()
	type key struct{ scenario, tool string }
	results := map[key]harness.Result{}
	var bin string

	BeforeAll(func(ctx SpecContext) {
		Expect(loadErr).NotTo(HaveOccurred())
		bin = filepath.Join(GinkgoT().TempDir(), "llmwait")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/llmwait")
		build.Dir = repoRoot()
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/llmwait: %s", out)

		lib := libraryTool()
		binTool := binaryTool(bin)
		launcher := harness.InProcess{Dir: GinkgoT().TempDir()}
		runners := map[string]harness.Runner{
			lib.Name:     {Launcher: launcher, Speed: harness.Virtual},
			binTool.Name: {Launcher: launcher, Speed: harness.Virtual},
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		sem := make(chan struct{}, 4) // a traced binary run costs a core while it works
		for _, s := range all {
			c, err := harness.NewCase(s, 1)
			Expect(err).NotTo(HaveOccurred(), s.Name)
			for _, t := range []harness.Tool{lib, binTool} {
				wg.Go(func() {
					sem <- struct{}{}
					defer func() { <-sem }()
					r := runners[t.Name].Run(ctx, c, t)
					mu.Lock()
					results[key{s.Name, t.Name}] = r
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	}, NodeTimeout(5*time.Minute))

	var entries []TableEntry
	for _, s := range all {
		for _, tool := range []string{"llmwait", "llmwait-bin"} {
			entries = append(entries, Entry(s.Name+" / "+tool, s.Name, tool, s.Expect.Verdict))
		}
	}
	DescribeTable("reaches the expected verdict", func(scenario, tool string, want scenarios.Verdict) {
		r, ok := results[key{scenario, tool}]
		Expect(ok).To(BeTrue(), "no result")
		Expect(r.Err).NotTo(HaveOccurred())
		Expect(r.Verdict).To(Equal(want), "%s on %s: %s (claim after %s, output %q)", tool, scenario, r.Reason, r.ClaimAfter(), r.Output)
	}, entries)
})

// libraryTool is the harness's built-in llmwait (ready.Wait on the run's clock).
func libraryTool() harness.Tool {
	for _, t := range harness.Builtins() {
		if t.Name == "llmwait" {
			t.MustPass = true
			return t
		}
	}
	Fail("harness.Builtins has no llmwait tool")
	return harness.Tool{}
}

// binaryTool runs the llmwait binary in attach mode, following the server's log file, as a
// shell tool: the harness finds a Go binary first in the command and traces it onto the run's
// virtual clock. The server runs in the harness's process, so its PID is the stand-in that
// lives as long as the server (identity cannot hold for a stand-in).
func binaryTool(bin string) harness.Tool {
	return harness.Tool{
		Name: "llmwait-bin", Description: "llmwait attach (binary), traced", Interval: time.Second,
		Budget: 30 * time.Minute, MustPass: true,
		Command: bin + ` attach --url {{.URL}} --log {{.LogFile}} --pid {{.PID}} --identity=false --quiet` +
			`{{if .APIKey}} --api-key {{.APIKey}}{{end}}`,
	}
}

// Detection latency against the founding incidents' loops: the time from the event a tool
// should notice (t_ready on a good start, t_dead on a failed one) to its claim, for llmwait
// and for the two curl|grep loops as they were written. Reported as entries (ratio = loop
// latency / llmwait latency); the spec fails if llmwait is ever the slower one.
// notDetected marks a tool whose claim is not of the event's kind.
const notDetected time.Duration = -2

var _ = Describe("llmwait detection latency vs the founding loops", Ordered, Label("inprocess", "slow", "bench"), func() {
	names := []string{"s0-happy-era-c", "s1-empty-200", "hicache-48-cold-start", "hicache-300-host-oom", "s4-crash-during-load"}

	It("is lower on every founding-incident scenario", func(ctx SpecContext) {
		all, err := scenarios.Catalogue()
		Expect(err).NotTo(HaveOccurred())
		tools := []harness.Tool{libraryTool()}
		for _, t := range harness.Builtins() {
			if t.Name == "founding-loop-1" || t.Name == "founding-loop-2" {
				tools = append(tools, t)
			}
		}
		Expect(tools).To(HaveLen(3))
		// On virtual time: a latency depends on the tools, not on how loaded the host is.
		runner := harness.Runner{Launcher: harness.InProcess{Dir: GinkgoT().TempDir()}, Speed: harness.Virtual}
		lat := map[string]map[string]time.Duration{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, s := range all {
			if !slices.Contains(names, s.Name) {
				continue
			}
			c, err := harness.NewCase(s, 1)
			Expect(err).NotTo(HaveOccurred())
			lat[s.Name] = map[string]time.Duration{}
			for _, t := range tools {
				wg.Go(func() {
					r := runner.Run(ctx, c, t)
					event, want := r.Truth.Ready, harness.ClaimReady
					if event == nil || (r.Truth.Dead != nil && *r.Truth.Dead < *event) {
						event, want = r.Truth.Dead, harness.ClaimFailed
					}
					mu.Lock()
					defer mu.Unlock()
					if r.Err != nil || event == nil || r.Claim.At.IsZero() {
						lat[s.Name][t.Name] = -1
						return
					}
					// Only a claim of the event's kind detects it: a loop that gives up on a
					// server that came up (or calls a dead one ready) detected nothing.
					if r.Claim.Outcome != want {
						lat[s.Name][t.Name] = notDetected
						return
					}
					// A preflight that predicts the death claims before it: zero latency.
					lat[s.Name][t.Name] = max(r.ClaimAfter()-*event, 0)
				})
			}
		}
		wg.Wait()
		for _, n := range names {
			row, ok := lat[n]
			if !ok {
				continue
			}
			own := row["llmwait"]
			Expect(own).To(BeNumerically(">=", 0), "%s: llmwait made no claim of the event's kind (%v)", n, own)
			denom := max(own, 100*time.Millisecond) // a preflight-caught death can be early
			for _, loop := range []string{"founding-loop-1", "founding-loop-2"} {
				l := row[loop]
				if l < 0 {
					why := "no claim (hung)"
					if l == notDetected {
						why = "never detected it: its claim was of the other kind (a give-up is not a detection), so llmwait's detection is earlier"
					}
					AddReportEntry(fmt.Sprintf("%s %s", n, loop), why)
					GinkgoWriter.Printf("%s %s: %s\n", n, loop, why)
					continue
				}
				v := fmt.Sprintf("%.1fx (%s vs %s)", float64(l)/float64(denom), l.Round(100*time.Millisecond), own.Round(100*time.Millisecond))
				AddReportEntry(fmt.Sprintf("%s %s/llmwait", n, loop), v)
				GinkgoWriter.Printf("%s %s/llmwait: %s\n", n, loop, v)
				Expect(own).To(BeNumerically("<=", l), "%s: llmwait %s slower than %s %s", n, own, loop, l)
			}
		}
	}, NodeTimeout(5*time.Minute))
})
