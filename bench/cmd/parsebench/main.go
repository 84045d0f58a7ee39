// Command parsebench parses a log file with sglang.Scanner and reports lines, Prefill lines
// and throughput (MB/s, 1 MB = 1e6 bytes) on stdout, by wall time and by the process's CPU time
// (the latter does not depend on how busy the machine is).
package main

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: parsebench FILE")
		os.Exit(2)
	}
	f, err := os.Open(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, "parsebench:", err)
		os.Exit(1)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		fmt.Fprintln(os.Stderr, "parsebench:", err)
		os.Exit(1)
	}
	cpu0 := cpuTime()
	start := time.Now()
	sc := sglang.NewScanner(f)
	lines, prefill := 0, 0
	for sc.Scan() {
		lines++
		if sc.Line().Event.Kind == sglang.KindPrefill {
			prefill++
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "parsebench:", err)
		os.Exit(1)
	}
	el := time.Since(start)
	cpu := cpuTime() - cpu0
	mb := float64(st.Size()) / 1e6
	fmt.Printf("lines=%d prefill=%d bytes=%d seconds=%.3f mb_per_s=%.1f cpu_seconds=%.3f mb_per_cpu_s=%.1f\n",
		lines, prefill, st.Size(), el.Seconds(), mb/el.Seconds(), cpu.Seconds(), mb/cpu.Seconds())
}

// cpuTime is the user+system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
