package harness

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/truth"
)

// What a scenario states about the world a tool runs in, handed to shell tools as their
// environment and as template fields.

// proxyBlackhole is where a scenario's proxy that is not on loopback points shell tools: a
// loopback port nothing listens on (discard), so an unreachable proxy refuses at once and no
// tool traffic leaves the host.
const proxyBlackhole = "http://127.0.0.1:9"

// scenarioEnv is the case's environment as shell tools get it, sorted: each variable as the
// scenario states it, except that a proxy address off loopback becomes proxyBlackhole.
func scenarioEnv(c Case) []string {
	if c.Compiled == nil {
		return nil
	}
	var env []string
	for k, v := range c.Compiled.Env {
		if slices.Contains(proxyVars, k) && !strings.EqualFold(k, "no_proxy") && !onLoopback(v) {
			v = proxyBlackhole
		}
		env = append(env, k+"="+v)
	}
	slices.Sort(env)
	return env
}

// onLoopback reports whether a proxy URL points at this host.
func onLoopback(proxy string) bool {
	u, err := url.Parse(proxy)
	if err != nil || u.Host == "" {
		u, err = url.Parse("http://" + proxy)
		if err != nil {
			return false
		}
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// apiKey is the --api-key the case's server was launched with, "" when none.
func apiKey(c Case) string {
	if c.Compiled == nil {
		return ""
	}
	return c.Compiled.Args.APIKey
}

// launchStandIn writes, into dir, the program {{.Launch}} runs: the scenario's server, which
// the harness has already launched, as the process a launch tool starts. Its output is the
// server's log from the first line and it exits with the server's exit status once the
// process that stands for the server (pid) is gone and codeFile holds the status; a wedged
// server's stand-in never exits, as the real process would not. It is named python3 so the
// command line reads, and parses, as SGLang's: PROGRAM -m sglang.launch_server FLAGS.
func launchStandIn(dir string, pid int, logFile, codeFile string) (string, error) {
	path := filepath.Join(dir, "python3")
	// tail polls once a second (no inotify): each poll is a sleep the run's clock serves.
	script := fmt.Sprintf(`#!/bin/bash
# incident-replay: the scenario's server as a launch tool sees it (output = its log, exit = its status).
tail -n +1 -s 1 ---disable-inotify -F --pid=%d %s 2>/dev/null
code=$(cat %s 2>/dev/null)
exit "${code:-0}"
`, pid, shq(logFile), shq(codeFile))
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("write the {{.Launch}} stand-in: %w", err)
	}
	return path, nil
}

// launchLine is {{.Launch}}: the stand-in with the scenario's launch flags on the run's port.
func launchLine(program string, c Case, port int) string {
	var flags []string
	if c.Scenario != nil {
		flags = c.Scenario.Launch.Argv()
	}
	argv := launchArgv(flags, port)
	argv[0] = program
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = shellWord(a)
	}
	return strings.Join(q, " ")
}

// shellWord quotes a only when bash would split or expand it.
func shellWord(a string) string {
	if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return a
	}
	return shq(a)
}

// writeExitCode records the server's exit status for the stand-in.
func writeExitCode(path string, code int) error {
	return os.WriteFile(path, []byte(strconv.Itoa(code)+"\n"), 0o644)
}

// countFaults is the journal's truth with the case's HTTP faults counted: a server whose
// /health a fault answers for the whole run (a redirect, an error) never reports ready,
// although its warmup finished.
func countFaults(t truth.Truth, c Case) truth.Truth {
	if c.Scenario == nil {
		return t
	}
	return fault.SeenTruth(t, c.Scenario.Faults)
}

// fatalLine is the offset of the journal's first log line of a fatal kind (a line a server
// that goes on to serve never prints), nil when there is none.
func fatalLine(recs []fakeserver.Record) *time.Duration {
	for _, r := range recs {
		if r.Type != fakeserver.RecLog {
			continue
		}
		if k, ok := sglang.KindByName(r.Kind); ok && sglang.StageOf(k).Failure == sglang.Fatal {
			return truth.At(r.At)
		}
	}
	return nil
}
