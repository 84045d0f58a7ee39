package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// startGroup starts `sleep 60` leading a process group of its own, as shell tools run, and
// reaps it at the end of the test whatever happens.
func startGroup(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command("sleep", "60")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// shmFile creates a file in /dev/shm named for this test and removes it at the end.
func shmFile(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(shmDir, name)
	if err := os.WriteFile(p, nil, 0o600); err != nil {
		t.Skipf("no writable %s: %v", shmDir, err)
	}
	t.Cleanup(func() { os.Remove(p) })
	return p
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// killedBySweep reports whether cmd died of SIGKILL within a few seconds.
func killedBySweep(cmd *exec.Cmd) bool {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			ws, ok := ee.Sys().(syscall.WaitStatus)
			return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
		}
		return false
	case <-time.After(5 * time.Second):
		return false
	}
}

func TestSweepRunsLeavesALiveRunAlone(t *testing.T) {
	root := t.TempDir()
	d, err := NewRunDir(root)
	if err != nil {
		t.Fatal(err)
	}
	cmd := startGroup(t)
	d.trackGroup(cmd.Process.Pid)
	page := shmFile(t, fmt.Sprintf("vtime-ir-test-%d-live.page", os.Getpid()))
	d.trackShm(page)
	s, err := SweepRuns(context.Background(), root)
	if err != nil || s != (Swept{}) {
		t.Fatalf("sweep of a live run: %+v, %v; want nothing swept", s, err)
	}
	if s.String() != "" {
		t.Errorf("nothing swept, yet the line is %q", s.String())
	}
	if syscall.Kill(cmd.Process.Pid, 0) != nil || !exists(page) || !exists(d.Path()) {
		t.Fatal("the sweep touched a live run")
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if exists(d.Path()) {
		t.Error("Close left the run directory")
	}
}

func TestSweepRunsCleansAKilledRun(t *testing.T) {
	root := t.TempDir()
	d, err := NewRunDir(root)
	if err != nil {
		t.Fatal(err)
	}
	ours, stranger := startGroup(t), startGroup(t)
	d.trackGroup(ours.Process.Pid)
	// stranger's pid is recorded with another start time: the pid was reused since.
	st, err := proc.Read("", stranger.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(d.Path(), groupsDir, strconv.Itoa(stranger.Process.Pid))
	if err := os.WriteFile(rec, fmt.Appendf(nil, "%d %d\n", st.StartTime+1, st.Session), 0o600); err != nil {
		t.Fatal(err)
	}
	oursShm := shmFile(t, "faketime_shm_"+strconv.Itoa(ours.Process.Pid))
	strangerShm := shmFile(t, "faketime_shm_"+strconv.Itoa(stranger.Process.Pid))
	page := shmFile(t, fmt.Sprintf("vtime-ir-test-%d-dead.page", os.Getpid()))
	d.trackShm(page)
	d.trackShm(filepath.Join(t.TempDir(), "elsewhere")) // outside /dev/shm: never recorded
	d.lock.Close()                                      // as SIGKILL leaves it: directory kept, lock gone

	s, err := SweepRuns(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	want := Swept{Runs: 1, Groups: 1, Processes: 1, Shm: 2}
	if s != want {
		t.Errorf("swept %+v, want %+v", s, want)
	}
	if !killedBySweep(ours) {
		t.Error("the run's process group was not killed")
	}
	if syscall.Kill(stranger.Process.Pid, 0) != nil {
		t.Error("a process that reused a recorded pid was killed")
	}
	if exists(oursShm) || exists(page) {
		t.Error("the run's /dev/shm objects remain")
	}
	if !exists(strangerShm) {
		t.Error("the faketime object of a pid now another process's was removed")
	}
	if exists(d.Path()) {
		t.Error("the run directory remains")
	}
	if s.String() == "" {
		t.Error("a sweep that cleaned a run prints nothing")
	}
}

func TestSweepRunsUnownedDirectory(t *testing.T) {
	cases := []struct {
		name string
		age  time.Duration
		kept bool
	}{
		{"being created", 0, true},
		{"left by a crash", 2 * staleUnowned, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			dir := filepath.Join(root, runPrefix+"x")
			if err := os.Mkdir(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			then := time.Now().Add(-c.age)
			if err := os.Chtimes(dir, then, then); err != nil {
				t.Fatal(err)
			}
			if _, err := SweepRuns(context.Background(), root); err != nil {
				t.Fatal(err)
			}
			if exists(dir) != c.kept {
				t.Errorf("directory kept = %v, want %v", exists(dir), c.kept)
			}
		})
	}
}

func TestNewRunDirRefusesAnOpenRoot(t *testing.T) {
	root := filepath.Join(t.TempDir(), "open")
	if err := os.Mkdir(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRunDir(root); err == nil {
		t.Fatal("a run root others can write into was accepted")
	}
}
