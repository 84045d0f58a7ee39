package harness

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// DetectionLatency is how long after the event it reports a tool noticed it, in scenario
// time: for a ready claim, claim time - t_ready; for a failure claim on a server that died
// without ever being ready, claim time - t_dead (negative when a preflight predicted the
// death before it happened). ok is false when the run measured no detection: a harness
// error, no claim (killed at the limit), a ready claim on a server that never became ready
// or had already died, or a failure claim on a server that was ready or never died (giving
// up there is a miss or a timeout, not the detection of an event).
func DetectionLatency(r Result) (time.Duration, bool) {
	if r.Err != nil || r.Claim.At.IsZero() {
		return 0, false
	}
	tr, at := r.Truth, r.ClaimAfter()
	everReady := tr.EverReady()
	switch r.Claim.Outcome {
	case ClaimReady:
		if !everReady || (tr.Dead != nil && at >= *tr.Dead) {
			return 0, false
		}
		return at - *tr.Ready, true
	case ClaimFailed:
		if everReady || tr.Dead == nil {
			return 0, false
		}
		return at - *tr.Dead, true
	}
	return 0, false
}

// RatioFloor is the smallest baseline latency a ratio divides by. SGLang's /health takes a
// second to answer, so no probe detects ready faster; a baseline below it (a preflight that
// failed before the death, a log line seen at once) makes the ratio a lower bound, printed
// with "≥", instead of a division by ~0.
const RatioFloor = time.Second

// LatencyCell is one (scenario, tool) cell: the latencies of its runs that detected an event.
type LatencyCell struct {
	Event    Outcome         // the event the samples detected: ClaimReady (ready) or ClaimFailed (death)
	Samples  []time.Duration // meaningful latencies, in run order
	Missed   int             // runs that detected nothing (see DetectionLatency) or another event
	Ended    []time.Duration // when each missed run ended, from launch: how long a miss took
	Verdicts []Verdict       // every run's verdict, in run order
	Errors   int             // runs the harness could not complete
}

// Runs is how many runs the cell holds.
func (c LatencyCell) Runs() int { return len(c.Samples) + c.Missed + c.Errors }

// Median is the median latency of the detecting runs; ok is false when none detected.
func (c LatencyCell) Median() (time.Duration, bool) { return median(c.Samples) }

// median is the middle value (the mean of the two middle ones for an even count); ok is
// false for no values.
func median[T time.Duration | float64](vs []T) (m T, ok bool) {
	if len(vs) == 0 {
		return 0, false
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2, true
	}
	return s[len(s)/2], true
}

// LatencyTable aggregates detection latencies per scenario for several tools and compares
// each tool with a baseline tool (llmwait against the founding incidents' loops).
type LatencyTable struct {
	Baseline  string
	Tools     []string // the other columns, in order
	scenarios []string // row order: first seen
	cells     map[[2]string]*LatencyCell
}

// NewLatencyTable makes a table comparing tools with baseline.
func NewLatencyTable(baseline string, tools ...string) *LatencyTable {
	return &LatencyTable{Baseline: baseline, Tools: tools, cells: map[[2]string]*LatencyCell{}}
}

// Add records one run. Runs of tools the table does not show are ignored.
func (t *LatencyTable) Add(r Result) {
	if r.Tool != t.Baseline && !slices.Contains(t.Tools, r.Tool) {
		return
	}
	if !slices.Contains(t.scenarios, r.Scenario) {
		t.scenarios = append(t.scenarios, r.Scenario)
	}
	key := [2]string{r.Scenario, r.Tool}
	c := t.cells[key]
	if c == nil {
		c = &LatencyCell{}
		t.cells[key] = c
	}
	if r.Err != nil {
		c.Errors++
		return
	}
	c.Verdicts = append(c.Verdicts, r.Verdict)
	d, ok := DetectionLatency(r)
	// Runs of one cell that detected different events (ready once, the death another time)
	// cannot share a median: the first detection fixes the cell's event.
	if ok && len(c.Samples) > 0 && c.Event != r.Claim.Outcome {
		ok = false
	}
	if !ok {
		c.Missed++
		c.Ended = append(c.Ended, r.ClaimAfter())
		return
	}
	c.Event = r.Claim.Outcome
	c.Samples = append(c.Samples, d)
}

// Scenarios lists the table's rows in the order their first result was added.
func (t *LatencyTable) Scenarios() []string { return slices.Clone(t.scenarios) }

// Cell returns a (scenario, tool) cell.
func (t *LatencyTable) Cell(scenario, tool string) (LatencyCell, bool) {
	c, ok := t.cells[[2]string{scenario, tool}]
	if !ok {
		return LatencyCell{}, false
	}
	return *c, true
}

// Ratio is tool's median latency over the baseline's on scenario. atLeast marks a lower
// bound: the baseline was under RatioFloor, which is divided by instead. ok is false when
// either tool detected nothing there, or they detected different events.
func (t *LatencyTable) Ratio(scenario, tool string) (ratio float64, atLeast, ok bool) {
	bc, bok := t.Cell(scenario, t.Baseline)
	tc, tok := t.Cell(scenario, tool)
	if !bok || !tok {
		return 0, false, false
	}
	b, bok := bc.Median()
	d, tok := tc.Median()
	if !bok || !tok || bc.Event != tc.Event {
		return 0, false, false
	}
	if b < RatioFloor {
		b, atLeast = RatioFloor, true
	}
	// A tool that claimed before the event (a failure claim before t_dead) waited no time
	// for it: 0x, never a negative multiple.
	return float64(max(d, 0)) / float64(b), atLeast, true
}

// MedianRatio summarises tool against the baseline over every scenario where both detected
// the same event: the median ratio (a lower bound when any ratio is, since the median only
// grows with its inputs), how many scenarios it covers, and on how many the tool detected
// nothing while the baseline did.
func (t *LatencyTable) MedianRatio(tool string) (ratio float64, atLeast bool, n, never int) {
	var rs []float64
	for _, s := range t.scenarios {
		r, lb, ok := t.Ratio(s, tool)
		if ok {
			rs = append(rs, r)
			atLeast = atLeast || lb
			continue
		}
		bc, _ := t.Cell(s, t.Baseline)
		if _, bok := bc.Median(); bok {
			never++
		}
	}
	if len(rs) == 0 {
		return 0, false, 0, never
	}
	ratio, _ = median(rs)
	return ratio, atLeast, len(rs), never
}

// Write prints the table: one row per scenario with the event the baseline detected, its
// latency, and for each tool its latency and its ratio to the baseline; then one summary
// line per tool.
func (t *LatencyTable) Write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"SCENARIO", "EVENT", strings.ToUpper(t.Baseline)}
	for _, tool := range t.Tools {
		head = append(head, strings.ToUpper(tool), "RATIO")
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	for _, s := range t.scenarios {
		bc, _ := t.Cell(s, t.Baseline)
		row := []string{s, eventName(bc), latencyText(bc)}
		for _, tool := range t.Tools {
			tc, _ := t.Cell(s, tool)
			row = append(row, latencyText(tc), t.ratioText(s, tool, bc, tc))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, tool := range t.Tools {
		r, lb, n, never := t.MedianRatio(tool)
		line := fmt.Sprintf("%s vs %s: median ratio %s over %d scenario(s)", tool, t.Baseline, ratioString(r, lb), n)
		if n == 0 {
			line = fmt.Sprintf("%s vs %s: no scenario where both detected the same event", tool, t.Baseline)
		}
		if never > 0 {
			line += fmt.Sprintf("; detected nothing on %d where %s did", never, t.Baseline)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	return nil
}

func (t *LatencyTable) ratioText(s, tool string, bc, tc LatencyCell) string {
	if r, lb, ok := t.Ratio(s, tool); ok {
		return ratioString(r, lb)
	}
	_, bok := bc.Median()
	_, tok := tc.Median()
	switch {
	case bok && !tok:
		return "never"
	case bok && tok: // both detected, but different events
		return "n/a"
	}
	return "-"
}

func ratioString(r float64, atLeast bool) string {
	s := fmt.Sprintf("%.1fx", r)
	if r >= 100 {
		s = fmt.Sprintf("%.0fx", r)
	}
	if atLeast {
		return "≥" + s
	}
	return s
}

// eventName says what the cell's runs detected: "ready", "death", or "-".
func eventName(c LatencyCell) string {
	if len(c.Samples) == 0 {
		return "-"
	}
	if c.Event == ClaimReady {
		return "ready"
	}
	return "death"
}

// latencyText renders a cell: its median latency (with the verdict, so a late or slow
// detection reads as such), or the verdict alone when it detected nothing.
func latencyText(c LatencyCell) string {
	if c.Runs() == 0 {
		return "-"
	}
	var vs []string
	for _, v := range c.Verdicts {
		if !slices.Contains(vs, string(v)) {
			vs = append(vs, string(v))
		}
	}
	if c.Errors > 0 {
		vs = append(vs, "error")
	}
	verdict := strings.Join(vs, "/")
	m, ok := c.Median()
	if !ok {
		if e, ok := median(c.Ended); ok {
			return fmt.Sprintf("%s at %s", verdict, FormatDuration(e))
		}
		return verdict
	}
	s := fmt.Sprintf("%s (%s)", FormatDuration(m), verdict)
	if n := c.Runs(); n > 1 {
		s += fmt.Sprintf(" %d/%d", len(c.Samples), n)
	}
	if m >= 0 {
		s = "+" + s // negative: detected before the event (a preflight)
	}
	return s
}
