// Package proc reads /proc/PID/stat and picks fields out of /proc/PID/status, the one place
// the module parses them.
package proc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Root is procfs on this machine.
const Root = "/proc"

// Stat is the fields of /proc/PID/stat the module uses (proc(5) numbers them from 1).
type Stat struct {
	PID     int
	State   byte // field 3: R, S, D, Z (zombie), X (dead), ...
	PPID    int  // field 4
	PGRP    int  // field 5
	Session int  // field 6
	// UTime and STime (fields 14, 15): the process's own user and system CPU in clock ticks.
	UTime, STime uint64
	// CMinFlt, CUTime and CSTime (fields 11, 16, 17) count the reaped children: their minor
	// faults and their user and system CPU in clock ticks.
	CMinFlt, CUTime, CSTime uint64
	StartTime               uint64 // field 22, clock ticks since boot
}

// Alive reports a process that can still run: neither a zombie nor dead.
func (s Stat) Alive() bool { return s.State != 'Z' && s.State != 'X' }

// Read reads /proc/PID/stat under root ("" is Root).
func Read(root string, pid int) (Stat, error) {
	if root == "" {
		root = Root
	}
	b, err := os.ReadFile(filepath.Join(root, strconv.Itoa(pid), "stat"))
	if err != nil {
		return Stat{}, err
	}
	return Parse(b)
}

// Parse parses the contents of a stat file.
func Parse(b []byte) (Stat, error) {
	l := Fields(b)
	if l.Field(22) == nil || l.State() == 0 {
		return Stat{}, fmt.Errorf("proc stat %.40q: no (comm) field followed by fields 3 to 22", b)
	}
	i := max(bytes.IndexByte(b, ' '), 0)
	st := Stat{State: l.State()}
	var errs [10]error
	st.PID, errs[0] = strconv.Atoi(string(b[:i]))
	st.PPID, errs[1] = strconv.Atoi(string(l.Field(4)))
	st.PGRP, errs[2] = strconv.Atoi(string(l.Field(5)))
	st.Session, errs[3] = strconv.Atoi(string(l.Field(6)))
	st.CMinFlt, errs[4] = strconv.ParseUint(string(l.Field(11)), 10, 64)
	st.UTime, errs[5] = strconv.ParseUint(string(l.Field(14)), 10, 64)
	st.STime, errs[6] = strconv.ParseUint(string(l.Field(15)), 10, 64)
	st.CUTime, errs[7] = strconv.ParseUint(string(l.Field(16)), 10, 64)
	st.CSTime, errs[8] = strconv.ParseUint(string(l.Field(17)), 10, 64)
	st.StartTime, errs[9] = strconv.ParseUint(string(l.Field(22)), 10, 64)
	for _, err := range errs {
		if err != nil {
			return Stat{}, fmt.Errorf("proc stat %.40q: %w", b, err)
		}
	}
	return st, nil
}

// PIDs lists the processes under root ("" is Root), in directory order.
func PIDs(root string) ([]int, error) {
	if root == "" {
		root = Root
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
