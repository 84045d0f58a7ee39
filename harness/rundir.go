package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// RunDir is one score run's claim on this host: a directory under a well-known root that
// holds each pair's files, and a record of what the run creates elsewhere (its tools'
// process groups, vtime pages in /dev/shm, its containers), so that a later run can remove
// what a run killed with SIGKILL left. Its owner file stays flocked while the run lives; the
// kernel drops the lock however the process dies, so a lock that can be taken marks an
// orphan. A nil *RunDir records nothing.
type RunDir struct {
	path string
	lock *os.File
}

// The layout of a run directory.
const (
	ownerFile      = "owner"      // flocked by the live run; holds its pid and start time
	groupsDir      = "groups"     // a file per live tool process group, named by pgid: "<start> <session>"
	shmRecDir      = "shm"        // an empty file per /dev/shm object of the run, named as the object
	containersFile = "containers" // the run id its containers are labelled with
	runPrefix      = "run-"
)

// RunRoot is where runs keep their directories: $TMPDIR/incident-replay.
func RunRoot() string { return filepath.Join(os.TempDir(), "incident-replay") }

// NewRunDir creates a run directory under root ("" is RunRoot) and holds its lock until Close.
func NewRunDir(root string) (*RunDir, error) {
	if root == "" {
		root = RunRoot()
	}
	if err := ownRoot(root); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(root, runPrefix)
	if err != nil {
		return nil, fmt.Errorf("run directory: %w", err)
	}
	fail := func(err error) (*RunDir, error) {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("run directory %s: %w", dir, err)
	}
	for _, sub := range []string{groupsDir, shmRecDir} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o700); err != nil {
			return fail(err)
		}
	}
	// The owner file appears under its name only once locked: a sweep that found it
	// unlocked in between would take the live run for an orphan.
	tmp := filepath.Join(dir, ownerFile+".new")
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return fail(err)
	}
	st, _ := proc.Read("", os.Getpid())
	fmt.Fprintf(f, "pid %d start %d\n", os.Getpid(), st.StartTime)
	if err := os.Rename(tmp, filepath.Join(dir, ownerFile)); err != nil {
		f.Close()
		return fail(err)
	}
	return &RunDir{path: dir, lock: f}, nil
}

// ownRoot makes root a directory of this user's that no one else can write into: under a
// shared /tmp, another user's directory or a symlink there must not receive the runs.
func ownRoot(root string) error {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return fmt.Errorf("run root %s: %w (set TMPDIR to a writable directory)", root, err)
	}
	st, err := os.Lstat(root)
	if err != nil {
		return fmt.Errorf("run root %s: %w", root, err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || int(sys.Uid) != os.Getuid() || st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("run root %s is not a directory of this user's that only it can write: remove it, or set TMPDIR elsewhere", root)
	}
	return nil
}

// Path is the run's directory: launchers put each pair's directory in it.
func (d *RunDir) Path() string {
	if d == nil {
		return ""
	}
	return d.path
}

// Close removes the run's directory and releases its lock. Call it once everything the run
// started has stopped.
func (d *RunDir) Close() error {
	if d == nil {
		return nil
	}
	err := os.RemoveAll(d.path)
	d.lock.Close() // after the removal: an unlocked directory would be a sweep's to take
	return err
}

// TrackContainers records the run id that the run's containers carry as a label.
func (d *RunDir) TrackContainers(runID string) error {
	if d == nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(d.path, containersFile), []byte(runID+"\n"), 0o600); err != nil {
		return fmt.Errorf("record the run's containers: %w", err)
	}
	return nil
}

// trackGroup records process group pgid, led by the process pgid that has just started, with
// the leader's start time and session, so a sweep kills that group and never one that a later
// process got the same number for. The record goes once the group is gone (untrack). Recording
// is best effort: a leader that already exited has nothing left to sweep but its faketime
// objects, which FindFaketime's sweep finds.
func (d *RunDir) trackGroup(pgid int) (untrack func()) {
	if d == nil {
		return func() {}
	}
	st, err := proc.Read("", pgid)
	if err != nil {
		return func() {}
	}
	p := filepath.Join(d.path, groupsDir, strconv.Itoa(pgid))
	if os.WriteFile(p, fmt.Appendf(nil, "%d %d\n", st.StartTime, st.Session), 0o600) != nil {
		return func() {}
	}
	return func() { os.Remove(p) }
}

// trackShm records an object in /dev/shm the run created (a vtime page) until untrack.
func (d *RunDir) trackShm(path string) (untrack func()) {
	if d == nil || filepath.Dir(path) != shmDir {
		return func() {}
	}
	p := filepath.Join(d.path, shmRecDir, filepath.Base(path))
	if os.WriteFile(p, nil, 0o600) != nil {
		return func() {}
	}
	return func() { os.Remove(p) }
}
