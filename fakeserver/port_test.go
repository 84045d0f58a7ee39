package fakeserver

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/replay"
)

// TestLogShowsTheBoundPort: the scenarios' launch flags say --port 30000 (or Errno 98 on
// it); a server on another port prints that port in every line that names one.
func TestLogShowsTheBoundPort(t *testing.T) {
	cases := []struct {
		scenario string
		lines    []string // regexps over the log; %d is the port
	}{
		{"s0-happy-era-a", []string{`server_args=ServerArgs\(.*[(, ]port=%d[,)]`, `Uvicorn running on http://[0-9.]+:%d `}},
		{"s0-happy-era-c", []string{`server_args=ServerArgs\(.*\bport=%d[,)]`, `Uvicorn running on http://[0-9.]+:%d `}},
		{"errno98-after-load", []string{`\[Errno 98\] error while attempting to bind on address \('[0-9.]+', %d\)`}},
	}
	for _, c := range cases {
		t.Run(c.scenario, func(t *testing.T) {
			cfg, err := ConfigForScenario(c.scenario, ScenarioOptions{Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Args.Port != 30000 {
				t.Fatalf("scenario port %d: the test expects the scenario to say 30000", cfg.Args.Port)
			}
			cfg.Args.Port = 0 // pick one, as the harness does
			cfg.Args.Host = "127.0.0.1"
			cfg.Clock = replay.Scaled(cfg.Timeline.Start, 2000)
			r := start(t, cfg)
			if r.Port() == 30000 {
				t.Skip("the kernel picked 30000 itself")
			}
			deadline := time.Now().Add(10 * time.Second)
			for _, l := range c.lines {
				re := regexp.MustCompile(fmtPort(l, r.Port()))
				for !re.Match(mustLogs(t, r.Server)) {
					if time.Now().After(deadline) {
						t.Fatalf("no line matching %s in:\n%s", re, mustLogs(t, r.Server))
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			if regexp.MustCompile(`port=30000|'port': 30000|:30000 |', 30000\)`).Match(mustLogs(t, r.Server)) {
				t.Errorf("a line still names port 30000:\n%s", mustLogs(t, r.Server))
			}
		})
	}
}

func fmtPort(re string, port int) string {
	return regexp.MustCompile(`%d`).ReplaceAllString(re, strconv.Itoa(port))
}
