package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// Two shell tools that keep their process groups up without writing (a killed score's pipe
// would end a tool that writes) and one {{.PID}} stand-in, on a long scenario at S=20 (the
// harness limit is minutes of wall time away).
var sigkillArgs = []string{"score", "--scenario", "s7-slow-load", "--speed", "20", "--quiet",
	"--tool-name", "hold-loop",
	"--tool", "hold-loop=while :; do sleep 1; done",
	"--tool", "hold-pid=while kill -0 {{.PID}}; do sleep 1; done",
}

var _ = Describe("score killed with SIGKILL", Label("inprocess"), func() {
	It("leaves what the next score run removes: processes, /dev/shm objects, directories", func(ctx SpecContext) {
		if _, err := exec.LookPath("faketime"); err != nil {
			Skip("faketime not installed: shell tools at S=20 need it")
		}
		dir := GinkgoT().TempDir()
		bin := filepath.Join(dir, "incident-replay")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/incident-replay")
		build.Dir = repoRoot()
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/incident-replay: %s", out)

		// A TMPDIR of its own: the run root ($TMPDIR/incident-replay) holds only these runs.
		tmp := filepath.Join(dir, "tmp")
		Expect(os.Mkdir(tmp, 0o700)).To(Succeed())
		root := filepath.Join(tmp, "incident-replay")
		marker := fmt.Sprintf("sigkill-%d-%d", GinkgoParallelProcess(), time.Now().UnixNano())
		env := append(os.Environ(), "TMPDIR="+tmp, interruptMarkerVar+"="+marker)

		cmd := exec.Command(bin, sigkillArgs...)
		cmd.Dir, cmd.Env = dir, env
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} // its session finds its tools
		// Its output goes to a file, read back for failure messages while it runs.
		logPath := filepath.Join(dir, "score.log")
		logFile, err := os.Create(logPath)
		Expect(err).NotTo(HaveOccurred())
		defer logFile.Close()
		cmd.Stdout, cmd.Stderr = logFile, logFile
		scoreLog := func() string { b, _ := os.ReadFile(logPath); return string(b) }
		Expect(cmd.Start()).To(Succeed())
		sid := cmd.Process.Pid
		var shm []string // the faketime objects of the killed run's tools
		DeferCleanup(func() {
			_ = syscall.Kill(-sid, syscall.SIGKILL)
			for _, p := range interruptSurvivors(marker, sid) {
				_ = syscall.Kill(p.pid, syscall.SIGKILL)
			}
			for _, p := range shm {
				_ = os.Remove(p)
			}
		})
		waited := make(chan error, 1)
		go func() { waited <- cmd.Wait() }()

		// Wait for both tools' groups and the stand-in to be recorded and their faketime
		// objects to exist: the kill must land on live work.
		var groups []string
		Eventually(func(g Gomega) {
			dirs, err := filepath.Glob(filepath.Join(root, "run-*", "groups", "*"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(dirs).To(HaveLen(3), "recorded groups (two tools, one stand-in)\n%s", scoreLog())
			groups = dirs
			shm = nil
			for _, p := range dirs {
				pgid := filepath.Base(p)
				if objs, _ := filepath.Glob("/dev/shm/*faketime_*_" + pgid); len(objs) > 0 {
					shm = append(shm, objs...)
				}
			}
			g.Expect(shm).To(HaveLen(4), "the two faketime wrappers' semaphores and shared memory")
		}).WithContext(ctx).WithTimeout(45 * time.Second).WithPolling(50 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("recorded groups %v, faketime objects %v\n", groups, shm)

		Expect(cmd.Process.Signal(syscall.SIGKILL)).To(Succeed())
		Eventually(waited).WithTimeout(10 * time.Second).Should(Receive())

		// What SIGKILL leaves: the tools (score itself is reaped), their /dev/shm objects and
		// the run directory.
		Consistently(func() int { return len(interruptSurvivors(marker, sid)) }).
			WithTimeout(time.Second).WithPolling(100*time.Millisecond).
			Should(BeNumerically(">=", 5), "the tools' processes (2 x faketime + bash, the stand-in)")
		for _, p := range shm {
			Expect(p).To(BeAnExistingFile())
		}
		runs, err := filepath.Glob(filepath.Join(root, "run-*"))
		Expect(err).NotTo(HaveOccurred())
		Expect(runs).To(HaveLen(1))

		// The next run, a small one, removes all of it and says what it removed.
		next := exec.CommandContext(ctx, bin, "score", "--scenario", "s0-happy-era-a", "--speed", "60",
			"--tool-name", "quick", "--tool", "quick=exit 0")
		next.Dir, next.Env = dir, env
		out, err = next.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "%s", out)
		Expect(string(out)).To(MatchRegexp(`score: cleaned up after 1 killed run\(s\): [5-9] process\(es\) in 3 group\(s\), 4 /dev/shm object\(s\), 0 container\(s\), 1 run director`))

		Eventually(func() []interruptProc { return interruptSurvivors(marker, sid) }).
			WithTimeout(2*time.Second).WithPolling(20*time.Millisecond).
			Should(BeEmpty(), "processes of the killed score survive the next run")
		for _, p := range shm {
			Expect(p).NotTo(BeAnExistingFile())
		}
		left, err := os.ReadDir(root)
		Expect(err).NotTo(HaveOccurred())
		Expect(left).To(BeEmpty(), "run directories remain under %s", root)
		// Killed members are zombies until init reaps them; then the groups are gone.
		for _, g := range groups {
			pgid, err := strconv.Atoi(filepath.Base(g))
			Expect(err).NotTo(HaveOccurred())
			Eventually(func() error { return syscall.Kill(-pgid, 0) }).
				WithTimeout(5*time.Second).WithPolling(20*time.Millisecond).
				Should(MatchError(syscall.ESRCH), "process group %d still has members", pgid)
		}
	}, SpecTimeout(3*time.Minute))
})
