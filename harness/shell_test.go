package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
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

// Past its limit a loop is given more time while it still starts processes, even when its
// sleeps are a bash builtin and no scan catches a child alive; a tool blocked in one call
// shows no progress.
func TestScanGroupSeesALoopProgress(t *testing.T) {
	needShell(t, 1, "sleep", "sh")
	if sleepPrelude() == "" {
		t.Skip("bash's loadable sleep is not installed (Debian: bash-builtins)")
	}
	// Each child burns about a clock tick of CPU, so its parent's reaped time grows.
	const busyChild = `sh -c 'i=0; while [ $i -lt 10000 ]; do i=$((i+1)); done'`
	cases := []struct {
		name   string
		script string
		want   bool
	}{
		{"loop with builtin sleep", `while :; do ` + busyChild + `; sleep 0.3; done`, true},
		{"blocked in one call", "`type -P sleep` 30", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("bash", "-c", sleepPrelude()+c.script)
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() {
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				_ = cmd.Wait()
			}()
			time.Sleep(500 * time.Millisecond)
			first := scanGroup(cmd.Process.Pid)
			time.Sleep(time.Second)
			second := scanGroup(cmd.Process.Pid)
			if len(second.reaped) == 0 {
				t.Fatal("the scan found no process in the group")
			}
			if got := second.progressed(first); got != c.want {
				t.Fatalf("progressed = %v, want %v (scans %v then %v)", got, c.want, first.reaped, second.reaped)
			}
		})
	}
}

// lockedBuffer is tool output the test reads while the tool writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}
