package ready

import (
	"context"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/internal/forking"
	"github.com/incident-replay/incident-replay/sglang"
)

func founding(t *testing.T) *gpu.Host {
	t.Helper()
	h, err := gpu.LookupHost(gpu.FoundingHost)
	if err != nil {
		t.Fatal(err)
	}
	return &h
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

func TestPreflightFoundingIncident(t *testing.T) {
	port := freePort(t)
	launch := func(size string) []string {
		return []string{"python", "-m", "sglang.launch_server", "--model-path", "org/model", "--port", port,
			"--tp", "8", "--enable-hierarchical-cache", "--hicache-size", size}
	}
	fs := Preflight(context.Background(), PreflightInput{Argv: launch("300"), Host: founding(t), Env: []string{}})
	if !PreflightFailed(fs) {
		t.Fatalf("--hicache-size 300 --tp 8 on the 449 GB host passed: %v", fs)
	}
	msg := fs[0].Message
	for _, want := range []string{"300 GB x 8 ranks", "2400", "10 GiB reserve"} {
		if !strings.Contains(msg, want) {
			t.Errorf("finding %q lacks %q", msg, want)
		}
	}
	fs = Preflight(context.Background(), PreflightInput{Argv: launch("48"), Host: founding(t), Env: []string{}})
	if PreflightFailed(fs) {
		t.Fatalf("--hicache-size 48 --tp 8 failed: %v", fs)
	}
}

// Every flag of the launch shape reaches the finding: the build's host check decides which
// failure is predicted, and --max-total-tokens is the device pool --hicache-ratio multiplies.
func TestPreflightReadsTheWholeShape(t *testing.T) {
	port := freePort(t)
	launch := func(flags ...string) []string {
		return append([]string{"python", "-m", "sglang.launch_server", "--model-path", "org/model", "--port", port,
			"--tp", "8", "--enable-hierarchical-cache"}, flags...)
	}
	tests := []struct {
		name  string
		in    PreflightInput
		check string
		sev   Severity
		want  string
	}{
		{"per-rank check: the host OOMs", PreflightInput{Argv: launch("--hicache-size", "300")},
			CheckHiCacheRAM, SeverityError, "the ranks pin it all and the host OOMs"},
		{"divided check: SGLang refuses at startup", PreflightInput{Argv: launch("--hicache-size", "300"), HostCheck: sglang.CheckDividedPerHost},
			CheckHiCacheRAM, SeverityError, "SGLang refuses at startup: Not enough host memory available. Requesting 300.00 GB but only have 58.92 GB free."},
		{"--hicache-ratio over --max-total-tokens", PreflightInput{Argv: launch("--hicache-ratio", "0.5", "--max-total-tokens", "116000"), KVBytesPerToken: 70272},
			CheckHiCacheRAM, SeverityWarning, "HiCache host pool (58001 tokens) is not larger than the device pool (116000 tokens)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Host, tc.in.Env = founding(t), []string{}
			fs := Preflight(context.Background(), tc.in)
			if len(fs) != 1 || fs[0].Check != tc.check || fs[0].Severity != tc.sev || !strings.Contains(fs[0].Message, tc.want) {
				t.Errorf("findings %v, want one %v %s containing %q", fs, tc.sev, tc.check, tc.want)
			}
		})
	}
}

func TestPreflightChecks(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)
	free := freePort(t)
	base := func(port string, extra ...string) []string {
		return append([]string{"sglang", "serve", "--model-path", "org/model", "--port", port}, extra...)
	}
	tests := []struct {
		name  string
		argv  []string
		env   []string
		check string
		sev   Severity
		want  string
	}{
		{"port held: names the owning PID", base(busyPort), nil, CheckPort, SeverityError, "PID " + strconv.Itoa(os.Getpid())},
		{"proxy without loopback no_proxy", base(free), []string{"HTTP_PROXY=http://10.0.0.1:3128", "no_proxy=localhost,127.0.0.1"}, CheckProxy, SeverityWarning, "::1,0.0.0.0"},
		{"missing local model path", []string{"sglang", "serve", "--model-path", "/nonexistent/model", "--port", free}, nil, CheckModelPath, SeverityError, "/nonexistent/model"},
		{"tp x dp over the host's GPUs", base(free, "--tp", "8", "--dp", "2"), nil, CheckGPUCount, SeverityError, "16 GPUs"},
		{"flags the model does not know are listed, the rest still checked", base(free, "--some-new-flag", "7"), nil, CheckArgs, SeverityWarning, "--some-new-flag 7"},
		{"no flags at all", []string{"./launch.sh"}, nil, CheckArgs, SeverityError, "cannot find SGLang flags"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := tc.env
			if env == nil {
				env = []string{}
			}
			fs := Preflight(context.Background(), PreflightInput{Argv: tc.argv, Host: founding(t), Env: env})
			i := slices.IndexFunc(fs, func(f Finding) bool { return f.Check == tc.check })
			if i < 0 {
				t.Fatalf("no %s finding in %v", tc.check, fs)
			}
			if fs[i].Severity != tc.sev || !strings.Contains(fs[i].Message, tc.want) {
				t.Errorf("finding %v, want %v containing %q", fs[i], tc.sev, tc.want)
			}
		})
	}
}

// Behind docker-proxy the host port is held on the server's behalf: SkipPort leaves the
// bind-test out, and nothing else.
func TestPreflightSkipPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	argv := []string{"sglang", "serve", "--model-path", "/nonexistent/model", "--port", strconv.Itoa(busy.Addr().(*net.TCPAddr).Port)}
	fs := Preflight(context.Background(), PreflightInput{Argv: argv, Host: founding(t), Env: []string{}, SkipPort: true})
	if slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == CheckPort }) {
		t.Errorf("SkipPort still bind-tested the port: %v", fs)
	}
	if !slices.ContainsFunc(fs, func(f Finding) bool { return f.Check == CheckModelPath }) {
		t.Errorf("SkipPort dropped the other checks: %v", fs)
	}
}

// The launch follows the port check at once, while a program that embeds the library may be
// starting other processes: a child forked while the check's socket was open held it until
// its exec, and the server's bind failed with EADDRINUSE.
func TestPortCheckLeavesThePortFree(t *testing.T) {
	forking.Start(t, 4)
	failed, n := 0, 0
	for range 1000 {
		port, _ := strconv.Atoi(freePort(t))
		if fs := portFindings("127.0.0.1", port, "/proc"); len(fs) != 0 {
			continue // a child still holds freePort's own socket, which this race is about
		}
		n++
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			failed++
			continue
		}
		l.Close()
	}
	if failed > 0 {
		t.Fatalf("%d of %d binds right after a clean port check failed", failed, n)
	}
}

func TestFixNoProxy(t *testing.T) {
	env := []string{"http_proxy=http://10.0.0.1:3128", "no_proxy=example.com"}
	fixed := FixNoProxy(env, "10.1.2.3")
	if _, missing := proxyGaps(fixed, "10.1.2.3"); len(missing) != 0 {
		t.Fatalf("after the fix %v still misses %v", fixed, missing)
	}
	if !slices.Contains(fixed, "no_proxy=example.com,127.0.0.1,localhost,::1,0.0.0.0,10.1.2.3") {
		t.Errorf("existing entries must be kept: %v", fixed)
	}
	if got := FixNoProxy([]string{"PATH=/bin"}, ""); len(got) != 1 {
		t.Errorf("no proxy set: env changed to %v", got)
	}
}
