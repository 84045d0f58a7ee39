// Command gowaiter is an HTTP readiness waiter in the manner of wait4x and dockerize, for
// tests that score Go binaries: it asks URL every -interval, each request limited to
// -client-timeout, until an answer passes -accept, and gives up once the next probe would
// start past -timeout. It exits 0 when ready and 1 when it gives up.
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	url := flag.String("url", "", "the URL to poll")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up after this long")
	interval := flag.Duration("interval", 5*time.Second, "time between probes")
	clientTimeout := flag.Duration("client-timeout", 3*time.Second, "limit of one request, dial included")
	accept := flag.String("accept", "200", "what passes: 200 (wait4x --expect-status-code 200), 2xx (dockerize), any (an answer at all)")
	flag.Parse()
	if *url == "" {
		fmt.Fprintln(os.Stderr, "gowaiter: -url is required")
		os.Exit(2)
	}
	client := &http.Client{Timeout: *clientTimeout}
	start := time.Now()
	deadline := start.Add(*timeout)
	for {
		resp, err := client.Get(*url)
		status := 0
		if err == nil {
			status = resp.StatusCode
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			fmt.Printf("%s probe %d\n", time.Since(start).Round(time.Millisecond), status)
		} else {
			fmt.Printf("%s probe error: %v\n", time.Since(start).Round(time.Millisecond), err)
		}
		if err == nil && passes(*accept, status) {
			fmt.Println("ready")
			os.Exit(0)
		}
		if time.Now().Add(*interval).After(deadline) {
			fmt.Printf("timeout after %s\n", time.Since(start).Round(time.Millisecond))
			os.Exit(1)
		}
		time.Sleep(*interval)
	}
}

func passes(accept string, status int) bool {
	switch accept {
	case "2xx":
		return status >= 200 && status < 300
	case "any":
		return true
	}
	return status == http.StatusOK
}
