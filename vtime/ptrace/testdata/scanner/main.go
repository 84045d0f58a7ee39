// Command scanner reads N files of /proc every D, R rounds: a Go binary whose system calls
// are mostly not about time, as a launcher's process-tree scan is (for the benchmarks).
package main

import (
	"os"
	"strconv"
	"time"
)

func main() {
	rounds, _ := strconv.Atoi(os.Args[1])
	files, _ := strconv.Atoi(os.Args[2])
	d, _ := time.ParseDuration(os.Args[3])
	for r := 0; r < rounds; r++ {
		for i := 0; i < files; i++ {
			_, _ = os.ReadFile("/proc/self/stat")
		}
		time.Sleep(d)
	}
}
