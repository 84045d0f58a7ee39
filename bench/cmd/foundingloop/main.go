// Command foundingloop prints incident 1's wait loop (harness.FoundingLoop1) as the process
// cost floor of bench/speed.sh runs it: its sleeps taken out and its port one that nothing
// listens on, so each of its 120 probes is a refused curl and a grep, as in the replay of
// hicache-48-cold-start, whose port opens after the loop has ended.
package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/incident-replay/incident-replay/harness"
)

func main() {
	// A port the kernel just handed out and took back: free, and not one a service owns.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "foundingloop: no free loopback port:", err)
		os.Exit(1)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	loop := strings.ReplaceAll(harness.FoundingLoop1, "{{.Port}}", strconv.Itoa(port))
	loop = strings.ReplaceAll(loop, "sleep 5", ":")
	if loop == harness.FoundingLoop1 || strings.Contains(loop, "sleep") {
		fmt.Fprintln(os.Stderr, "foundingloop: the loop's text changed: update the replacements")
		os.Exit(1)
	}
	fmt.Println(loop)
}
