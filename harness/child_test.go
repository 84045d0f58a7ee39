package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binErr  error
)

// projectBin builds fakesglang and llmwait once into a directory for the launch tests.
func projectBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "ir-harness-bin-")
		if binErr != nil {
			return
		}
		for _, pkg := range []string{"fakesglang", "llmwait"} {
			cmd := exec.Command("go", "build", "-o", filepath.Join(binDir, pkg), "../cmd/"+pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				binErr = &buildError{pkg, err, out}
				return
			}
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binDir
}

type buildError struct {
	pkg string
	err error
	out []byte
}

func (e *buildError) Error() string {
	return "go build " + e.pkg + ": " + e.err.Error() + "\n" + string(e.out)
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// A launch tool on virtual time starts the scenario's server as its own child: {{.Launch}}
// is a fakesglang process (its PID is $!, it owns the port), the verdict is judged on that
// process's journal, and the tool stopping its server after it has claimed is not the
// scenario's fate.
func TestLaunchToolRunsTheServerAsItsChild(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	bin := projectBin(t)
	tool := Tool{Name: "own-launch", Interval: 2 * time.Second, Budget: 10 * time.Minute, Command: `{{.Launch}} &
srv=$!
until [ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 {{.URL}}/health)" = 200 ]; do
  kill -0 $srv 2>/dev/null || { wait $srv; echo "server exited $?"; exit 1; }
  sleep 2
done
echo "exe=$(basename "$(readlink /proc/$srv/exe)")"
kill $srv; wait $srv; echo "stopped $?"`}
	r := Runner{Launcher: InProcess{}, Speed: Virtual, BinDir: bin}
	for _, tc := range []struct {
		scenario string
		want     Verdict
	}{
		{"s0-happy-era-b", ReadyOK},
		{"s4-crash-during-load", FailedFast},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			c := catalogueCase(t, tc.scenario)
			res := r.Run(context.Background(), c, tool)
			t.Logf("%s: %s at %v, wall %v, output:\n%s", tc.scenario, res.Verdict, res.Claim.At.Sub(res.Start), res.Wall, res.Output)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Verdict != tc.want {
				t.Errorf("verdict %s (%s), want %s", res.Verdict, res.Reason, tc.want)
			}
			if len(res.Journal) == 0 {
				t.Error("no journal from the launched server")
			}
			if tc.want == ReadyOK {
				// SGLang drains on SIGTERM after its first generate and then kills itself (137).
				if !strings.Contains(res.Output, "exe=fakesglang") || !strings.Contains(res.Output, "stopped 137") {
					t.Errorf("the launched process is not the fake server the tool stopped; output:\n%s", res.Output)
				}
				if res.Truth.Dead != nil {
					t.Errorf("truth has the server dead at %v: the tool's own SIGTERM after its claim counted", *res.Truth.Dead)
				}
			}
		})
	}
}

// The llmwait-launch row runs the llmwait CLI, traced onto virtual time, launching the server
// itself: its preflight refuses hicache-300 (exit 4, failed-fast at 0 s), its identity check
// passes on its own child, and it catches the stale listener.
func TestLLMWaitLaunchRow(t *testing.T) {
	bin := projectBin(t)
	tool := builtin(t, "llmwait-launch")
	r := Runner{Launcher: InProcess{}, Speed: Virtual, BinDir: bin}
	for _, tc := range []struct {
		scenario string
		want     Verdict
	}{
		{"hicache-300-host-oom", FailedFast},
		{"s0-happy-era-c", ReadyOK},
		{"s8-stale-listener", FailedFast},
	} {
		t.Run(tc.scenario, func(t *testing.T) {
			res := r.Run(context.Background(), catalogueCase(t, tc.scenario), tool)
			t.Logf("%s: %s at %v (%s), wall %v", tc.scenario, res.Verdict, res.Claim.At.Sub(res.Start), res.Mode, res.Wall)
			if res.Err != nil {
				t.Fatal(res.Err)
			}
			if res.Verdict != tc.want {
				t.Errorf("verdict %s (%s), want %s; output:\n%s", res.Verdict, res.Reason, tc.want, res.Output)
			}
		})
	}
}

// A stale server is on the port before the launch: a launcher that probes the moment it has
// started {{.Launch}} is answered by it, every time, however fast it is.
func TestStaleListenerIsThereBeforeTheLaunch(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	bin := projectBin(t)
	tool := Tool{Name: "probe-at-once", Interval: time.Second, Budget: 2 * time.Minute,
		Command: `{{.Launch}} >/dev/null 2>&1 &
curl -fsS -o /dev/null --max-time 5 {{.URL}}/health`}
	r := Runner{Launcher: InProcess{}, Speed: Virtual, BinDir: bin}
	c := catalogueCase(t, "s8-stale-listener")
	for i := range 5 {
		res := r.Run(context.Background(), c, tool)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if res.Verdict != FalseReady || res.Claim.At != res.Start {
			t.Fatalf("run %d: %s at %v (%s), want false-ready at 0s: the probe missed the stale server; output:\n%s",
				i, res.Verdict, res.Claim.At.Sub(res.Start), res.Reason, res.Output)
		}
	}
}
