package preload

import (
	"strconv"
	"syscall"
)

// alive reports whether a thread or process id exists (/proc lists thread ids too).
func alive(id int) bool {
	var st syscall.Stat_t
	return syscall.Stat("/proc/"+strconv.Itoa(id), &st) == nil
}

// statFields splits /proc/PID/stat after the command name (which may hold spaces and
// parentheses): [0] is the state, [2] the process group, [19] the start time.
func statFields(b []byte) statLine {
	var f statLine
	i := len(b) - 1
	for i >= 0 && b[i] != ')' {
		i--
	}
	if i < 0 {
		return f
	}
	start := -1
	for j := i + 1; j <= len(b) && f.n < len(f.f); j++ {
		if j == len(b) || b[j] == ' ' || b[j] == '\n' {
			if start >= 0 {
				f.f[f.n] = b[start:j]
				f.n++
				start = -1
			}
		} else if start < 0 {
			start = j
		}
	}
	return f
}

type statLine struct {
	f [20][]byte
	n int
}

func atoi(b []byte) int {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	if len(b) == 0 {
		return -1
	}
	return n
}
