// Package harness scores readiness and launch tools against replayed SGLang incidents: tools
// under test (command templates and Go wait functions), time compression, verdicts from the
// fake server's ground truth, the scenario x tool matrix and its scorecard.
package harness

import (
	"fmt"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/truth"
)

// Verdict is the scenario package's verdict class, so a scenario's expect block and a run's
// result compare directly.
type Verdict = scenarios.Verdict

// Verdict classes.
const (
	ReadyOK     = scenarios.ReadyOK
	ReadyLate   = scenarios.ReadyLate
	FalseReady  = scenarios.FalseReady
	MissedReady = scenarios.MissedReady
	FailedFast  = scenarios.FailedFast
	FailedSlow  = scenarios.FailedSlow
	GaveUp      = scenarios.GaveUp
	Hung        = scenarios.Hung
)

// Definition is one verdict class as the scorecard legend, the README and `score --help`
// state it.
type Definition struct {
	Verdict Verdict
	Cell    string // the scorecard's short form
	Meaning string
}

// Definitions lists every verdict class with the rule Classify applies, best to worst.
func Definitions() []Definition {
	defs := []Definition{
		{ReadyOK, "", "claimed ready at or after t_ready, within the slack (the tool's interval + the health latency + 10 s)"},
		{ReadyLate, "", "claimed ready at or after t_ready, later than the slack"},
		{FalseReady, "", "claimed ready before t_ready, after the server died, or on a server that never became ready"},
		{MissedReady, "", "gave up (failure or timeout) on a server that became ready"},
		{FailedFast, "", "reported the failure of a server that died, after its first fatal log line and within the fast window after t_dead (interval + 10 s), or refused it in preflight"},
		{FailedSlow, "", "reported failure later than the fast window after t_dead, or timed out on a server that never became ready and never died"},
		{GaveUp, "", "exited without claiming ready before the server's fate was known: before t_dead and its first fatal log line, server not ready (not a preflight refusal)"},
		{Hung, "", "did not return before the harness limit and was killed"},
	}
	for i := range defs {
		defs[i].Cell = ShortVerdict(defs[i].Verdict)
	}
	return defs
}

// Outcome is how a tool run ended.
type Outcome uint8

const (
	// NoClaim: the tool did not return before the harness limit and was killed.
	NoClaim Outcome = iota
	// ClaimReady: the tool said the server is ready.
	ClaimReady
	// ClaimFailed: the tool returned without saying ready (a non-zero exit, a timeout, or a
	// loop that fell through without printing its ready line).
	ClaimFailed
)

func (o Outcome) String() string {
	switch o {
	case ClaimReady:
		return "ready"
	case ClaimFailed:
		return "failed"
	}
	return "none"
}

// Claim is what the tool concluded and when (scenario time).
type Claim struct {
	Outcome  Outcome
	At       time.Time
	ExitCode int    // shell tools: exit status (-1 when killed)
	Detail   string // the tool's last words: a printed line or an error
	// Preflight marks a failure claimed by refusing the launch in preflight (llmwait's exit
	// 4, ErrPreflight): a prediction of the death, so it may come before t_dead.
	Preflight bool
}

// Policy sets the tolerances a verdict is judged with. Both are scenario durations.
type Policy struct {
	// Slack is how long after t_ready a ready claim still counts as on time: the tool's probe
	// interval plus the health latency plus process overhead.
	Slack time.Duration
	// FastWindow is how long after t_dead a failure still counts as fast.
	FastWindow time.Duration
	// FatalLine is the offset of the server's first fatal log line (nil: none): from it the
	// server's fate is known, so a failure claimed after it, even before t_dead, detected it.
	FatalLine *time.Duration
}

// DefaultGrace covers SGLang's own jitter on top of a tool's interval and health latency.
const DefaultGrace = 10 * time.Second

// PolicyFor derives tolerances from a tool's probe interval, the server's health latency (a
// probe that starts the instant the server is ready still takes that long), the speed and the
// launcher's wall overhead: wall time lost between a server event and the claim being
// observed (process start-up under faketime, Docker's state and proxy). At speed S that is
// worth S times as much scenario time, so tolerances grow with S and a verdict does not
// change with compression.
func PolicyFor(interval, healthLatency time.Duration, speed float64, overhead time.Duration) Policy {
	grace := DefaultGrace + time.Duration(float64(overhead)*max(speed, 1))
	return Policy{Slack: interval + healthLatency + grace, FastWindow: interval + grace}
}

// Classify judges a claim against the truth; start is the scenario epoch the truth's offsets
// count from. The reason is the rule that decided, as a sentence with this claim's times
// (Definitions states each rule in general).
func Classify(tr truth.Truth, start time.Time, c Claim, p Policy) (Verdict, string) {
	if c.Outcome == NoClaim {
		return Hung, "did not return before the harness limit (" + FormatDuration(c.At.Sub(start)) + ") and was killed"
	}
	at := c.At.Sub(start)
	if c.Outcome == ClaimReady {
		return classifyReady(tr, at, p)
	}
	return classifyFailed(tr, at, c, p)
}

func classifyReady(tr truth.Truth, at time.Duration, p Policy) (Verdict, string) {
	f := FormatDuration
	switch {
	case !tr.EverReady():
		return FalseReady, "claimed ready at " + f(at) + "; the server never became ready"
	case at < *tr.Ready:
		return FalseReady, fmt.Sprintf("claimed ready at %s, %s before t_ready %s", f(at), f(*tr.Ready-at), f(*tr.Ready))
	case tr.Dead != nil && at >= *tr.Dead:
		return FalseReady, "claimed ready at " + f(at) + " after the server died at " + f(*tr.Dead)
	case at-*tr.Ready <= p.Slack:
		return ReadyOK, fmt.Sprintf("claimed ready at %s, %s after t_ready %s (slack %s)", f(at), f(at-*tr.Ready), f(*tr.Ready), f(p.Slack))
	default:
		return ReadyLate, fmt.Sprintf("claimed ready at %s, %s after t_ready %s (slack %s)", f(at), f(at-*tr.Ready), f(*tr.Ready), f(p.Slack))
	}
}

func classifyFailed(tr truth.Truth, at time.Duration, c Claim, p Policy) (Verdict, string) {
	f := FormatDuration
	switch {
	case tr.EverReady():
		if at < *tr.Ready {
			return MissedReady, fmt.Sprintf("gave up at %s; the server was ready at %s", f(at), f(*tr.Ready))
		}
		return MissedReady, fmt.Sprintf("gave up at %s although the server had been ready since %s", f(at), f(*tr.Ready))
	case tr.Dead == nil:
		// Never ready, never dead (stuck in warmup): the only way out is the tool's own timeout.
		return FailedSlow, "gave up at " + f(at) + " on a server that never became ready"
	case at < *tr.Dead && c.Preflight:
		return FailedFast, fmt.Sprintf("refused the launch in preflight at %s; the server died at %s", f(at), f(*tr.Dead))
	case at < *tr.Dead && (p.FatalLine == nil || at < *p.FatalLine):
		// Right by accident: its retries or timeout ran out first.
		return GaveUp, fmt.Sprintf("gave up at %s, %s before the server died at %s%s (it could not have known)", f(at), f(*tr.Dead-at), f(*tr.Dead), fatalClause(p))
	case at < *tr.Dead:
		return FailedFast, fmt.Sprintf("failed at %s, after the server's first fatal log line at %s; it died at %s", f(at), f(*p.FatalLine), f(*tr.Dead))
	case at-*tr.Dead <= p.FastWindow:
		return FailedFast, fmt.Sprintf("failed at %s, %s after the server died at %s (fast window %s)", f(at), f(at-*tr.Dead), f(*tr.Dead), f(p.FastWindow))
	default:
		return FailedSlow, fmt.Sprintf("failed at %s, %s after the server died at %s (fast window %s)", f(at), f(at-*tr.Dead), f(*tr.Dead), f(p.FastWindow))
	}
}

func fatalClause(p Policy) string {
	if p.FatalLine == nil {
		return ""
	}
	return " and logged its first fatal line at " + FormatDuration(*p.FatalLine)
}

// FormatDuration prints a scenario duration as the scorecard and the report do: 1.2s, 95s,
// 11m00s.
func FormatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < 10*time.Second:
		s = fmt.Sprintf("%.1fs", d.Seconds())
	case d < 2*time.Minute:
		s = fmt.Sprintf("%ds", int(d.Round(time.Second).Seconds()))
	default:
		d = d.Round(time.Second)
		s = fmt.Sprintf("%dm%02ds", int(d/time.Minute), int((d%time.Minute)/time.Second))
	}
	if neg {
		return "-" + s
	}
	return s
}
