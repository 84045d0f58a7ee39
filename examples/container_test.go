package examples_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/testcontainers/testcontainers-go"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/matchers"
)

// speed compresses the container's clock: the container does not follow virtual time, so
// the 11-minute cold start takes 11 s of wall time at 60x.
const speed = 60

// image is the fakesglang image: $FAKESGLANG_IMAGE (e.g. from `make image`), or built from
// this source tree. In your own project, set the variable.
func image(ctx context.Context) string {
	if tag := os.Getenv("FAKESGLANG_IMAGE"); tag != "" {
		return tag
	}
	root, err := filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())
	tag, err := fakeserver.BuildImage(ctx, root)
	Expect(err).NotTo(HaveOccurred(), "build the fakesglang image (or set FAKESGLANG_IMAGE)")
	return tag
}

// requireDocker skips the spec when no Docker daemon answers, except under CI, where a
// missing daemon is a broken runner and fails the spec.
func requireDocker(ctx context.Context) {
	for k, v := range map[string]string{"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1"} {
		if os.Getenv(k) == "" {
			Expect(os.Setenv(k, v)).To(Succeed())
		}
	}
	p, err := testcontainers.NewDockerProvider()
	if err == nil {
		err = p.Health(ctx)
		p.Close()
	}
	if err == nil {
		return
	}
	if os.Getenv("CI") != "" {
		Fail("CI is set but no Docker daemon answers, so the container example cannot run: " + err.Error())
	}
	Skip("no Docker daemon answers (" + err.Error() + "); start one to run the container example")
}

// waitHealthy is a wall-clock wait of the kind a suite puts before its tests: GET /health
// every probe interval until 200, for at most budget.
func waitHealthy(ctx context.Context, url string, interval, budget time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	client := &http.Client{Timeout: interval}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/health", nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(interval):
		}
	}
}

var _ = Describe("the founding incident in the fakesglang container", Label("container"), func() {
	It("is ready within 11 minutes, with a 200 on /health", func(ctx SpecContext) {
		requireDocker(ctx)
		ctr, err := fakeserver.Run(ctx, image(ctx), fakeserver.WithScenario("hicache-48-cold-start"), fakeserver.WithSpeed(speed))
		if ctr != nil {
			DeferCleanup(func(ctx SpecContext) { Expect(ctr.Stop(ctx)).To(Succeed()) })
		}
		Expect(err).NotTo(HaveOccurred())

		// 5 s probes and a 15-minute budget, in scenario time.
		Expect(waitHealthy(ctx, ctr.BaseURL(), 5*time.Second/speed, 15*time.Minute/speed)).To(Succeed())
		Expect(ctr).To(matchers.BeReadyWithin(11 * time.Minute))
		Expect(ctr).To(matchers.HaveServed("/health", 200))
		Expect(ctr).NotTo(matchers.HaveDiedWith(137))
	}, SpecTimeout(3*time.Minute))
})
