package harness

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/truth"
)

// ExplainLines is how many of a tool's last output lines an explanation shows.
const ExplainLines = 20

// Explanation is why one cell of the scorecard is what it is: the truth, the claim, the rule
// that decided, and what the tool said.
type Explanation struct {
	Scenario, Tool string
	Verdict        Verdict
	Expect         Verdict // "" when nothing was expected
	Truth          string  // bound/ready/dead/exit, one line
	Predicted      bool    // some of the truth came from the scenario's expect block
	Claim          string  // outcome and time, one line
	Rule           string  // the verdict class's rule in general (Definitions)
	Reason         string  // the rule as Classify applied it to this claim
	ExitCode       string  // the tool's exit status, or what a Go tool returned
	Output         []string
	Err            error // the pair could not run
}

// Explain reads the explanation off a scored result.
func Explain(r Result) Explanation {
	e := Explanation{Scenario: r.Scenario, Tool: r.Tool, Verdict: r.Verdict, Expect: r.Expect, Err: r.Err,
		Truth: TruthText(r.Truth), Predicted: r.Predicted, Reason: r.Reason, Output: lastLines(r.Output, ExplainLines)}
	if r.Err != nil {
		return e
	}
	for _, d := range Definitions() {
		if d.Verdict == r.Verdict {
			e.Rule = d.Meaning
		}
	}
	e.Claim = r.Claim.Outcome.String()
	if r.Claim.Outcome == NoClaim {
		e.Claim = "none (killed)"
	}
	e.Claim += " at " + FormatDuration(r.ClaimAfter())
	if r.Claim.Preflight {
		e.Claim += " (a preflight refusal)"
	}
	switch {
	case r.Claim.Outcome == NoClaim:
		e.ExitCode = "none: killed at the harness limit " + FormatDuration(r.Limit)
	case r.Kind == "go" && r.Claim.Outcome == ClaimReady:
		e.ExitCode = "none (Go tool): returned nil"
	case r.Kind == "go":
		e.ExitCode = "none (Go tool): returned the error " + r.Claim.Detail
	default:
		e.ExitCode = fmt.Sprint(r.Claim.ExitCode)
	}
	return e
}

// TruthText is a truth as one line: "bound 23s, ready 24s, dead never, exit none".
func TruthText(t truth.Truth) string {
	at := func(d *time.Duration) string {
		if d == nil {
			return "never"
		}
		return FormatDuration(*d)
	}
	exit := "none (running or wedged)"
	if t.ExitCode != nil {
		exit = fmt.Sprint(*t.ExitCode)
	}
	return fmt.Sprintf("bound %s, ready %s, dead %s, exit %s", at(t.Bound), at(t.Ready), at(t.Dead), exit)
}

// WriteText prints the explanation; picture is the run's timeline file ("" for none).
func (e Explanation) WriteText(w io.Writer, picture string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s x %s: ", e.Scenario, e.Tool)
	if e.Err != nil {
		fmt.Fprintf(&b, "could not run: %v\n", e.Err)
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString(string(e.Verdict))
	switch {
	case e.Expect == "":
	case e.Expect == e.Verdict:
		b.WriteString(" (as expected)")
	default:
		fmt.Fprintf(&b, " (expected %s)", e.Expect)
	}
	b.WriteString("\n")
	truthNote := ""
	if e.Predicted {
		truthNote = " (events after the claim from the scenario's expect block)"
	}
	fmt.Fprintf(&b, "  truth:     %s%s\n", e.Truth, truthNote)
	fmt.Fprintf(&b, "  claim:     %s\n", e.Claim)
	fmt.Fprintf(&b, "  rule:      %s: %s\n", e.Verdict, e.Rule)
	fmt.Fprintf(&b, "  because:   %s\n", e.Reason)
	fmt.Fprintf(&b, "  exit code: %s\n", e.ExitCode)
	if picture != "" {
		fmt.Fprintf(&b, "  picture:   %s\n", picture)
	}
	fmt.Fprintf(&b, "  output (last %d lines):\n", ExplainLines)
	if len(e.Output) == 0 {
		b.WriteString("    (none)\n")
	}
	for _, l := range e.Output {
		b.WriteString("    " + l + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// lastLines is the last n non-empty-trailing lines of s.
func lastLines(s string, n int) []string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
