package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/internal/proc"
)

// Swept counts what SweepRuns removed.
type Swept struct {
	Runs       int // run directories of dead owners
	Groups     int // process groups killed
	Processes  int // processes in them
	Shm        int // objects removed from /dev/shm
	Containers int
}

// String is the one line score prints: "" when nothing was left.
func (s Swept) String() string {
	if s.Runs == 0 {
		return ""
	}
	return fmt.Sprintf("cleaned up after %d killed run(s): %d process(es) in %d group(s), %d /dev/shm object(s), %d container(s), %d run director(ies)",
		s.Runs, s.Processes, s.Groups, s.Shm, s.Containers, s.Runs)
}

// staleUnowned is how old a run directory without an owner file must be before a sweep takes
// it: younger, it may be a run between creating its directory and locking its owner file.
const staleUnowned = time.Minute

// SweepRuns removes what runs under root ("" is RunRoot) whose owner is gone left behind:
// kills their recorded process groups that still run as the same processes, removes their
// /dev/shm objects and containers, then their directories. Runs still going are left alone.
func SweepRuns(ctx context.Context, root string) (Swept, error) {
	if root == "" {
		root = RunRoot()
	}
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return Swept{}, nil
	}
	if err != nil {
		return Swept{}, fmt.Errorf("sweep %s: %w", root, err)
	}
	var (
		total Swept
		errs  []error
		procs *procTable // read once, when the first dead run needs it
	)
	for _, e := range ents {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), runPrefix) {
			continue
		}
		dir := filepath.Join(root, e.Name())
		unlock, dead, err := claimDead(dir)
		if err != nil {
			errs = append(errs, err)
		}
		if !dead {
			continue
		}
		if procs == nil {
			procs = readProcTable()
		}
		s, err := sweepRun(ctx, dir, procs)
		unlock()
		total.Runs += s.Runs
		total.Groups += s.Groups
		total.Processes += s.Processes
		total.Shm += s.Shm
		total.Containers += s.Containers
		if err != nil {
			errs = append(errs, err)
		}
	}
	return total, errors.Join(errs...)
}

// claimDead takes the lock of run directory dir if its owner is gone; unlock releases it.
func claimDead(dir string) (unlock func(), dead bool, err error) {
	f, err := os.Open(filepath.Join(dir, ownerFile))
	if errors.Is(err, os.ErrNotExist) {
		st, serr := os.Stat(dir)
		return func() {}, serr == nil && time.Since(st.ModTime()) > staleUnowned, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("sweep %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil // its run is alive
		}
		return nil, false, fmt.Errorf("sweep %s: lock the owner file: %w", dir, err)
	}
	return func() { f.Close() }, true, nil
}

// sweepRun removes what the dead run in dir left; the directory goes last, and stays when
// something could not be removed, so a later sweep tries again.
func sweepRun(ctx context.Context, dir string, procs *procTable) (Swept, error) {
	var s Swept
	var errs []error
	groups, _ := os.ReadDir(filepath.Join(dir, groupsDir))
	for _, g := range groups {
		rec, err := readGroupRecord(filepath.Join(dir, groupsDir, g.Name()))
		if err != nil {
			continue // a record cut short: its pgid cannot be told from a stranger's
		}
		n, ours := procs.kill(rec)
		if n > 0 {
			s.Groups++
			s.Processes += n
		}
		if ours {
			// The faketime wrapper leading the group named its semaphore and shared memory
			// after its pid; a pid that is another process now may own those names.
			s.Shm += removeFaketimeObjects(rec.pgid)
		}
	}
	shm, _ := os.ReadDir(filepath.Join(dir, shmRecDir))
	for _, e := range shm {
		if os.Remove(filepath.Join(shmDir, e.Name())) == nil {
			s.Shm++
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, containersFile)); err == nil {
		if id := strings.TrimSpace(string(b)); id != "" {
			cctx, cancel := context.WithTimeout(ctx, time.Minute)
			n, err := fakeserver.Sweep(cctx, id)
			cancel()
			s.Containers += n
			if err != nil {
				errs = append(errs, fmt.Errorf("remove the containers of %s (label %s=%s): %w; is Docker running?", dir, fakeserver.LabelRun, id, err))
			}
		}
	}
	if len(errs) == 0 {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", dir, err))
		}
	}
	s.Runs = 1
	return s, errors.Join(errs...)
}

// groupRecord is one tracked process group: the leader's pid (the pgid), start time and session.
type groupRecord struct {
	pgid    int
	start   uint64
	session int
}

func readGroupRecord(path string) (groupRecord, error) {
	var r groupRecord
	pgid, err := strconv.Atoi(filepath.Base(path))
	if err != nil || pgid <= 1 {
		return r, fmt.Errorf("group record %s: not a pgid", path)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return r, fmt.Errorf("group record %s: want \"start session\"", path)
	}
	r.pgid = pgid
	if r.start, err = strconv.ParseUint(f[0], 10, 64); err != nil {
		return r, fmt.Errorf("group record %s: %w", path, err)
	}
	if r.session, err = strconv.Atoi(f[1]); err != nil {
		return r, fmt.Errorf("group record %s: %w", path, err)
	}
	return r, nil
}

// procTable is the host's processes at one instant.
type procTable struct{ byPID map[int]proc.Stat }

func readProcTable() *procTable {
	t := &procTable{byPID: map[int]proc.Stat{}}
	pids, _ := proc.PIDs("")
	for _, pid := range pids {
		if st, err := proc.Read("", pid); err == nil {
			t.byPID[pid] = st
		}
	}
	return t
}

// kill sends SIGKILL to what is left of the recorded group and returns how many live
// processes it held, and whether the pgid still names the recorded group or nothing (not a
// process that reused the number). A leader that runs with another start time is a
// stranger: neither it nor its group is touched. With the leader gone, the kernel keeps its
// pid number from reuse while any member of its group lives, so members in the recorded
// session that started after the leader are the group's own. The group is signalled as one,
// so a member forked since the table was read goes too.
func (t *procTable) kill(r groupRecord) (n int, ours bool) {
	leader, led := t.byPID[r.pgid]
	if led && leader.StartTime != r.start {
		return 0, false
	}
	for _, st := range t.byPID {
		if st.PGRP == r.pgid && st.Session == r.session && st.StartTime >= r.start && st.Alive() {
			n++
		}
	}
	if (led || n > 0) && syscall.Kill(-r.pgid, syscall.SIGKILL) != nil {
		n = 0
	}
	return n, true
}
