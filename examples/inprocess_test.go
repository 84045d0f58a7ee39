package examples_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/matchers"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
)

// waitForHealth is the wait function under test: GET /health every 5 s until it answers 200,
// for at most budget. It judges the status code only (SGLang's healthy 200 has an empty body).
// Its timers come from env.Clock and its requests from harness.HTTPGet, so the harness can run
// it on the replay's clock, virtual or compressed.
func waitForHealth(budget time.Duration) harness.WaitFunc {
	return func(ctx context.Context, env harness.Env) error {
		deadline := env.Clock.Now().Add(budget)
		for env.Clock.Now().Before(deadline) {
			if code, err := harness.HTTPGet(ctx, env, "/health", 5*time.Second); err == nil && code == 200 {
				return nil
			}
			if err := replay.SleepCtx(ctx, env.Clock, 5*time.Second); err != nil {
				return err
			}
		}
		return fmt.Errorf("/health did not answer 200 within %s", budget)
	}
}

var _ = Describe("the founding incident in-process, on virtual time", Label("inprocess"), func() {
	var founding harness.Case

	BeforeEach(func() {
		sc, err := scenarios.Resolve("hicache-48-cold-start")
		Expect(err).NotTo(HaveOccurred())
		founding, err = harness.NewCase(sc, 1)
		Expect(err).NotTo(HaveOccurred())
	})

	// Virtual time: the 11-minute cold start replays in about a second, and the verdict does
	// not depend on how busy the machine is.
	run := func(ctx context.Context, t harness.Tool) harness.Result {
		return harness.Runner{Launcher: harness.InProcess{}, Speed: harness.Virtual}.Run(ctx, founding, t)
	}

	It("scores a status-code wait ready-ok", func(ctx SpecContext) {
		res := run(ctx, harness.Tool{Name: "wait-for-health", Wait: waitForHealth(15 * time.Minute), Interval: 5 * time.Second})
		Expect(res).To(matchers.HaveVerdict(harness.ReadyOK))
		Expect(res).To(matchers.ClaimWithin(11 * time.Minute))
		Expect(res).To(matchers.BeReadyWithin(11 * time.Minute))
		Expect(res).To(matchers.HaveServed("/health", 200))
	}, SpecTimeout(time.Minute))

	It("scores a 5-minute budget missed-ready on an 11-minute cold start", func(ctx SpecContext) {
		res := run(ctx, harness.Tool{Name: "impatient", Wait: waitForHealth(5 * time.Minute), Interval: 5 * time.Second})
		Expect(res).To(matchers.HaveVerdict(harness.MissedReady))
		Expect(res.Reason).To(ContainSubstring("the server was ready at 10m33s"))
	}, SpecTimeout(time.Minute))
})
