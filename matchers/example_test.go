package matchers_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/matchers"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// waitForHealth is a user's own readiness check: GET /health every 5 s until it answers 200
// (the status, not the body: SGLang's 200 is empty), giving up after 15 minutes. Its timers
// come from env.Clock and its requests from harness.HTTPGet, so it runs on the replay's clock.
func waitForHealth(ctx context.Context, env harness.Env) error {
	deadline := env.Clock.Now().Add(15 * time.Minute)
	for env.Clock.Now().Before(deadline) {
		if code, err := harness.HTTPGet(ctx, env, "/health", 5*time.Second); err == nil && code == 200 {
			return nil
		}
		if err := replay.SleepCtx(ctx, env.Clock, 5*time.Second); err != nil {
			return err
		}
	}
	return fmt.Errorf("/health not 200 within 15m")
}

// The founding incident (an 11-minute cold start, then an empty-body 200 on /health) replayed
// in-process on virtual time: the user's wait function is scored against the server's ground
// truth, and the matchers assert on the run and on the server's journal. It takes well under a
// second of wall time.
func Example_inProcess() {
	g := NewGomega(func(msg string, _ ...int) { fmt.Println("FAIL:", msg) })
	sc, err := scenarios.Resolve("hicache-48-cold-start")
	g.Expect(err).NotTo(HaveOccurred())
	c, err := harness.NewCase(sc, 1)
	g.Expect(err).NotTo(HaveOccurred())

	runner := harness.Runner{Launcher: harness.InProcess{}, Speed: harness.Virtual}
	res := runner.Run(context.Background(), c, harness.Tool{Name: "wait-for-health", Wait: waitForHealth, Interval: 5 * time.Second})

	g.Expect(res).To(matchers.HaveVerdict(harness.ReadyOK))
	g.Expect(res).To(matchers.ClaimWithin(11 * time.Minute))
	g.Expect(res).To(matchers.BeReadyWithin(11 * time.Minute))
	g.Expect(res).To(matchers.HaveServed("/health", 200))
	g.Expect(res).To(matchers.HaveLogged(sglang.KindReady))
	fmt.Println(res.Verdict)
	// Output: ready-ok
}
