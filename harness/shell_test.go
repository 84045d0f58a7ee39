package harness

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/replay"
)

// A tool that leaves a process outside its group (setsid) holding the output pipe must not
// keep the run from returning once the tool itself has exited.
func TestShellRunReturnsWhenAnEscapedChildHoldsThePipe(t *testing.T) {
	needShell(t, 1, "setsid", "sleep")
	marker := "incident-replay-escaped-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { killByMarker(marker) })
	r := shellRun{
		tool:  Tool{Name: "escape", Claim: ByExit},
		clock: replay.Scaled(time.Now(), 1),
		limit: time.Minute,
		env:   append(toolEnv(), "ESCAPE_MARKER="+marker),
	}
	// The escaped sleep outlives the test's own deadline, so waiting for it would time out.
	script := `setsid sleep 600 & sleep 0.5; echo started; exit 0`
	done := make(chan Claim, 1)
	go func() {
		c, err := r.runScript(context.Background(), script)
		if err != nil {
			t.Error(err)
		}
		done <- c
	}()
	select {
	case c := <-done:
		if c.Outcome != ClaimReady || c.ExitCode != 0 {
			t.Errorf("claim %+v, want ready with exit 0", c)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not return while an escaped child held its output pipe")
	}
}

// killByMarker kills processes whose environment carries marker.
func killByMarker(marker string) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && strings.Contains(string(env), marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// A tool killed with its process group must not leave the faketime wrapper's semaphore and
// shared memory behind: a later wrapper with the same pid would fail with "File exists".
func TestShellRunReleasesFaketimeObjects(t *testing.T) {
	ft := needShell(t, 60, "sleep")
	out := &lockedBuffer{}
	r := shellRun{
		tool:     Tool{Name: "sleeper", Claim: ByExit},
		clock:    replay.Scaled(time.Now(), 60),
		limit:    time.Hour,
		faketime: ft,
		env:      toolEnv(),
		output:   out,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	// bash's parent is the faketime wrapper, which owns the shared objects.
	go func() { _, err := r.runScript(ctx, `echo "wrapper=$PPID"; sleep 100000`); done <- err }()
	var pid string
	for deadline := time.Now().Add(20 * time.Second); pid == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, after, ok := strings.Cut(string(out.Bytes()), "wrapper="); ok {
			pid = strings.TrimSpace(after)
		}
	}
	if pid == "" {
		t.Fatal("the tool never printed its wrapper's pid")
	}
	shm := "/dev/shm/faketime_shm_" + pid
	if _, err := os.Stat(shm); err != nil {
		t.Fatalf("faketime's shared memory %s is not there while the tool runs: %v", shm, err)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	for _, f := range []string{shm, "/dev/shm/sem.faketime_sem_" + pid} {
		if _, err := os.Stat(f); !os.IsNotExist(err) {
			t.Errorf("%s left behind (stat: %v)", f, err)
		}
	}
}
