package fakeserver_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/matchers"
	"github.com/incident-replay/incident-replay/vtime"
)

// The founding incident in-process on virtual time: an 11-minute cold start of Kimi-K2.5 with
// --hicache-size 48, after which /health answers 200 with an empty body. With nothing else on
// the clock it jumps straight through the load; the journal tells when the port opened and
// when the server became ready, in scenario time.
func ExampleStart() {
	cfg, err := fakeserver.ConfigForScenario("hicache-48-cold-start", fakeserver.ScenarioOptions{Seed: 1})
	if err != nil {
		panic(err)
	}
	clock := vtime.New(cfg.Timeline.Start, vtime.Options{})
	defer clock.Close()
	cfg.Clock = clock
	cfg.Args.Host, cfg.Args.Port = "127.0.0.1", 0 // a free loopback port, not the scenario's 8000
	cfg.Journal = &bytes.Buffer{}                 // read back by srv.Journal
	srv, err := fakeserver.Start(context.Background(), cfg)
	if err != nil {
		panic(err)
	}
	defer srv.Stop(context.Background())

	g := NewGomega(func(msg string, _ ...int) { panic(msg) })
	g.Eventually(srv).WithTimeout(30 * time.Second).Should(matchers.BeReadyWithin(11 * time.Minute))

	resp, err := http.Get(srv.BaseURL() + "/health")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Printf("/health: %d, %d-byte body\n", resp.StatusCode, len(body))
	g.Expect(srv).To(matchers.HaveServed("/health", 200))

	recs, _ := srv.Journal(context.Background())
	t := fakeserver.GroundTruth(recs)
	fmt.Printf("bound at %s, ready at %s\n", t.Bound.Round(time.Second), t.Ready.Round(time.Second))
	// Output:
	// /health: 200, 0-byte body
	// bound at 10m32s, ready at 10m33s
}

// The testcontainers module: the same incident in the fakesglang image, at 60x (the container
// does not follow virtual time), asserted with the same matchers. It needs a Docker daemon and
// the image (fakeserver.BuildImage from this tree, or `make image`), so `go test` compiles it
// but does not run it; examples/ holds a suite that runs it where Docker answers.
func ExampleRun() {
	ctx := context.Background()
	image, err := fakeserver.BuildImage(ctx, ".")
	if err != nil {
		panic(err)
	}
	ctr, err := fakeserver.Run(ctx, image, fakeserver.WithScenario("hicache-48-cold-start"), fakeserver.WithSpeed(60))
	if ctr != nil {
		defer ctr.Stop(ctx)
	}
	if err != nil {
		panic(err)
	}
	g := NewGomega(func(msg string, _ ...int) { panic(msg) })
	// 11 minutes of scenario time is 11 s at 60x.
	g.Eventually(ctr).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(matchers.BeReadyWithin(11 * time.Minute))
	fmt.Println(ctr.BaseURL())
}
