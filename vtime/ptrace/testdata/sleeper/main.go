// Command sleeper sleeps N times D and prints the wall and monotonic time it sees after
// each sleep: a Go binary for the tracer's tests.
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
	start := time.Now()
	fmt.Println("start", start.Unix())
	for i := 0; i < n; i++ {
		time.Sleep(d)
		fmt.Println("woke", time.Now().Unix(), time.Since(start).Round(time.Millisecond))
	}
}
