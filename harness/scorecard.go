package harness

import (
	"encoding/xml"
	"fmt"
	"io"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Scorecard is a finished matrix.
type Scorecard struct {
	Results []Result
	Speed   float64
	Wall    time.Duration
	Where   string // launcher name
	Tools   []Tool // for the Markdown tool list; optional
}

// Axes lists the scenarios and tools in first-seen order (the matrix's order).
func (s Scorecard) Axes() (scen, tools []string) {
	for _, r := range s.Results {
		if !slices.Contains(scen, r.Scenario) {
			scen = append(scen, r.Scenario)
		}
		if !slices.Contains(tools, r.Tool) {
			tools = append(tools, r.Tool)
		}
	}
	return scen, tools
}

// expectOf is the verdict the must-pass tool was held to on scen ("" when none ran).
func (s Scorecard) expectOf(scen string, tools []string) string {
	exp := ""
	for _, t := range tools {
		if r, ok := s.cell(scen, t); ok && r.MustPass {
			exp = string(r.Expect)
		}
	}
	return exp
}

func (s Scorecard) cell(scen, tool string) (Result, bool) {
	for _, r := range s.Results {
		if r.Scenario == scen && r.Tool == tool {
			return r, true
		}
	}
	return Result{}, false
}

// Reproducible is the scorecard without what depends on the machine rather than on the
// matrix: every wall-clock time is cleared (the writers leave cleared times out) and the
// loopback port a run happened to get reads PORT in tool output. On virtual time two runs of
// one matrix, or its shards merged, then write byte-identical reports.
func (s Scorecard) Reproducible() Scorecard {
	s.Wall = 0
	s.Results = slices.Clone(s.Results)
	for i := range s.Results {
		s.Results[i].Wall = 0
		s.Results[i].Output = loopbackPort.ReplaceAllString(s.Results[i].Output, "${1}:PORT")
	}
	return s
}

// loopbackPort is a loopback address with its port, as tools print a run's URL.
var loopbackPort = regexp.MustCompile(`(127\.0\.0\.1|localhost|\[::1\]):[0-9]+`)

// WallClause is the footers' ", wall 53.4s", or "" once Reproducible cleared it.
func (s Scorecard) WallClause() string {
	if s.Wall == 0 {
		return ""
	}
	return fmt.Sprintf(", wall %.1fs", s.Wall.Seconds())
}

// SpeedClause says what time the runs used: "virtual time (--speed 0)", "speed 60x", "speed
// 60x (3 pair(s) at 1x)", or "speed 1x (real time)" when every pair ran at S=1.
func (s Scorecard) SpeedClause() string {
	speeds := map[float64]int{}
	for _, r := range s.Results {
		speeds[r.Speed]++
	}
	name := func(v float64) string {
		switch v {
		case Virtual:
			return "virtual time (--speed 0)"
		case 1:
			return "speed 1x (real time)"
		}
		return fmt.Sprintf("speed %gx", v)
	}
	if len(speeds) == 0 {
		return name(s.Speed)
	}
	if len(speeds) == 1 {
		for v := range speeds {
			return name(v)
		}
	}
	main := s.Speed
	if speeds[main] == 0 { // a merged card: the most common speed
		for v, n := range speeds {
			if n > speeds[main] || (n == speeds[main] && v < main) {
				main = v
			}
		}
	}
	var other []string
	for _, v := range slices.Sorted(maps.Keys(speeds)) {
		if v != main {
			at := fmt.Sprintf("%gx", v)
			if v == Virtual {
				at = "virtual time"
			}
			other = append(other, fmt.Sprintf("%d pair(s) at %s", speeds[v], at))
		}
	}
	return name(main) + " (" + strings.Join(other, ", ") + ")"
}

// MustPassFailures lists the runs of must-pass tools that missed their expectation.
func (s Scorecard) MustPassFailures() []Result {
	var out []Result
	for _, r := range s.Results {
		if r.MustPass && !r.Pass() {
			out = append(out, r)
		}
	}
	return out
}

// Mismatches lists every run that missed an expectation or could not run.
func (s Scorecard) Mismatches() []Result {
	var out []Result
	for _, r := range s.Results {
		if !r.Pass() {
			out = append(out, r)
		}
	}
	return out
}

// Unstopped lists the scored runs whose server could not be stopped afterwards.
func (s Scorecard) Unstopped() []Result {
	var out []Result
	for _, r := range s.Results {
		if r.StopErr != nil {
			out = append(out, r)
		}
	}
	return out
}

// unstoppedHead heads the list of Unstopped runs.
const unstoppedHead = "Servers not stopped after their run (their verdicts stand)"

var shortVerdicts = map[Verdict]string{
	ReadyOK: "ok", ReadyLate: "late", FalseReady: "FALSE", MissedReady: "MISSED",
	FailedFast: "fail-fast", FailedSlow: "fail-slow", GaveUp: "gave-up", Hung: "HUNG",
}

// ShortVerdict is a verdict as a scorecard cell shows it: ok, late, FALSE, MISSED, ...
func ShortVerdict(v Verdict) string {
	if t, ok := shortVerdicts[v]; ok {
		return t
	}
	return string(v)
}

// cellText is a verdict and its claim time; "!" marks a missed expectation, "~" a pair run
// in real time (S=1: an unscaled tool, or a Go or static binary that could not be traced).
func cellText(r Result) string {
	if r.Err != nil {
		return "ERROR"
	}
	t := ShortVerdict(r.Verdict)
	t += " " + FormatDuration(r.ClaimAfter())
	if r.Unscaled {
		t += "~"
	}
	if !r.Pass() {
		t = "!" + t
	}
	return t
}

// WriteTable prints the scenario x tool grid, the legend and the missed expectations.
func (s Scorecard) WriteTable(w io.Writer) error {
	scen, tools := s.Axes()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "scenario\texpect")
	for _, t := range tools {
		fmt.Fprint(tw, "\t"+t)
	}
	fmt.Fprintln(tw)
	for _, sc := range scen {
		exp := s.expectOf(sc, tools)
		fmt.Fprint(tw, sc+"\t"+exp)
		for _, t := range tools {
			r, ok := s.cell(sc, t)
			txt := "-"
			if ok {
				txt = cellText(r)
			}
			fmt.Fprint(tw, "\t"+txt)
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d runs, %s, %s%s. Cells: verdict and claim time (scenario time); ! missed expectation; ~ ran in real time (S=1).\n",
		len(s.Results), s.Where, s.SpeedClause(), s.WallClause())
	if mm := s.Mismatches(); len(mm) > 0 {
		fmt.Fprintf(w, "\nExpected vs got (%d):\n", len(mm))
		for _, r := range mm {
			fmt.Fprintf(w, "  %s x %s: %s\n", r.Scenario, r.Tool, mismatchText(r))
		}
	}
	if us := s.Unstopped(); len(us) > 0 {
		fmt.Fprintf(w, "\n%s (%d):\n", unstoppedHead, len(us))
		for _, r := range us {
			fmt.Fprintf(w, "  %s x %s: %v\n", r.Scenario, r.Tool, r.StopErr)
		}
	}
	return nil
}

// timeOf says how a tool saw time: the modes its runs ran in, in order of first use.
func (s Scorecard) timeOf(t Tool) string {
	var modes []string
	for _, r := range s.Results {
		if r.Tool == t.Name && r.Mode != "" && !slices.Contains(modes, string(r.Mode)) {
			modes = append(modes, string(r.Mode))
		}
	}
	switch {
	case len(modes) > 0:
		return strings.Join(modes, ", ")
	case t.Unscaled:
		return "unscaled (S=1)"
	}
	return "compressed"
}

func mismatchText(r Result) string {
	if r.Err != nil {
		return "error: " + r.Err.Error()
	}
	return fmt.Sprintf("expected %s, got %s (%s)", r.Expect, r.Verdict, r.Reason)
}

// WriteMarkdown writes the scorecard as a Markdown document.
func (s Scorecard) WriteMarkdown(w io.Writer) error {
	scen, tools := s.Axes()
	var b strings.Builder
	fmt.Fprintf(&b, "# incident-replay scorecard\n\n%d runs (%d scenarios x %d tools), %s, %s%s.\n\n",
		len(s.Results), len(scen), len(tools), s.Where, s.SpeedClause(), s.WallClause())
	b.WriteString("Cells: verdict and claim time (scenario time). **!** missed expectation; ~ ran in real time (S=1).\n\n")
	b.WriteString("| scenario | expect | " + strings.Join(tools, " | ") + " |\n|---|---|" + strings.Repeat("---|", len(tools)) + "\n")
	for _, sc := range scen {
		exp := s.expectOf(sc, tools)
		b.WriteString("| " + sc + " | " + exp + " |")
		for _, t := range tools {
			r, ok := s.cell(sc, t)
			txt := "-"
			if ok {
				txt = cellText(r)
				if !r.Pass() {
					txt = "**" + txt + "**"
				}
			}
			b.WriteString(" " + txt + " |")
		}
		b.WriteString("\n")
	}
	if mm := s.Mismatches(); len(mm) > 0 {
		b.WriteString("\n## Expected vs got\n\n")
		for _, r := range mm {
			fmt.Fprintf(&b, "- `%s` x `%s`: %s\n", r.Scenario, r.Tool, mismatchText(r))
		}
	}
	if us := s.Unstopped(); len(us) > 0 {
		fmt.Fprintf(&b, "\n## %s\n\n", unstoppedHead)
		for _, r := range us {
			fmt.Fprintf(&b, "- `%s` x `%s`: %v\n", r.Scenario, r.Tool, r.StopErr)
		}
	}
	if len(s.Tools) > 0 {
		b.WriteString("\n## Tools\n\n| tool | kind | time | must pass | what |\n|---|---|---|---|---|\n")
		for _, t := range s.Tools {
			fmt.Fprintf(&b, "| %s | %s | %s | %v | %s |\n", t.Name, t.Kind(), s.timeOf(t), t.MustPass, strings.ReplaceAll(t.Description, "|", "\\|"))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     float64      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
	SystemErr string        `xml:"system-err,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",chardata"`
}

// WriteJUnit writes one test suite per tool and one test case per scenario; a missed
// expectation is a failure, a pair that could not run an error.
func (s Scorecard) WriteJUnit(w io.Writer) error {
	_, tools := s.Axes()
	out := junitSuites{Time: s.Wall.Seconds()}
	for _, t := range tools {
		suite := junitSuite{Name: "incident-replay/" + t}
		for _, r := range s.Results {
			if r.Tool != t {
				continue
			}
			c := junitCase{Name: r.Scenario, Classname: t, Time: r.Wall.Seconds(),
				SystemOut: fmt.Sprintf("verdict %s at %s: %s\n%s", r.Verdict, FormatDuration(r.ClaimAfter()), r.Reason, r.Output)}
			if r.StopErr != nil {
				c.SystemErr = "server not stopped after the run: " + r.StopErr.Error()
			}
			switch {
			case r.Err != nil:
				c.Error = &junitMessage{Message: r.Err.Error(), Type: "error"}
				suite.Errors++
			case !r.Pass():
				c.Failure = &junitMessage{Message: mismatchText(r), Type: "verdict", Body: r.Reason}
				suite.Failures++
			}
			suite.Tests++
			suite.Time += r.Wall.Seconds()
			suite.Cases = append(suite.Cases, c)
		}
		out.Tests += suite.Tests
		out.Failures += suite.Failures
		out.Errors += suite.Errors
		out.Suites = append(out.Suites, suite)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// WriteFile writes one of the formats to path.
func WriteFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}
