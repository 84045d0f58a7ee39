// Command sleeper sleeps N times D and prints the wall and monotonic time it sees after
// each sleep: a Go binary for the tracer's tests. With READS it first reads the clock that
// many times (a Go runtime reads it at every wake-up too).
//
//	sleeper N D [READS]
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	n, _ := strconv.Atoi(os.Args[1])
	d, _ := time.ParseDuration(os.Args[2])
	reads := 0
	if len(os.Args) > 3 {
		reads, _ = strconv.Atoi(os.Args[3])
	}
	start := time.Now()
	for i := 0; i < reads; i++ {
		start = time.Now()
	}
	fmt.Println("start", start.Unix())
	for i := 0; i < n; i++ {
		time.Sleep(d)
		fmt.Println("woke", time.Now().Unix(), time.Since(start).Round(time.Millisecond))
	}
}
