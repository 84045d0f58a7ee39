// Command dialer dials ADDR with a timeout and prints what came of it and when (the seconds
// since its start it read): a Go binary for the tracer's tests.
//
//	dialer ADDR TIMEOUT
package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"
)

func main() {
	timeout, _ := time.ParseDuration(os.Args[2])
	start := time.Now()
	fmt.Println("dialing")
	c, err := net.DialTimeout("tcp", os.Args[1], timeout)
	var ne net.Error
	switch {
	case err == nil:
		c.Close()
		fmt.Println("connected", time.Since(start).Round(time.Second))
	case errors.As(err, &ne) && ne.Timeout():
		fmt.Println("timeout", time.Since(start).Round(time.Second))
	default:
		fmt.Println("failed", time.Since(start).Round(time.Second), err)
	}
}
