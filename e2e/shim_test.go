package e2e

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The launch shim: an unmodified relaunch script (testdata/relaunch-hicache.sh) runs against
// the founding host with the shim first on PATH. Its first launch (--hicache-size 300, x8
// ranks on 449 GB) dies of host OOM; its relaunch with 48 comes up. The script and its sleeps
// run under faketime at the same speed as fakesglang.
var _ = Describe("launch shim", Serial, Ordered, ContinueOnFailure, Label("inprocess", "slow"), func() {
	const speed = "60"
	var bin, shimDir string

	BeforeAll(func(ctx SpecContext) {
		for _, b := range []string{"faketime", "curl", "bash", "python3"} {
			if _, err := exec.LookPath(b); err != nil {
				Skip(b + " is not installed")
			}
		}
		bin = GinkgoT().TempDir()
		for _, cmd := range []string{"incident-replay", "fakesglang"} {
			build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, cmd), "./cmd/"+cmd)
			build.Dir = repoRoot()
			out, err := build.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "go build ./cmd/%s: %s", cmd, out)
		}
		shimDir = filepath.Join(GinkgoT().TempDir(), "shim")
		out, err := exec.CommandContext(ctx, filepath.Join(bin, "incident-replay"), "shim", shimDir,
			"--scenario", "hicache-48-cold-start", "--speed", speed).CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		for _, w := range []string{"python", "python3", "sglang"} {
			Expect(filepath.Join(shimDir, w)).To(BeAnExistingFile())
		}
	}, NodeTimeout(5*time.Minute))

	// run starts a command (argv[0] resolved by the caller) with the shim first on PATH, in its own process group that
	// is killed when the spec ends.
	run := func(ctx context.Context, dir string, env []string, argv ...string) (string, error) {
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append(env, "PATH="+shimDir+string(os.PathListSeparator)+os.Getenv("PATH"))...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Start()
		if err == nil {
			DeferCleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
			err = cmd.Wait()
		}
		return out.String(), err
	}

	It("passes other python invocations to the real interpreter", func(ctx SpecContext) {
		out, err := run(ctx, GinkgoT().TempDir(), nil, filepath.Join(shimDir, "python"), "-c", "import sys; print('real', sys.version_info[0])")
		Expect(err).NotTo(HaveOccurred(), out)
		Expect(out).To(Equal("real 3\n"))
		out, err = run(ctx, GinkgoT().TempDir(), nil, filepath.Join(shimDir, "sglang"), "version")
		Expect(err).To(HaveOccurred())
		Expect(out).To(ContainSubstring("only 'sglang serve"))
	}, NodeTimeout(time.Minute))

	It("replays the OOM of --hicache-size 300 and the relaunch with 48", func(ctx SpecContext) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		Expect(err).NotTo(HaveOccurred())
		port := l.Addr().(*net.TCPAddr).Port
		Expect(l.Close()).To(Succeed())
		work := GinkgoT().TempDir()
		script := filepath.Join(repoRoot(), "e2e", "testdata", "relaunch-hicache.sh")
		start := time.Now()
		out, err := run(ctx, work, []string{"PORT=" + strconv.Itoa(port)}, "faketime", "-f", "+0 x"+speed, "bash", script)
		GinkgoWriter.Printf("launch script output (%s wall):\n%s", time.Since(start).Round(time.Second), out)
		Expect(err).NotTo(HaveOccurred())
		Expect(out).To(MatchRegexp(`server with --hicache-size 300 died \(exit \d+\)`))
		Expect(out).To(ContainSubstring("READY with --hicache-size 48"))
		log300, err := os.ReadFile(filepath.Join(work, "server-300.log"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log300)).To(MatchRegexp(`(?i)oom|out of memory|SIGKILL|-9`), "the 300 GB launch dies of host memory")
		AddReportEntry("shim relaunch", time.Since(start).Round(time.Second).String()+" wall at "+speed+"x")
	}, NodeTimeout(3*time.Minute))
})
