package harness

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/truth"
)

func TestScenarioEnv(t *testing.T) {
	cases := []struct {
		scenario string
		want     []string
	}{
		{"s9-proxy-env", []string{"HTTP_PROXY=http://127.0.0.1:9", "http_proxy=http://127.0.0.1:9", "no_proxy=localhost"}},
		// a proxy off loopback is pointed at a refusing loopback port: no tool traffic leaves
		{"s6-warmup-kill", []string{"http_proxy=" + proxyBlackhole}},
		{"s0-happy-era-c", nil},
	}
	for _, c := range cases {
		got := scenarioEnv(catalogueCase(t, c.scenario))
		if strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("%s: env %q, want %q", c.scenario, got, c.want)
		}
	}
	for proxy, want := range map[string]bool{"http://127.0.0.1:9": true, "http://localhost:3128": true, "[::1]:8080": true,
		"http://10.0.0.9:3128": false, "proxy.corp:3128": false} {
		if got := onLoopback(proxy); got != want {
			t.Errorf("onLoopback(%q) = %v, want %v", proxy, got, want)
		}
	}
}

func TestCountFaults(t *testing.T) {
	journal := truth.Truth{Bound: secs(23), Ready: secs(24)}
	if got := countFaults(journal, catalogueCase(t, "s11-redirect")); got.Ready != nil || got.Bound == nil {
		t.Errorf("s11-redirect: truth %+v, want bound and never ready (every /health is redirected)", got)
	}
	if got := countFaults(journal, catalogueCase(t, "s16-flap")); got.Ready == nil {
		t.Errorf("s16-flap: a flap does not hold /health for the whole run, but the truth lost t_ready")
	}
}

// TestShellToolsGetScenarioFacts runs a shell tool that prints what the scenario hands it.
func TestShellToolsGetScenarioFacts(t *testing.T) {
	needShell(t, Virtual)
	cases := []struct {
		scenario string
		want     []string
	}{
		{"s19-auth", []string{"scenario=s19-auth key=sk-test-not-secret proxy= ", "/python3 -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct --api-key sk-test-not-secret --port "}},
		{"s9-proxy-env", []string{"scenario=s9-proxy-env key= proxy=http://127.0.0.1:9 no_proxy=localhost"}},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			tool := Tool{Name: "facts", Interval: time.Second, Command: `echo "scenario={{.Scenario}} key={{.APIKey}} proxy=$http_proxy no_proxy=$no_proxy"; echo '{{.Launch}}'; exit 1`}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Speed: Virtual}.Run(ctx, catalogueCase(t, c.scenario), tool)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			for _, w := range c.want {
				if !strings.Contains(r.Output, w) {
					t.Errorf("output lacks %q:\n%s", w, r.Output)
				}
			}
		})
	}
}

// TestShellToolNiceness: a shell tool is niced on a compressed clock only. At S=1 it runs at
// the harness's own priority, as it would for real: niced beside busy CPU hogs it crawled.
func TestShellToolNiceness(t *testing.T) {
	own, err := syscall.Getpriority(syscall.PRIO_PROCESS, 0)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		speed float64
		want  int
	}{
		{1, 20 - own}, // Getpriority returns 20 - nice
		{60, shellNice},
		{Virtual, 20 - own},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.speed), func(t *testing.T) {
			ft := needShell(t, c.speed)
			tool := Tool{Name: "nice", Interval: time.Second, Command: `read -r -a f < /proc/$$/stat; echo "nice=${f[18]}"`}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := Runner{Launcher: InProcess{Dir: t.TempDir()}, Faketime: ft, Speed: c.speed}.Run(ctx, happyCase(), tool)
			if r.Err != nil {
				t.Fatal(r.Err)
			}
			if want := fmt.Sprintf("nice=%d", c.want); !strings.Contains(r.Output, want) {
				t.Errorf("output %q lacks %q", r.Output, want)
			}
		})
	}
}
