package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/harness"
)

// TestExplainCells runs explain on cells of every tool kind on virtual time and checks that
// each field says what the scored result holds.
func TestExplainCells(t *testing.T) {
	for _, b := range []string{"bash", "curl", "tail"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s not installed", b)
		}
	}
	cases := []struct {
		scenario, tool string
		verdict        harness.Verdict
		exitCode       string // a prefix of the exit code field
		output         string // a line of the output
	}{
		{"s4-crash-during-load", "curl-strict", harness.FailedSlow, "7", "curl: (7)"},                                        // shell
		{"s4-crash-during-load", "k8s-kserve", harness.FailedFast, "none (Go tool): returned the error", ""},                 // Go model
		{"hicache-300-host-oom", "llmwait", harness.FailedFast, "none (Go tool): returned the error preflight", "preflight"}, // our tool, a preflight refusal
		{"s19-auth", "popen-launch", harness.ReadyOK, "0", "READY"},                                                          // launches {{.Launch}}
		{"s9-proxy-env", "mine", harness.ReadyOK, "0", ""},                                                                   // a --tool entry
	}
	for _, c := range cases {
		t.Run(c.scenario+"/"+c.tool, func(t *testing.T) {
			t.Parallel()
			svg := filepath.Join(t.TempDir(), "cell.svg")
			o := explainOptions{svg: svg, score: scoreOptions{speed: harness.Virtual, seed: 1,
				userTools: []string{"name=mine;interval=2s;budget=5m;command=curl -fsS --noproxy '*' --retry 150 --retry-delay 2 --retry-connrefused -o /dev/null {{.URL}}/health"}}}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := explainRun(ctx, io.Discard, c.scenario, c.tool, o.score)
			if err != nil || res.Err != nil {
				t.Fatal(err, res.Err)
			}
			if res.Verdict != c.verdict || (res.Expect != "" && res.Expect != c.verdict) {
				t.Fatalf("verdict %s (%s), expected by the harness %q, want %s", res.Verdict, res.Reason, res.Expect, c.verdict)
			}
			var out bytes.Buffer
			if err := runExplain(ctx, &out, io.Discard, c.scenario, c.tool, o); err != nil && !errors.As(err, new(mustPassError)) {
				t.Fatal(err)
			}
			text := out.String()
			field := func(name string) string {
				for _, l := range strings.Split(text, "\n") {
					if v, ok := strings.CutPrefix(strings.TrimSpace(l), name+":"); ok {
						return strings.TrimSpace(v)
					}
				}
				t.Fatalf("no %s field in:\n%s", name, text)
				return ""
			}
			if !strings.HasPrefix(text, c.scenario+" x "+c.tool+": "+string(c.verdict)) {
				t.Errorf("first line is not %q:\n%s", c.scenario+" x "+c.tool+": "+string(c.verdict), text)
			}
			if got := field("truth"); !strings.HasPrefix(got, harness.TruthText(res.Truth)) {
				t.Errorf("truth %q, want %q", got, harness.TruthText(res.Truth))
			}
			if got := field("claim"); !strings.Contains(got, " at "+harness.FormatDuration(res.ClaimAfter())) {
				t.Errorf("claim %q lacks the claim time %s", got, harness.FormatDuration(res.ClaimAfter()))
			}
			var rule string
			for _, d := range harness.Definitions() {
				if d.Verdict == c.verdict {
					rule = string(d.Verdict) + ": " + d.Meaning
				}
			}
			if got := field("rule"); got != rule {
				t.Errorf("rule %q, want %q", got, rule)
			}
			if got := field("because"); got == "" || !strings.Contains(got, harness.FormatDuration(res.ClaimAfter())) {
				t.Errorf("because %q does not apply the rule to the claim", got)
			}
			if got := field("exit code"); !strings.HasPrefix(got, c.exitCode) {
				t.Errorf("exit code %q, want %q...", got, c.exitCode)
			}
			if got := field("picture"); got != svg {
				t.Errorf("picture %q, want %q", got, svg)
			}
			if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
				t.Errorf("picture %s is not an SVG (%v)", svg, err)
			}
			_, lines, _ := strings.Cut(text, "output (last 20 lines):\n")
			if n := strings.Count(lines, "\n"); n == 0 || n > harness.ExplainLines {
				t.Errorf("%d output lines, want 1..%d", n, harness.ExplainLines)
			}
			if c.output != "" && !strings.Contains(lines, c.output) {
				t.Errorf("output lacks %q:\n%s", c.output, lines)
			}
		})
	}
}
