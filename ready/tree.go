package ready

import (
	"sync"
	"syscall"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// tree tracks every process a launch started: members of the leader's session or process
// group, and descendants found by parent links, kept even after their parent exits or they
// call setsid (which leaves both the session and the group). A process is known by its pid
// and start time, so a reused pid is never signalled.
type tree struct {
	procRoot string
	leader   int
	mu       sync.Mutex
	known    map[int]uint64 // pid -> start time (clock ticks since boot)
}

func newTree(procRoot string, leader int) *tree {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return &tree{procRoot: procRoot, leader: leader, known: map[int]uint64{}}
}

// liveStat reads a process's stat; ok is false for a process that is gone or a zombie.
func liveStat(procRoot string, pid int) (proc.Stat, bool) {
	st, err := proc.Read(procRoot, pid)
	return st, err == nil && st.Alive()
}

// scan adds the processes that now belong to the launch and reports whether it found any.
func (t *tree) scan() (found bool) {
	pids, err := proc.PIDs(t.procRoot)
	if err != nil {
		return false
	}
	var all []proc.Stat
	for _, pid := range pids {
		if st, ok := liveStat(t.procRoot, pid); ok {
			all = append(all, st)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for added := true; added; { // a chain of descendants may be listed in any order
		added = false
		for _, st := range all {
			if _, ok := t.known[st.PID]; ok {
				continue
			}
			_, parentKnown := t.known[st.PPID]
			if st.PID == t.leader || st.Session == t.leader || st.PGRP == t.leader || parentKnown {
				t.known[st.PID] = st.StartTime
				added, found = true, true
			}
		}
	}
	return found
}

// signal sends sig to every known process still running under its recorded start time,
// and reports how many it reached.
func (t *tree) signal(sig syscall.Signal) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for pid, start := range t.known {
		st, ok := liveStat(t.procRoot, pid)
		if !ok || st.StartTime != start {
			delete(t.known, pid)
			continue
		}
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}
