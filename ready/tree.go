package ready

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
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

type procStat struct {
	pid, ppid, pgrp, sid int
	start                uint64
}

func newTree(procRoot string, leader int) *tree {
	if procRoot == "" {
		procRoot = "/proc"
	}
	return &tree{procRoot: procRoot, leader: leader, known: map[int]uint64{}}
}

// readStat parses /proc/PID/stat; ok is false for a process that is gone or a zombie.
func readStat(procRoot string, pid int) (procStat, bool) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:]) // state ppid pgrp session ... starttime is field 22 of stat, f[19]
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return procStat{}, false
	}
	st := procStat{pid: pid}
	st.ppid, _ = strconv.Atoi(f[1])
	st.pgrp, _ = strconv.Atoi(f[2])
	st.sid, _ = strconv.Atoi(f[3])
	st.start, _ = strconv.ParseUint(f[19], 10, 64)
	return st, true
}

// scan adds the processes that now belong to the launch.
func (t *tree) scan() {
	ents, err := os.ReadDir(t.procRoot)
	if err != nil {
		return
	}
	var all []procStat
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(t.procRoot, pid); ok {
			all = append(all, st)
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for added := true; added; { // a chain of descendants may be listed in any order
		added = false
		for _, st := range all {
			if _, ok := t.known[st.pid]; ok {
				continue
			}
			_, parentKnown := t.known[st.ppid]
			if st.pid == t.leader || st.sid == t.leader || st.pgrp == t.leader || parentKnown {
				t.known[st.pid] = st.start
				added = true
			}
		}
	}
}

// signal sends sig to every known process still running under its recorded start time,
// and reports how many it reached.
func (t *tree) signal(sig syscall.Signal) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for pid, start := range t.known {
		st, ok := readStat(t.procRoot, pid)
		if !ok || st.start != start {
			delete(t.known, pid)
			continue
		}
		if syscall.Kill(pid, sig) == nil {
			n++
		}
	}
	return n
}
