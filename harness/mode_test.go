package harness

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/vtime/ptrace"
)

func TestPickMode(t *testing.T) {
	dir := t.TempDir()
	buildGoWaiter(t, dir)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	goBin := Tool{Name: "g", Command: "gowaiter -url {{.URL}}/health"}
	script := Tool{Name: "s", Command: "until curl -sf {{.URL}}/health; do sleep 5; done"}
	model := Tool{Name: "m", Wait: func(context.Context, Env) error { return nil }}
	traced, tracedSpeed := ModePtrace, Virtual
	if !ptrace.Supported {
		traced, tracedSpeed = ModeReal, 1
	}
	cases := []struct {
		name     string
		tool     Tool
		speed    float64
		launcher Launcher
		mode     Mode
		runSpeed float64
	}{
		{"Go binary on virtual time", goBin, Virtual, InProcess{}, traced, tracedSpeed},
		{"Go binary at 60x in-process is moved to virtual time", goBin, 60, InProcess{}, traced, tracedSpeed},
		{"Go binary in a container at 60x is moved to virtual time", goBin, 60, Container{}, traced, tracedSpeed},
		{"unscaled Go binary", Tool{Name: "u", Command: goBin.Command, Unscaled: true}, Virtual, InProcess{}, ModeReal, 1},
		{"script on virtual time", script, Virtual, InProcess{}, ModeVirtual, Virtual},
		{"script at 60x", script, 60, InProcess{}, ModeFaketime, 60},
		{"script at 1x", script, 1, Container{}, ModeReal, 1},
		{"Go model at 60x", model, 60, InProcess{}, ModeScaled, 60},
		{"Go model on virtual time", model, Virtual, InProcess{}, ModeVirtual, Virtual},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			speed, mode, _ := pickMode(c.tool, c.speed, c.launcher, toolPath(""))
			if mode != c.mode || speed != c.runSpeed {
				t.Errorf("pickMode = %q at %g, want %q at %g", mode, speed, c.mode, c.runSpeed)
			}
		})
	}
}

// Every output names the mode a tool ran in: the Markdown tool list, the JSON results (and
// what is read back from them), the HTML caption (tested in harness/report).
func TestScorecardSaysMode(t *testing.T) {
	tools := []Tool{{Name: "gowaiter", Command: "gowaiter"}, {Name: "loop", Command: "sleep 1"}}
	card := Scorecard{Speed: 60, Where: "inprocess", Tools: tools, Results: []Result{
		{Scenario: "a", Tool: "gowaiter", Verdict: ReadyOK, Mode: ModePtrace},
		{Scenario: "a", Tool: "loop", Verdict: ReadyOK, Mode: ModeFaketime},
	}}
	var b bytes.Buffer
	if err := card.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| gowaiter | shell | virtual (ptrace) |", "| loop | shell | faketime |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, b.String())
		}
	}
	f, err := NewResults(Shard{I: 1, N: 1}, 1, card, []Pair{{Index: 0}, {Index: 1}}, []Case{{Name: "a"}}, tools)
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Results[0].Mode; got != ModePtrace {
		t.Errorf("stored mode %q, want %q", got, ModePtrace)
	}
	if got := f.Results[1].result().Mode; got != ModeFaketime {
		t.Errorf("mode read back %q, want %q", got, ModeFaketime)
	}
}
