// Package e2e holds the Ginkgo suites: fake-server fidelity in-process and in containers,
// the scenario catalogue, llmwait, and GPU specs. This file is the package's one bootstrap.
//
// Labels: container (needs Docker), inprocess, slow, gpu. Specs whose verdicts are judged on a
// wall clock compressed S times are Serial: under `ginkgo --procs N` they run alone at the end,
// so a parallel neighbour's load cannot stretch their time.
package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/testcontainers/testcontainers-go"
)

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "incident-replay e2e")
}

// suite state shared by every process: the image tag, or why containers cannot run.
var (
	sharedImage string
	noDocker    string
)

// dockerAvailable reports whether container specs can run, and why not.
func dockerAvailable() (bool, string) { return noDocker == "", noDocker }

// imageTag returns the fakesglang image built for this run; it skips the calling spec when
// Docker is missing (the suite already failed loudly if CI=true).
func imageTag() string {
	if ok, why := dockerAvailable(); !ok {
		Skip("container spec skipped: docker unavailable: " + why)
	}
	return sharedImage
}

// repoRoot is the module root (the e2e package sits one below it).
func repoRoot() string {
	abs, err := filepath.Abs("..")
	Expect(err).NotTo(HaveOccurred())
	return abs
}

// containerEnv is set in every parallel process: Ryuk cannot be pulled and traffic must stay
// on loopback.
func containerEnv() {
	for k, v := range map[string]string{"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1"} {
		if os.Getenv(k) == "" {
			Expect(os.Setenv(k, v)).To(Succeed())
		}
	}
}

// suiteShared is what process 1 prepares for every parallel process.
type suiteShared struct {
	NoDocker string // why container specs cannot run; "" when they can
	Image    string // the fakesglang image built from this tree
	RunID    string // one run id for every process, so one sweep finds all their containers
	BinDir   string // test programs built once (gowaiter); removed at the suite's end
}

var _ = SynchronizedBeforeSuite(func(ctx SpecContext) []byte {
	containerEnv()
	var sh suiteShared
	dir, err := os.MkdirTemp("", "ir-e2e-bin-")
	Expect(err).NotTo(HaveOccurred())
	sh.BinDir = dir
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "gowaiter"), "github.com/incident-replay/incident-replay/internal/testprog/gowaiter")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build gowaiter: %s", out)
	p, err := testcontainers.NewDockerProvider()
	if err == nil {
		err = p.Health(ctx)
		p.Close()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			Fail("CI=true but docker is unavailable, so container specs cannot run: " + err.Error())
		}
		sh.NoDocker = err.Error()
	} else {
		// Leftovers of killed runs go first; containers of runs still going (a concurrent
		// score --container or test run) stay: their owner process is alive.
		_, err = fakeserver.SweepOrphans(ctx)
		Expect(err).NotTo(HaveOccurred())
		sh.Image, err = fakeserver.BuildImage(ctx, repoRoot())
		Expect(err).NotTo(HaveOccurred())
		sh.RunID = fakeserver.RunID
	}
	b, err := json.Marshal(sh)
	Expect(err).NotTo(HaveOccurred())
	return b
}, func(data []byte) {
	containerEnv()
	Expect(json.Unmarshal(data, &shared)).To(Succeed())
	noDocker, sharedImage = shared.NoDocker, shared.Image
	if shared.RunID != "" {
		fakeserver.RunID = shared.RunID
	}
}, NodeTimeout(5*time.Minute))

var shared suiteShared

var _ = SynchronizedAfterSuite(func() {}, func(ctx SpecContext) {
	if shared.BinDir != "" {
		Expect(os.RemoveAll(shared.BinDir)).To(Succeed())
	}
	if ok, _ := dockerAvailable(); !ok {
		return
	}
	_, err := fakeserver.Sweep(ctx, fakeserver.RunID)
	Expect(err).NotTo(HaveOccurred())
	left, err := fakeserver.Leftovers(ctx, fakeserver.RunID)
	Expect(err).NotTo(HaveOccurred())
	Expect(left).To(BeEmpty(), "containers of this run left behind")
	// Keep this tree's image for the next run (BuildImage reuses it); drop older builds.
	if tag := sharedImage; tag != "" {
		_, err = fakeserver.PruneImages(ctx, tag)
		Expect(err).NotTo(HaveOccurred())
	}
}, NodeTimeout(2*time.Minute))

// runContainer starts fakesglang and registers its removal before checking the error
// (Run returns a container even when it fails).
func runContainer(ctx context.Context, opts ...testcontainers.ContainerCustomizer) *fakeserver.Container {
	c, err := fakeserver.Run(ctx, imageTag(), opts...)
	if c != nil {
		DeferCleanup(func(ctx SpecContext) error { return c.Stop(ctx) })
	}
	Expect(err).NotTo(HaveOccurred())
	return c
}
