package harness

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	// The tool exits once the escaped child has left its group (it writes to the FIFO after
	// setsid), so the group kill at the tool's exit cannot reach it.
	fifo := filepath.Join(t.TempDir(), "escaped")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `setsid sh -c 'echo out > "$0"; exec sleep 600' ` + fifo + ` & read -r _ < ` + fifo + `; echo started; exit 0`
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
	start := func(script string) int {
		cmd := exec.Command("bash", "-c", sleepPrelude()+script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			_ = cmd.Wait()
		})
		return cmd.Process.Pid
	}
	// until scans until ok holds, and fails the test after a generous deadline.
	until := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s within 20s", what)
			}
		}
	}
	loop := start(`while :; do ` + busyChild + `; sleep 0.3; done`)
	blocked := start("`type -P sleep` 30")
	// The blocked tool is in its one call once bash has exec'd the sleep, the group's only
	// process.
	until("the blocked tool's sleep never started", func() bool {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(blocked) + "/comm")
		return string(comm) == "sleep\n" && len(scanGroup(blocked).reaped) == 1
	})
	blockedBefore := scanGroup(blocked)
	// The loop shows progress between two scans that both catch only its bash, no child
	// alive: through the children it reaped. Scanned over the same span (two such rounds),
	// the blocked tool shows none.
	bashOnly := func() groupScan {
		var g groupScan
		until("the loop's bash never ran without a child", func() bool { g = scanGroup(loop); return len(g.reaped) == 1 })
		return g
	}
	for range 2 {
		prev := bashOnly()
		until("the loop with a builtin sleep showed no progress", func() bool { return bashOnly().progressed(prev) })
	}
	if blockedAfter := scanGroup(blocked); blockedAfter.progressed(blockedBefore) {
		t.Fatalf("a tool blocked in one call progressed (scans %v then %v)", blockedBefore.reaped, blockedAfter.reaped)
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
