package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// marked lists the running processes whose command line is `sleep MARK`.
func marked(mark string) []int {
	all, _ := proc.PIDs("")
	var pids []int
	for _, pid := range all {
		b, err := os.ReadFile(filepath.Join(proc.Root, strconv.Itoa(pid), "cmdline"))
		if err == nil && string(b) == "sleep\x00"+mark+"\x00" {
			if st, err := proc.Read("", pid); err == nil && st.Alive() {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// setsidChild is a server command whose child leaves the session and the process group.
func setsidChild(t *testing.T) (argv []string, mark string) {
	t.Helper()
	mark = fmt.Sprintf("300.%d%d", os.Getpid(), time.Now().UnixNano()%100000)
	t.Cleanup(func() { // nothing left behind, even when the test fails
		for _, pid := range marked(mark) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return []string{"bash", "-c", "setsid sleep " + mark + " & wait"}, mark
}

// refusedURL is a loopback URL nothing listens on.
func refusedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

func TestLaunchRefusesBadFlags(t *testing.T) {
	cases := []struct {
		flags []string
		want  string
	}{
		{[]string{"--interval", "-1s"}, "--interval -1s: give a duration > 0"},
		{[]string{"--successes", "-5"}, "--successes -5: give a count >= 1"},
		{[]string{"--timeout", "-5s"}, "--timeout -5s: give a duration > 0"},
		{[]string{"--timeout", "0"}, "--timeout 0s: give a duration > 0"},
		{[]string{"--timeout", "100000h"}, "--timeout 100000h0m0s: give at most 720h0m0s"},
		{[]string{"--speed", "1e308"}, "--speed 1e+308: give a factor > 0 and <= 10000"},
		{[]string{"--speed", "0"}, "--speed 0: give a factor > 0"},
		{[]string{"--stall", "-1m"}, "--stall -1m0s: give a duration > 0"},
		{[]string{"--request-timeout", "1s"}, "--request-timeout 1s: give at least 5s"},
		{[]string{"--fatal-confirm", "0"}, "--fatal-confirm 0s: give a duration > 0"},
		{[]string{"--phase-stall", "loading=-1s"}, `--phase-stall "loading=-1s": want PHASE=DURATION`},
		{[]string{"--generate", "maybe"}, "--generate:"},
	}
	url := refusedURL(t)
	for _, c := range cases {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			argv, mark := setsidChild(t)
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"launch", "--skip-preflight", "--url", url}, c.flags...), "--")
			code := run(context.Background(), append(args, argv...), &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr.String(), c.want)
			}
			if strings.Contains(stderr.String(), "launched") {
				t.Error("the server was launched despite the bad flag")
			}
			if pids := marked(mark); len(pids) > 0 {
				t.Errorf("processes left behind: %v", pids)
			}
		})
	}
}

// TestLaunchLeavesNothingBehind: a launch that fails kills the child's whole tree, a
// grandchild that called setsid included, and --timeout holds whatever the phase.
func TestLaunchLeavesNothingBehind(t *testing.T) {
	argv, mark := setsidChild(t)
	var stdout, stderr bytes.Buffer
	begin := time.Now()
	args := append([]string{"launch", "--skip-preflight", "--quiet", "--timeout", "1s", "--url", refusedURL(t), "--log-file", filepath.Join(t.TempDir(), "server.log"), "--"}, argv...)
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), args, &stdout, &stderr) }()
	// The grandchild must exist before the deadline, or the test proves nothing.
	for deadline := time.Now().Add(5 * time.Second); len(marked(mark)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the setsid grandchild never started")
		}
	}
	var code int
	select {
	case code = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("llmwait did not return")
	}
	if code != 124 {
		t.Errorf("exit %d, want 124; stderr:\n%s", code, stderr.String())
	}
	if took := time.Since(begin); took > 10*time.Second {
		t.Errorf("took %v with --timeout 1s", took)
	}
	if pids := marked(mark); len(pids) > 0 {
		t.Errorf("the setsid grandchild survived: %v", pids)
	}
}

// --hicache-size and --host-check on the command line reach the finding: the founding launch
// OOMs the host under the per-rank check and is refused at startup under the divided one.
func TestPreflightCommandHiCache(t *testing.T) {
	launch := []string{"--", "python", "-m", "sglang.launch_server", "--model-path", "org/model", "--port", "0",
		"--tp", "8", "--enable-hierarchical-cache", "--hicache-size", "300"}
	cases := []struct {
		flags []string
		code  int
		want  string
	}{
		{nil, 4, "--hicache-size 300 GB x 8 ranks = 2400 GB (2235 GiB) > 439 GiB available"},
		{[]string{"--host-check", "per-rank"}, 4, "the ranks pin it all and the host OOMs"},
		{[]string{"--host-check", "divided-per-host"}, 4, "SGLang refuses at startup: Not enough host memory available. Requesting 300.00 GB but only have 58.92 GB free."},
		{[]string{"--host-check", "sometimes"}, 1, `unknown host check "sometimes": use per-rank`},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.flags, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"preflight", "--host-profile", "rtx-pro-6000-x8"}, c.flags...), launch...)
			code := run(context.Background(), args, &stdout, &stderr)
			if code != c.code || !strings.Contains(stderr.String(), c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr.String(), c.code, c.want)
			}
		})
	}
}
