package harness

import (
	"net/http"
	"regexp"
	"time"
)

// readyLine is the founding loops' success line ("READY after 42x5s").
var readyLine = regexp.MustCompile(`^READY\b`)

// FoundingLoop1 is incident 1's wait loop exactly as it was run, with only the
// port templated: 120 probes 5 s apart, `grep -q ok` against SGLang's empty-body 200.
const FoundingLoop1 = `for i in $(seq 1 120); do
  if curl -s http://localhost:{{.Port}}/health 2>/dev/null | grep -q ok; then
    echo "READY after ${i}x5s"; break
  fi
  sleep 5
done`

// FoundingLoop2 is incident 2's loop as described: 60 iterations of
// `curl -s .../health | grep -q ok`, `sleep 10` between them, printing `Waiting... ($i)`.
const FoundingLoop2 = `for i in $(seq 1 60); do
  if curl -s http://localhost:{{.Port}}/health | grep -q ok; then
    echo "READY after ${i}x10s"; break
  fi
  echo "Waiting... ($i)"
  sleep 10
done`

// popenWaiter re-types SGLang's popen_launch_server health wait:
// poll the process, GET /health_generate with a Bearer header and timeout=5, success only on
// 200, swallow request errors, poll again, sleep 10; 600 s limit. The process handle is the
// PID (os.kill(pid, 0) stands in for proc.poll()).
const popenWaiter = `python3 - '{{.URL}}' '{{.PID}}' <<'PY'
import os, sys, time, urllib.error, urllib.request

base, pid, timeout = sys.argv[1], int(sys.argv[2]), 600

def poll():
    try:
        os.kill(pid, 0)
        return None
    except ProcessLookupError:
        return 1

start = time.perf_counter()
while time.perf_counter() - start < timeout:
    if poll() is not None:
        raise Exception("Server process exited with code %s. Check server logs for errors." % poll())
    try:
        req = urllib.request.Request(base + "/health_generate", headers={"Authorization": "Bearer None"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            if resp.status == 200:
                print("READY")
                sys.exit(0)
    except (urllib.error.URLError, OSError):
        pass
    if poll() is not None:
        raise Exception("Server process exited with code %s. Check server logs for errors." % poll())
    time.sleep(10)
raise TimeoutError("Server failed to start within the timeout period.")
PY`

// popenLauncher launches the server itself, as SGLang's popen_launch_server does, in bash:
// start the command in the background, then until 600 s have passed: a process that exited
// fails the launch, GET /health_generate with the Bearer header (the key, or "None" without
// one) and a 5 s timeout, 200 is ready, anything else waits 10 s. At the timeout it kills the
// process and fails.
const popenLauncher = `{{.Launch}} &
server=$!
deadline=$((SECONDS + 600))
while (( SECONDS < deadline )); do
  if ! kill -0 "$server" 2>/dev/null; then
    wait "$server"; echo "Server process exited with code $?. Check server logs for errors."; exit 1
  fi
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -H 'Authorization: Bearer {{if .APIKey}}{{.APIKey}}{{else}}None{{end}}' {{.URL}}/health_generate)
  if [ "$code" = 200 ]; then echo READY; exit 0; fi
  sleep 10
done
kill "$server"; echo "Server failed to start within the timeout period."; exit 1`

// llmwaitLaunch is `llmwait launch` as a launch script runs it; the harness puts llmwait
// (make build's bin/) first on PATH. Its exit status is the claim: 0 ready, 4 a preflight
// refusal, anything else a detected failure or a give-up.
const llmwaitLaunch = `llmwait launch --quiet --log-file {{.LogFile}}.llmwait{{if .HostProfile}} --host-profile {{.HostProfile}}{{end}} -- {{.Launch}}`

// vllmWaiter re-types vLLM's RemoteOpenAIServer._wait_for_server:
// GET with no timeout; a 200 ends it; only an exception sleeps 0.5 s, checks the process
// (a non-zero exit) and the deadline, so a non-200 answer spins without either.
const vllmWaiter = `python3 - '{{.URL}}/health' '{{.PID}}' <<'PY'
import os, sys, time, urllib.error, urllib.request

url, pid, timeout = sys.argv[1], int(sys.argv[2]), 600

def get_status():
    try:
        with urllib.request.urlopen(url) as resp:
            return resp.status
    except urllib.error.HTTPError as e:  # requests returns non-2xx answers instead of raising
        return e.code

start = time.time()
while True:
    try:
        if get_status() == 200:
            print("READY")
            break
    except Exception:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            raise RuntimeError("Server exited unexpectedly.") from None
        time.sleep(0.5)
        if time.time() - start > timeout:
            raise RuntimeError("Server failed to start in time.") from None
PY`

// The log patterns of a log-aware testcontainers user: wait.ForLog on the ready line, with a
// Submatch that turns a traceback, a CUDA OOM or an NCCL error into a permanent error.
var (
	tcLogPattern = regexp.MustCompile(`fired up and ready to roll|Traceback|OutOfMemoryError|NCCL error`)
	tcFatal      = regexp.MustCompile(`Traceback|OutOfMemoryError|NCCL error`)
	tcReady      = regexp.MustCompile(`The server is fired up and ready to roll`)
)

// KubernetesPods are the probe sets of the Kubernetes model tools, by tool name: SGLang's own
// k8s manifest, KServe's startup probe and OME's startup and readiness probes. The manifests
// in deploy/ carry the same settings, and a test there holds them equal to these.
func KubernetesPods() map[string]Pod {
	return map[string]Pod{
		"k8s-sglang": {Liveness: &Probe{Path: "/health", InitialDelay: 30 * time.Second, Period: 10 * time.Second}},
		"k8s-kserve": {Startup: &Probe{Path: "/health", Period: 10 * time.Second, FailureThreshold: 60}},
		"k8s-ome": {
			Startup:   &Probe{Path: "/health_generate", InitialDelay: 60 * time.Second, Period: 6 * time.Second, Timeout: 30 * time.Second, FailureThreshold: 150},
			Readiness: &Probe{Path: "/health_generate", Period: 60 * time.Second, Timeout: 200 * time.Second},
		},
	}
}

// CoreTools is the default selection of `score`: the founding loops and one tool of each
// family, sized so the whole catalogue scores in about a minute on 2 cores at S=60 (the shell
// loops dominate: each founding loop starts ~360 processes under faketime). `--all-tools`
// runs every built-in.
var CoreTools = []string{"founding-loop-1", "founding-loop-2", "curl-strict", "sglang-popen",
	"popen-launch", "k8s-kserve", "compose-sglang", "tc-http", "tc-http-withwaitstrategy", "llmwait-launch", "llmwait"}

// Builtins returns the built-in tools, llmwait (must-pass) last. Shell tools run
// under faketime; the Kubernetes, compose and testcontainers rows are models evaluated on the
// run's clock (see models.go for why they are not run for real).
func Builtins() []Tool {
	tools := []Tool{
		{Name: "founding-loop-1", Description: "incident 1: 120x5s curl -s | grep -q ok", Command: FoundingLoop1,
			Claim: ByLine, ReadyLine: readyLine, Interval: 5 * time.Second, Budget: 700 * time.Second},
		{Name: "founding-loop-2", Description: "incident 2: 60x10s curl -s | grep -q ok", Command: FoundingLoop2,
			Claim: ByLine, ReadyLine: readyLine, Interval: 10 * time.Second, Budget: 700 * time.Second},
		{Name: "curl-any", Description: "while ! curl -s URL; do sleep 2; done (any answer, 503 too)",
			Command:  `while ! curl -s http://127.0.0.1:{{.Port}}/health >/dev/null; do sleep 2; done`,
			Interval: 2 * time.Second},
		{Name: "curl-retry", Description: "curl -fsS --retry 450 (connection refused is fatal)",
			Command:  `curl -fsS --retry 450 --retry-delay 2 -o /dev/null http://127.0.0.1:{{.Port}}/health`,
			Interval: 2 * time.Second, Budget: 900 * time.Second},
		{Name: "curl-strict", Description: "curl -fsS --retry-connrefused --max-time 30 --noproxy '*'",
			Command:  `curl -fsS --retry 450 --retry-delay 2 --retry-max-time 900 --max-time 30 --retry-connrefused --noproxy '*' -o /dev/null http://127.0.0.1:{{.Port}}/health`,
			Interval: 2 * time.Second, Budget: 900 * time.Second},
		{Name: "sglang-popen", Description: "popen_launch_server-style waiter (python3)", Command: popenWaiter,
			Interval: 10 * time.Second, Budget: 620 * time.Second},
		{Name: "popen-launch", Description: "launches {{.Launch}} like popen_launch_server (bash): process exit fails, /health_generate 200 is ready, 600 s",
			Command: popenLauncher, Claim: ByBoth, ReadyLine: readyLine, Interval: 10 * time.Second, Budget: 620 * time.Second},
		{Name: "llmwait-launch", Description: "llmwait launch -- {{.Launch}}: the CLI starts the server (preflight on the scenario's host, process, log, identity, probes)",
			Command: llmwaitLaunch, Interval: time.Second, Budget: 30 * time.Minute, PreflightExit: 4},
		{Name: "vllm-helper", Description: "vLLM RemoteOpenAIServer-style waiter (python3)", Command: vllmWaiter,
			Claim: ByBoth, ReadyLine: readyLine, Interval: time.Second},
		{Name: "k8s-sglang", Description: "model: SGLang k8s manifest, liveness 30s+3x10s, no readiness probe",
			Wait:     KubernetesPods()["k8s-sglang"].Wait,
			Interval: 10 * time.Second, Budget: 90 * time.Second},
		{Name: "k8s-kserve", Description: "model: startupProbe /health 60x10s, timeoutSeconds 1 (default)",
			Wait:     KubernetesPods()["k8s-kserve"].Wait,
			Interval: 10 * time.Second, Budget: 620 * time.Second},
		{Name: "k8s-ome", Description: "model: OME startupProbe /health_generate 60s+150x6s timeout 30s, readiness",
			Wait:     KubernetesPods()["k8s-ome"].Wait,
			Interval: 6 * time.Second, Budget: 1000 * time.Second},
		{Name: "compose-sglang", Description: "model: SGLang compose.yaml healthcheck (defaults 30s/30s/3) + service_healthy",
			Wait:     Healthcheck{}.Wait,
			Interval: 30 * time.Second, Budget: 150 * time.Second},
		{Name: "compose-tuned", Description: "model: healthcheck 10s/30s/3, start_period 900s, start_interval 5s, --wait-timeout 1200",
			Wait: Healthcheck{Interval: 10 * time.Second, Timeout: 30 * time.Second, Retries: 3, StartPeriod: 900 * time.Second,
				StartInterval: 5 * time.Second, MaxTime: 25 * time.Second, WaitTimeout: 1200 * time.Second}.Wait,
			Interval: 10 * time.Second, Budget: 1200 * time.Second},
		{Name: "tc-http", Description: "model: testcontainers WaitingFor: wait.ForHTTP(/health).WithStartupTimeout(15m) (1 s client timeout)",
			Wait:     TCWait(TCHTTP{Path: "/health", StartupTimeout: 15 * time.Minute}),
			Interval: time.Second, Budget: 15 * time.Minute},
		{Name: "tc-http-withwaitstrategy", Description: "model: testcontainers.WithWaitStrategy(wait.ForHTTP(/health).WithStartupTimeout(15m)): its 60 s deadline wins",
			Wait:     TCWait(TCWithWaitStrategy(TCHTTP{Path: "/health", StartupTimeout: 15 * time.Minute})),
			Interval: time.Second, Budget: TCWithWaitStrategyDeadline},
		{Name: "tc-port", Description: "model: testcontainers wait.ForListeningPort 15m",
			Wait:     TCWait(TCPort{StartupTimeout: 15 * time.Minute}),
			Interval: time.Second, Budget: 15 * time.Minute},
		{Name: "tc-log", Description: "model: testcontainers wait.ForLog(ready line) with fatal lines as permanent errors",
			Wait:     TCWait(TCLog{Pattern: regexp.MustCompile(tcReady.String() + "|" + tcFatal.String()), Fatal: tcFatal, StartupTimeout: 15 * time.Minute}),
			Interval: time.Second, Budget: 15 * time.Minute},
		{Name: "tc-all", Description: "model: ForAll(ForLog(ready|fatal), ForHTTP(/health)==200).WithDeadline(15m)",
			Wait: TCWait(TCAll{Deadline: 15 * time.Minute, Strategies: []TCStrategy{
				TCLog{Pattern: tcLogPattern, Fatal: tcFatal, StartupTimeout: 15 * time.Minute},
				TCHTTP{Path: "/health", Status: func(c int) bool { return c == http.StatusOK }},
			}}),
			Interval: time.Second, Budget: 15 * time.Minute},
	}
	return append(tools, llmwaitTool())
}
