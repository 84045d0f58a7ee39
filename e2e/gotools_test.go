package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/vtime/ptrace"
)

// waiterBudget is the waiters' own time limit: past the founding cold start's 10m33s ready.
const waiterBudget = 15 * time.Minute

// goWaiterTools are a wait4x-like and a dockerize-like Go binary (net/http, 3 s client
// timeout, 5 s interval: wait4x http --expect-status-code 200, dockerize -wait's 2xx) and an
// eficode/wait-for-style wget loop with the same timing.
func goWaiterTools(bin string) map[string]harness.Tool {
	goCmd := func(accept string) string {
		return fmt.Sprintf("%s -url {{.URL}}/health -timeout %s -interval 5s -client-timeout 3s -accept %s", bin, waiterBudget, accept)
	}
	wget := fmt.Sprintf(`end=$((SECONDS+%d)); until wget -q -T 3 -t 1 -O /dev/null {{.URL}}/health; do `+
		`if [ $SECONDS -ge $end ]; then echo timeout; exit 1; fi; sleep 5; done; echo ready`, int(waiterBudget/time.Second))
	return map[string]harness.Tool{
		"wait4x-like":    {Name: "wait4x-like", Command: goCmd("200"), Interval: 5 * time.Second, Budget: waiterBudget},
		"dockerize-like": {Name: "dockerize-like", Command: goCmd("2xx"), Interval: 5 * time.Second, Budget: waiterBudget},
		"wget-wait-for":  {Name: "wget-wait-for", Command: wget, Interval: 5 * time.Second, Budget: waiterBudget},
	}
}

// goWaiterVerdicts follow from each scenario's ground truth and what the three waiters do
// (all three give up after waiterBudget, when nothing they accept came).
var goWaiterVerdicts = []struct {
	scenario string
	want     harness.Verdict // every waiter's verdict
	why      string          // how it follows from the truth
	wget     harness.Verdict // the wget loop's, where it differs
}{
	{"s0-happy-era-c", harness.ReadyOK, "ready at 23 s; the first probe after it gets 200 within interval + 1 s", ""},
	{"s1-empty-200", harness.ReadyOK, "a 200 with an empty body passes: none of them matches the body", ""},
	{"s16-flap", harness.ReadyOK, "the first 200 after ready comes before the first 503 window ends", ""},
	{"hicache-48-cold-start", harness.ReadyOK, "founding incident: ready at 10m33s with an empty 200, inside their 15 m budget", ""},
	{"s3-hang", harness.FailedSlow, "every request times out at 3 s; they give up at 15 m, long after the wedge at 23 s", ""},
	{"s2-warmup-stuck", harness.FailedSlow, "503 forever: never ready, never dead; the only way out is their timeout", ""},
	{"s4-crash-during-load", harness.FailedSlow, "the port never opens; they see refusals until their timeout, minutes after the crash at 10 s", ""},
	{"hicache-300-host-oom", harness.FailedSlow, "founding incident: the port never opens, the server dies at 10m33s, they give up at 15 m", ""},
	{"s11-redirect", harness.FalseReady, "/health answers 302 to /v1/models, whose 200 all three follow, on a server that is never ready", ""},
	{"s13b-slow-health-25s", harness.MissedReady, "/health takes 25 s, past the 3 s client timeout, so a ready server is never seen", ""},
	{"s8-stale-listener", harness.FalseReady, "the old server answers 200 at once; the new one never becomes ready", ""},
	{"s17-false-healthy", harness.FalseReady, "era A's unconditional 200 after bind, on a server whose scheduler died at 23 s", ""},
	// The scenario's http_proxy (nothing listens there) reaches every tool: wget sends its
	// requests to it; Go's ProxyFromEnvironment never proxies a loopback address.
	{"s9-proxy-env", harness.ReadyOK, "a healthy server, probed directly by the Go waiters; wget asks the dead proxy until its timeout", harness.MissedReady},
}

// Not Ordered: the pairs are independent and spread over the parallel processes; the
// waiter binary is built once for the suite (suiteShared.BinDir).
var _ = Describe("Go-binary and wget waiters on virtual time", func() {
	var tools map[string]harness.Tool

	BeforeEach(func() {
		if !ptrace.Supported {
			Skip("Go binaries cannot be traced onto virtual time on this platform")
		}
		for _, b := range []string{"bash", "wget"} {
			if _, err := exec.LookPath(b); err != nil {
				Skip(b + " not installed")
			}
		}
		tools = goWaiterTools(filepath.Join(shared.BinDir, "gowaiter"))
	})

	// The same verdicts in-process and with the server in a container (whose clock follows
	// the run's).
	var entries []TableEntry
	for _, where := range []string{"inprocess", "container"} {
		for _, v := range goWaiterVerdicts {
			for _, tool := range []string{"wait4x-like", "dockerize-like", "wget-wait-for"} {
				want := v.want
				if tool == "wget-wait-for" && v.wget != "" {
					want = v.wget
				}
				entries = append(entries, Entry(fmt.Sprintf("%s x %s %s: %s", v.scenario, tool, where, v.why), Label(where), where, v.scenario, tool, want))
			}
		}
	}
	DescribeTable("pins the verdict", func(ctx SpecContext, where, scenario, tool string, want harness.Verdict) {
		s, err := scenarios.Resolve(scenario)
		Expect(err).NotTo(HaveOccurred())
		c, err := harness.NewCase(s, 1)
		Expect(err).NotTo(HaveOccurred())
		t := tools[tool]
		rctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		start := time.Now()
		var launcher harness.Launcher = harness.InProcess{Dir: GinkgoT().TempDir()}
		if where == "container" {
			launcher = harness.Container{Image: imageTag(), Dir: GinkgoT().TempDir()}
		}
		r := harness.Runner{Launcher: launcher, Speed: harness.Virtual}.Run(rctx, c, t)
		Expect(r.Err).NotTo(HaveOccurred())
		GinkgoWriter.Printf("%s x %s: %s at %s (%s), mode %s, wall %s\n", scenario, tool, r.Verdict, harness.FormatDuration(r.ClaimAfter()),
			r.Reason, r.Mode, time.Since(start).Round(time.Millisecond))
		wantMode := harness.ModePtrace
		if tool == "wget-wait-for" {
			wantMode = harness.ModeVirtual
		}
		Expect(r.Mode).To(Equal(wantMode), "time mode")
		Expect(r.Verdict).To(Equal(want), "%s; last output: %s", r.Reason, r.Output)
	}, entries)
})
