package gpu

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
)

// HostFacts are the host-side numbers a launch depends on. Memory is in bytes.
type HostFacts struct {
	MemTotal     int64 `json:"mem_total_bytes"`
	MemAvailable int64 `json:"mem_available_bytes"` // what SGLang's HiCache check reads
	// CgroupVersion is 1 or 2, 0 when no memory cgroup was found.
	CgroupVersion int   `json:"cgroup_version,omitempty"`
	CgroupLimit   int64 `json:"cgroup_limit_bytes,omitempty"` // 0: unlimited
	CPUs          int   `json:"cpus"`                         // online CPUs
	// CPULimit is the cgroup CPU quota in CPUs (cpu.max / cfs_quota), 0 when unlimited.
	CPULimit float64 `json:"cpu_limit,omitempty"`
	// ShmSize is /dev/shm's size; Docker's default 64 MiB breaks NCCL with TP > 1.
	ShmSize int64 `json:"shm_bytes,omitempty"`
}

// ReadHostFacts reads /proc and /sys under fsys (os.DirFS("/") on a real host; a fixture
// directory in tests). Only /proc/meminfo is required; the rest is best effort.
func ReadHostFacts(fsys fs.FS) (HostFacts, error) {
	var h HostFacts
	mi, err := readMeminfo(fsys)
	if err != nil {
		return h, err
	}
	h.MemTotal, h.MemAvailable = mi["MemTotal"], mi["MemAvailable"]
	h.CgroupVersion, h.CgroupLimit = cgroupMemoryLimit(fsys)
	h.CPULimit = cgroupCPULimit(fsys)
	h.CPUs = onlineCPUs(fsys)
	h.ShmSize = shmSize(fsys, h.MemTotal)
	return h, nil
}

func readMeminfo(fsys fs.FS) (map[string]int64, error) {
	f, err := fsys.Open("proc/meminfo")
	if err != nil {
		return nil, fmt.Errorf("host facts: %w (is /proc mounted?)", err)
	}
	defer f.Close()
	m := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "MemAvailable:   24235292 kB"
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		m[k] = n
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("host facts: reading /proc/meminfo: %w", err)
	}
	if m["MemTotal"] == 0 {
		return nil, errors.New("host facts: /proc/meminfo has no MemTotal")
	}
	if _, ok := m["MemAvailable"]; !ok { // kernels before 3.14: approximate as psutil does
		m["MemAvailable"] = m["MemFree"] + m["Buffers"] + m["Cached"]
	}
	return m, nil
}

// cgroupPaths maps a controller ("memory"; "" for the v2 unified hierarchy) to this process's
// cgroup path from /proc/self/cgroup.
func cgroupPaths(fsys fs.FS) map[string]string {
	b, err := fs.ReadFile(fsys, "proc/self/cgroup")
	if err != nil {
		return nil
	}
	m := map[string]string{}
	for line := range strings.Lines(string(b)) {
		parts := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			m[c] = parts[2]
		}
	}
	return m
}

// limitFromLeaf reads file in dir and each parent up to base, returning the smallest limit:
// a parent's limit binds a child. Inside a cgroup namespace the path is "/" and only the
// base is read.
func limitFromLeaf(fsys fs.FS, base, cgPath, file string, parse func(string) (int64, bool)) int64 {
	var best int64
	dir := path.Join(base, cgPath)
	for {
		if b, err := fs.ReadFile(fsys, path.Join(dir, file)); err == nil {
			if v, ok := parse(strings.TrimSpace(string(b))); ok && (best == 0 || v < best) {
				best = v
			}
		}
		if dir == base || !strings.HasPrefix(dir, base) {
			return best
		}
		dir = path.Dir(dir)
	}
}

// v1 reports "no limit" as a page-rounded 2^63-1; anything this large is unlimited.
const unlimitedV1 = int64(1) << 60

func cgroupMemoryLimit(fsys fs.FS) (version int, limit int64) {
	paths := cgroupPaths(fsys)
	if _, err := fs.Stat(fsys, "sys/fs/cgroup/cgroup.controllers"); err == nil {
		return 2, limitFromLeaf(fsys, "sys/fs/cgroup", paths[""], "memory.max", func(s string) (int64, bool) {
			v, err := strconv.ParseInt(s, 10, 64) // "max" fails to parse: unlimited
			return v, err == nil && v > 0
		})
	}
	if _, err := fs.Stat(fsys, "sys/fs/cgroup/memory"); err == nil {
		return 1, limitFromLeaf(fsys, "sys/fs/cgroup/memory", paths["memory"], "memory.limit_in_bytes", func(s string) (int64, bool) {
			v, err := strconv.ParseInt(s, 10, 64)
			return v, err == nil && v > 0 && v < unlimitedV1
		})
	}
	return 0, 0
}

func cgroupCPULimit(fsys fs.FS) float64 {
	if b, err := fs.ReadFile(fsys, "sys/fs/cgroup/cpu.max"); err == nil { // v2: "200000 100000" or "max 100000"
		var quota, period float64
		if n, _ := fmt.Sscanf(string(b), "%g %g", &quota, &period); n == 2 && period > 0 {
			return quota / period
		}
		return 0
	}
	q, err1 := fs.ReadFile(fsys, "sys/fs/cgroup/cpu/cpu.cfs_quota_us")
	p, err2 := fs.ReadFile(fsys, "sys/fs/cgroup/cpu/cpu.cfs_period_us")
	if err1 != nil || err2 != nil {
		return 0
	}
	quota, _ := strconv.ParseFloat(strings.TrimSpace(string(q)), 64)
	period, _ := strconv.ParseFloat(strings.TrimSpace(string(p)), 64)
	if quota <= 0 || period <= 0 { // -1: unlimited
		return 0
	}
	return quota / period
}

// onlineCPUs counts /sys/devices/system/cpu/online ("0-15,32-47").
func onlineCPUs(fsys fs.FS) int {
	b, err := fs.ReadFile(fsys, "sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	n := 0
	for _, r := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		z := a
		if isRange {
			if z, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		n += z - a + 1
	}
	return n
}

// shmSize reads /dev/shm's tmpfs size= option from /proc/mounts; tmpfs without one defaults
// to half of RAM.
func shmSize(fsys fs.FS, memTotal int64) int64 {
	b, err := fs.ReadFile(fsys, "proc/mounts")
	if err != nil {
		return 0
	}
	var size int64
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) < 4 || f[1] != "/dev/shm" {
			continue
		}
		size = memTotal / 2
		for _, opt := range strings.Split(f[3], ",") {
			if v, ok := strings.CutPrefix(opt, "size="); ok {
				size = parseSize(v)
			}
		}
	}
	return size
}

// parseSize reads tmpfs sizes: bytes, or a k/m/g suffix (binary).
func parseSize(s string) int64 {
	if s == "" {
		return 0
	}
	mult := int64(1)
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mult = 1 << 10
	case "m":
		mult = 1 << 20
	case "g":
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0
	}
	return n * mult
}
