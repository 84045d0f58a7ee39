package matchers

import (
	"fmt"
	"time"

	"github.com/onsi/gomega/types"

	"github.com/incident-replay/incident-replay/harness"
)

// resultOf reads a scored run; a run the harness could not score is an error, whichever way
// the matcher is used.
func resultOf(actual any) (harness.Result, error) {
	var r harness.Result
	switch a := actual.(type) {
	case harness.Result:
		r = a
	case *harness.Result:
		if a == nil {
			return r, fmt.Errorf("matchers: got a nil *harness.Result")
		}
		r = *a
	default:
		return r, fmt.Errorf("matchers: want a harness.Result (from harness.Runner.Run), got %T", actual)
	}
	if r.Err != nil {
		return r, fmt.Errorf("matchers: %s on %s was not scored: %w", r.Tool, r.Scenario, r.Err)
	}
	return r, nil
}

// onResult builds a matcher over a scored run.
func onResult(want, notWant string, match func(r harness.Result, m *message) bool) types.GomegaMatcher {
	return build(want, notWant, func(actual any, m *message) (bool, error) {
		r, err := resultOf(actual)
		if err != nil {
			return false, err
		}
		return match(r, m), nil
	})
}

// HaveVerdict succeeds when the run was judged v (harness.ReadyOK, harness.FailedFast, ...).
func HaveVerdict(v harness.Verdict) types.GomegaMatcher {
	return onResult(string(v), "a verdict other than "+string(v), func(r harness.Result, m *message) bool {
		m.Got = fmt.Sprintf("%s on %s was %s: %s (server: %s)", r.Tool, r.Scenario, r.Verdict, r.Reason, factsOfTruth(r.Truth).story())
		return r.Verdict == v
	})
}

// ClaimWithin succeeds when the tool came to a conclusion, ready or failed, at most d after
// launch (scenario time); a tool killed at the harness limit made no claim.
func ClaimWithin(d time.Duration) types.GomegaMatcher {
	return onResult("a claim within "+span(d), "no claim within "+span(d), func(r harness.Result, m *message) bool {
		story := factsOfTruth(r.Truth).story()
		if r.Claim.Outcome == harness.NoClaim {
			m.Got = fmt.Sprintf("%s made no claim: killed at the harness limit %s (server: %s)", r.Tool, span(r.Limit), story)
			return false
		}
		m.Got = fmt.Sprintf("%s claimed %s at %s (server: %s)", r.Tool, r.Claim.Outcome, at(r.ClaimAfter()), story)
		return r.ClaimAfter() <= d
	})
}
