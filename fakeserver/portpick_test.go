package fakeserver

import (
	"bufio"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/internal/forking"
)

// portPickHelper makes the test binary a second process that reserves ports, prints them and
// holds them until its stdin closes.
const portPickHelper = "FAKESERVER_PORTPICK_HELPER"

func TestMain(m *testing.M) {
	if n, err := strconv.Atoi(os.Getenv(portPickHelper)); err == nil {
		scanStart = func() int { return 0 } // where the test's own scan starts: the locks must part them
		var ports []string
		for range n {
			r, err := ReservePort()
			if err != nil {
				os.Exit(2)
			}
			ports = append(ports, strconv.Itoa(r.Port()))
		}
		os.Stdout.WriteString(strings.Join(ports, " ") + "\n")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestReservedPortsAreDisjoint: reservations lie below the kernel's ephemeral range (where
// bind(0), connect() and docker-proxy's picks go) and never coincide, within a process or
// across two. Before, a port picked by bind(0) for an in-process server could be picked
// again by a container's docker-proxy, and the server died of Errno 98 at its bind.
func TestReservedPortsAreDisjoint(t *testing.T) {
	const n = 200
	low, high := pickRange()
	saved, savedStart := hostPorts, scanStart
	defer func() { hostPorts, scanStart = saved, savedStart }()
	hostPorts, scanStart = &portSet{used: map[int]bool{}}, func() int { return 0 }
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), portPickHelper+"="+strconv.Itoa(n))
	stdin, err := helper.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); _ = helper.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the helper process reserved no ports: %v", err)
	}
	seen := map[int]string{}
	for _, f := range strings.Fields(line) {
		p, _ := strconv.Atoi(f)
		seen[p] = "the other process"
	}
	if len(seen) != n {
		t.Fatalf("the helper reported %d distinct ports of %d: %q", len(seen), n, line)
	}
	var mine []*Reservation
	defer func() {
		for _, r := range mine {
			r.Release()
		}
	}()
	for i := range n {
		r, err := ReservePort()
		if err != nil {
			t.Fatal(err)
		}
		mine = append(mine, r)
		p := r.Port()
		if p < low || p >= high {
			t.Fatalf("reserved port %d is outside %d-%d", p, low, high-1)
		}
		if who, ok := seen[p]; ok {
			t.Fatalf("reservation %d got port %d, already reserved by %s", i, p, who)
		}
		seen[p] = "this process"
	}
	// A released port may be picked again.
	p := mine[0].Port()
	mine[0].Release()
	mine[0].Release()
	if hostPorts.used[p] {
		t.Fatalf("port %d is still marked used after Release", p)
	}
}

// TestReservedPortBindsWhileToolsStart: the stale holder binds its reserved port at launch,
// while other runs of the process start tools. A child forked while the pick's bind-test
// socket was open held that socket until its exec, and the holder's bind failed with
// EADDRINUSE: 1 run in 1,200 with 20 at once, 1 to 2 binds in 100 beside four forkers.
func TestReservedPortBindsWhileToolsStart(t *testing.T) {
	const binds = 1500
	forking.Start(t, 4)
	failed := 0
	for range binds {
		r, err := ReservePort()
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(r.Port())))
		if err != nil {
			failed++
		} else {
			ln.Close()
		}
		r.Release()
	}
	if failed > 0 {
		t.Fatalf("%d of %d binds of a just-reserved port failed while children were being forked", failed, binds)
	}
}
