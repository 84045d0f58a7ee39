// Command reader reads the clock N times, sleeps D and prints the wall time it sees then: a
// Go binary for the tracer's tests (its runtime reads the clock at every wake-up too).
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
	var last time.Time
	for i := 0; i < n; i++ {
		last = time.Now()
	}
	time.Sleep(d)
	fmt.Println(last.Unix(), time.Now().Unix())
}
