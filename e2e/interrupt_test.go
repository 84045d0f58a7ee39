package e2e

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/internal/proc"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// interruptMarkerVar is set in the environment of the `score` under test. Every process it
// starts inherits it (faketime, bash, curl, sleep, the {{.PID}} stand-in), even one that
// moved to its own process group, so a /proc scan finds whatever survives the interrupt.
const interruptMarkerVar = "INCIDENT_REPLAY_TEST_MARKER"

// Long scenarios x shell and Go tools: the founding loop and curl-strict keep process groups
// busy for minutes of scenario time, and llmwait's preflight fails hicache-300 at once, so a
// progress line arrives while the rest are still in flight.
var interruptArgs = []string{"score",
	"--scenario", "hicache-48-cold-start,s7-slow-load,hicache-300-host-oom",
	"--tool-name", "founding-loop-1,curl-strict,llmwait",
	// S=20 instead of 60: the long pairs run ~40 s of wall time, so the interrupt surely lands
	// while they run even when containers are slow to start.
	"--speed", "20",
}

// progressLine is the matrix's per-pair line ("[  1/9   0.4s] scenario tool verdict").
var progressLine = regexp.MustCompile(`^\[\s*\d+/\d+\s`)

var _ = Describe("interrupting score (SIGINT)", func() {
	It("leaves no process behind (in-process servers)", Label("inprocess"), func(ctx SpecContext) {
		interruptScore(ctx, nil, 30*time.Second, 45*time.Second)
	}, SpecTimeout(3*time.Minute))

	It("leaves no process and no container behind (--container)", Label("container"), func(ctx SpecContext) {
		image := imageTag() // skips when Docker is missing
		interruptScore(ctx, []string{"--container", "--image", image}, 90*time.Second, 90*time.Second)
	}, SpecTimeout(5*time.Minute))
})

// interruptScore runs `score` with extra flags, interrupts it once a pair has finished and
// others run, and checks it exits promptly, non-zero, with nothing of its own left running.
func interruptScore(ctx SpecContext, extra []string, progressWithin, exitWithin time.Duration) {
	dir := GinkgoT().TempDir()
	bin := filepath.Join(dir, "incident-replay")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/incident-replay")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build ./cmd/incident-replay: %s", out)

	marker := fmt.Sprintf("interrupt-%d-%d", GinkgoParallelProcess(), time.Now().UnixNano())
	container := len(extra) > 0
	cmd := exec.Command(bin, append(interruptArgs, extra...)...)
	cmd.Dir = dir
	// A run id of its own, so the container check looks at this command's containers only.
	cmd.Env = append(os.Environ(), interruptMarkerVar+"="+marker, "INCIDENT_REPLAY_RUN_ID="+marker)
	// Its own session: the harness moves each shell tool into a process group of its own,
	// but none leaves the session, so the session id finds them as well as the marker does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	Expect(err).NotTo(HaveOccurred())
	Expect(cmd.Start()).To(Succeed())
	sid := cmd.Process.Pid

	// A failing spec must not leave anything either: kill the tree and sweep the containers.
	waited := make(chan error, 1)
	DeferCleanup(func(ctx SpecContext) {
		_ = syscall.Kill(-sid, syscall.SIGKILL)
		for _, p := range interruptSurvivors(marker, sid) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
		select {
		case <-waited:
		case <-time.After(10 * time.Second):
		}
		if container {
			_, err := fakeserver.Sweep(ctx, marker)
			Expect(err).NotTo(HaveOccurred())
		}
	}, NodeTimeout(time.Minute))

	var (
		mu     sync.Mutex
		stderr bytes.Buffer
	)
	progressed := make(chan struct{})
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(errPipe)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			stderr.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if progressLine.MatchString(sc.Text()) {
				once.Do(func() { close(progressed) })
			}
		}
	}()
	go func() {
		<-scanned // Wait closes the pipe: read it to the end first
		waited <- cmd.Wait()
	}()
	errText := func() string {
		mu.Lock()
		defer mu.Unlock()
		return stderr.String()
	}

	select {
	case <-progressed:
	case err := <-waited:
		waited <- err
		Fail(fmt.Sprintf("score ended (%v) before any progress line:\n%s%s", err, errText(), stdout.String()))
	case <-time.After(progressWithin):
		Fail(fmt.Sprintf("no progress line within %s:\n%s", progressWithin, errText()))
	}

	// The interrupt must hit live work, or the checks below prove nothing: wait until most
	// of the six shell pairs have processes up (score itself is one of the survivors).
	var live []interruptProc
	Eventually(func() int { live = interruptSurvivors(marker, sid); return len(live) }).
		WithTimeout(progressWithin).WithPolling(50*time.Millisecond).
		Should(BeNumerically(">=", 5), func() string { return fmt.Sprintf("few processes of score up: %v\n%s", live, errText()) })
	if container {
		ids, err := fakeserver.Leftovers(ctx, marker)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).NotTo(BeEmpty(), "no container of this run is up at the interrupt")
	}

	sent := time.Now()
	Expect(cmd.Process.Signal(syscall.SIGINT)).To(Succeed())
	var werr error
	select {
	case werr = <-waited:
		waited <- werr // for the cleanup
	case <-time.After(exitWithin):
		Fail(fmt.Sprintf("score still running %s after SIGINT (%d processes were live):\n%s", exitWithin, len(live), errText()))
	}
	took := time.Since(sent)
	GinkgoWriter.Printf("score exited %.1fs after SIGINT with %v; %d processes were live\n", took.Seconds(), werr, len(live))

	// It handled the signal (exited, not killed by it) and reported failure.
	st := cmd.ProcessState
	Expect(st.Exited()).To(BeTrue(), "score did not exit by itself: %v\n%s", st, errText())
	Expect(st.ExitCode()).NotTo(BeZero(), "an interrupted score exited 0:\n%s", errText())

	// Nothing of its tree: its process group is empty, and no process in its session or
	// with its marker is alive. SIGKILL is delivered asynchronously, so a process the
	// harness has just killed may take a moment to become a zombie; a loop that escaped
	// the kill would still be alive (and starting processes) a second later.
	Expect(syscall.Kill(-sid, 0)).To(MatchError(syscall.ESRCH), "score's process group still has members")
	Eventually(func() []interruptProc { return interruptSurvivors(marker, sid) }).
		WithTimeout(time.Second).WithPolling(20*time.Millisecond).
		Should(BeEmpty(), "processes of the interrupted score survive")

	if container {
		ids, err := fakeserver.Leftovers(ctx, marker)
		Expect(err).NotTo(HaveOccurred())
		Expect(ids).To(BeEmpty(), "containers of the interrupted score remain (label %s=%s)", fakeserver.LabelRun, marker)
	}
}

type interruptProc struct {
	pid int
	cmd string
}

func (p interruptProc) String() string { return strconv.Itoa(p.pid) + " " + p.cmd }

// interruptSurvivors lists live processes in session sid or carrying marker in their
// environment; zombies (already dead, waiting to be reaped) are not survivors.
func interruptSurvivors(marker string, sid int) []interruptProc {
	want := []byte("\x00" + interruptMarkerVar + "=" + marker + "\x00")
	pids, err := proc.PIDs("")
	Expect(err).NotTo(HaveOccurred())
	var out []interruptProc
	for _, pid := range pids {
		st, err := proc.Read("", pid)
		if err != nil || !st.Alive() {
			continue // gone meanwhile, or a zombie
		}
		dir := "/proc/" + strconv.Itoa(pid)
		env, _ := os.ReadFile(dir + "/environ")
		if st.Session != sid && !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		out = append(out, interruptProc{pid: pid, cmd: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))})
	}
	return out
}
