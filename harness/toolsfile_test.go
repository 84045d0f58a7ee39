package harness

import (
	"bytes"
	"encoding/xml"
	"os"
	"strings"
	"testing"
	"time"
)

func TestParseTools(t *testing.T) {
	good := `tools:
  - name: mywait
    command: "curl -fsS {{.URL}}/health"
    interval: 2s
    budget: 10m
  - name: lined
    command: "./wait.sh {{.Port}}"
    claim: line
    ready_line: "^UP"
    scaled: false
    must_pass: true
`
	ts, err := ParseTools("tools.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 2 || ts[0].Interval != 2*time.Second || ts[0].Budget != 10*time.Minute || ts[0].Claim != ByExit {
		t.Fatalf("first tool: %+v", ts[0])
	}
	if !ts[1].Unscaled || !ts[1].MustPass || ts[1].Claim != ByLine || !ts[1].ReadyLine.MatchString("UP 3") {
		t.Fatalf("second tool: %+v", ts[1])
	}

	bad := []struct{ name, yaml, want string }{
		{"unknown key", "tools:\n  - name: a\n    command: x\n    comand: y\n", "comand"},
		{"no command", "tools:\n  - name: a\n", "no command"},
		{"line without pattern", "tools:\n  - name: a\n    command: x\n    claim: line\n", "ready line"},
		{"bad claim", "tools:\n  - name: a\n    command: x\n    claim: maybe\n", "exit, line:REGEX or both:REGEX"},
		{"bad template", "tools:\n  - name: a\n    command: '{{.Nope}}'\n", ".URL"},
		{"duplicate", "tools:\n  - name: a\n    command: x\n  - name: a\n    command: y\n", "duplicate"},
		{"bad interval", "tools:\n  - name: a\n    command: x\n    interval: 5\n", "duration"},
		{"empty", "tools: []\n", "no tools"},
		{"claim pattern and ready_line", "tools:\n  - name: a\n    command: x\n    claim: line:^A\n    ready_line: ^B\n", "keep one"},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseTools("tools.yaml", []byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestParseToolFlag(t *testing.T) {
	tool, err := ParseToolFlag("mine=curl -fsS {{.URL}}/health")
	if err != nil || tool.Name != "mine" || tool.Command != "curl -fsS {{.URL}}/health" || tool.Claim != ByExit {
		t.Fatalf("ParseToolFlag = %+v, %v", tool, err)
	}
	for _, v := range []string{"nocommand", "a b=cmd", "x="} {
		if _, err := ParseToolFlag(v); err == nil {
			t.Errorf("ParseToolFlag(%q) accepted", v)
		}
	}
}

func TestParseToolFlagKeys(t *testing.T) {
	good := []struct {
		flag string
		want Tool
		line string // a line ReadyLine must match, when set
	}{
		{"name=w;command=curl -fsS {{.URL}}/health;budget=20m;interval=2s;claim=exit;scaled=false",
			Tool{Name: "w", Command: "curl -fsS {{.URL}}/health", Budget: 20 * time.Minute, Interval: 2 * time.Second, Unscaled: true}, ""},
		// ';' inside the command stays there unless a key follows it
		{"name=loop;command=for i in 1 2; do n=$i; curl -s {{.URL}}; done;claim=line:^UP (\\d+)$;interval=5s",
			Tool{Name: "loop", Command: "for i in 1 2; do n=$i; curl -s {{.URL}}; done", Claim: ByLine, Interval: 5 * time.Second}, "UP 42"},
		{"name=l;budget=1m;command=./l.sh {{.Port}} {{.Scenario}} {{.APIKey}};preflight_exit=4;must_pass=true",
			Tool{Name: "l", Command: "./l.sh {{.Port}} {{.Scenario}} {{.APIKey}}", Budget: time.Minute, Interval: DefaultUserInterval, PreflightExit: 4, MustPass: true}, ""},
		{"name=b;claim=both:READY;command=./w.sh",
			Tool{Name: "b", Command: "./w.sh", Claim: ByBoth, Interval: DefaultUserInterval}, "READY"},
	}
	for _, c := range good {
		got, err := ParseToolFlag(c.flag)
		if err != nil {
			t.Errorf("%q: %v", c.flag, err)
			continue
		}
		if got.Name != c.want.Name || got.Command != c.want.Command || got.Budget != c.want.Budget || got.Interval != c.want.Interval ||
			got.Claim != c.want.Claim || got.Unscaled != c.want.Unscaled || got.PreflightExit != c.want.PreflightExit || got.MustPass != c.want.MustPass {
			t.Errorf("%q:\n got %+v\nwant %+v", c.flag, got, c.want)
		}
		if c.line != "" && (got.ReadyLine == nil || !got.ReadyLine.MatchString(c.line)) {
			t.Errorf("%q: ready line %v does not match %q", c.flag, got.ReadyLine, c.line)
		}
	}
	bad := []struct{ flag, want string }{
		{"name=w;comand=curl x", `unknown key "comand": did you mean command?`},
		{"name=w;bugdet=5m;command=x", "did you mean budget?"},
		{"name=w;zzz=1;command=x", `unknown key "zzz" (keys: name,`},
		{"name=w;command=x;budget=20", `budget "20": use a duration such as 15m`},
		{"name=w;command=x;interval=soon", "interval \"soon\": use a positive duration"},
		{"name=w;command=x;scaled=maybe", `scaled "maybe": use true or false`},
		{"name=w;command=x;claim=line", "needs a ready line"},
		{"name=w;command=x;claim=line:(", "ready_line"},
		{"name=w;command=x;claim=sometimes", "exit, line:REGEX or both:REGEX"},
		{"name=w;budget=1m", "has no command"},
		{"name=w;command={{.Nope}}", ".Scenario .APIKey .Launch"},
		{"name=w;name=v;command=x", "given twice"},
		{"name=w;oops;command=x", `"oops" is not key=value`},
	}
	for _, c := range bad {
		_, err := ParseToolFlag(c.flag)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to mention %q", c.flag, err, c.want)
		}
	}
}

func TestParseToolsEmptyFile(t *testing.T) {
	for _, data := range []string{"", "\n# nothing yet\n", "tools: []\n"} {
		_, err := ParseTools("tools.yaml", []byte(data))
		if err == nil || !strings.Contains(err.Error(), "tools.yaml has no tools; the format is:") || !strings.Contains(err.Error(), "claim: exit") {
			t.Errorf("%q: error %v, want one that says the file has no tools and shows the format", data, err)
		}
	}
}

func TestBuiltinsValidateAndAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, tool := range Builtins() {
		if err := tool.Validate(); err != nil {
			t.Errorf("%s: %v", tool.Name, err)
		}
		if seen[tool.Name] {
			t.Errorf("duplicate built-in %s", tool.Name)
		}
		seen[tool.Name] = true
	}
	if !seen["llmwait"] || !seen["founding-loop-1"] || !seen["founding-loop-2"] {
		t.Fatalf("built-ins miss a required tool: %v", seen)
	}
	if _, err := BuiltinExpectations(); err != nil {
		t.Fatal(err)
	}
}

func TestScorecardFormats(t *testing.T) {
	card := Scorecard{Speed: 60, Where: "inprocess", Results: []Result{
		{Scenario: "s0", Tool: "llmwait", MustPass: true, Expect: ReadyOK, Verdict: ReadyOK, Start: epoch, Claim: Claim{At: epoch.Add(30 * time.Second)}},
		{Scenario: "s0", Tool: "loop", Expect: MissedReady, Verdict: Hung, Reason: "killed"},
		{Scenario: "s4", Tool: "llmwait", MustPass: true, Expect: FailedFast, Verdict: FailedSlow, Reason: "slow"},
		{Scenario: "s4", Tool: "loop", Verdict: FailedSlow},
	}}
	if n := len(card.MustPassFailures()); n != 1 {
		t.Fatalf("must-pass failures %d, want 1", n)
	}
	var tbl, md, ju bytes.Buffer
	if err := card.WriteTable(&tbl); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ok 30s", "!HUNG", "s4 x llmwait: expected failed-fast, got failed-slow"} {
		if !strings.Contains(tbl.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tbl.String())
		}
	}
	if err := card.WriteMarkdown(&md); err != nil || !strings.Contains(md.String(), "| s0 | ready-ok | ok 30s | **!HUNG") {
		t.Errorf("markdown (%v):\n%s", err, md.String())
	}
	if err := card.WriteJUnit(&ju); err != nil {
		t.Fatal(err)
	}
	var parsed junitSuites
	if err := xml.Unmarshal(ju.Bytes(), &parsed); err != nil {
		t.Fatalf("JUnit is not XML: %v", err)
	}
	if parsed.Tests != 4 || parsed.Failures != 2 || len(parsed.Suites) != 2 {
		t.Fatalf("JUnit counts: %+v", parsed)
	}
}

func TestSpeedClause(t *testing.T) {
	at := func(speeds ...float64) []Result {
		var rs []Result
		for _, s := range speeds {
			rs = append(rs, Result{Speed: s})
		}
		return rs
	}
	cases := []struct {
		card Scorecard
		want string
	}{
		{Scorecard{Speed: 60, Results: at(60, 60)}, "speed 60x"},
		{Scorecard{Speed: 60, Results: at(1, 1)}, "speed 1x (real time)"},
		{Scorecard{Speed: 0, Results: at(0, 0)}, "virtual time (--speed 0)"},
		{Scorecard{Speed: 60, Results: at(60, 1, 60, 1)}, "speed 60x (2 pair(s) at 1x)"},
		{Scorecard{Speed: 0, Results: at(0, 1)}, "virtual time (--speed 0) (1 pair(s) at 1x)"},
		{Scorecard{Speed: 60}, "speed 60x"},
	}
	for _, c := range cases {
		if got := c.card.SpeedClause(); got != c.want {
			t.Errorf("SpeedClause of %v = %q, want %q", c.card.Results, got, c.want)
		}
	}
}

// TestREADMEDocumentsToolsAndVerdicts holds the README's key table to toolKeys and its
// verdict table to Definitions.
func TestREADMEDocumentsToolsAndVerdicts(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	for _, k := range toolKeys {
		if !strings.Contains(readme, "| `"+k+"` |") {
			t.Errorf("README's tools table lacks the key %s", k)
		}
	}
	for _, d := range Definitions() {
		if row := "| `" + d.Cell + "` | " + string(d.Verdict) + " | " + d.Meaning + " |"; !strings.Contains(readme, row) {
			t.Errorf("README's verdict table lacks the row %s", row)
		}
	}
}
