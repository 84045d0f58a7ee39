// Package matchers holds Gomega matchers for the fake SGLang server and for scored runs, so a
// Go suite asserts in the incident's own terms:
//
//	Expect(server).To(matchers.BeReadyWithin(11 * time.Minute))
//	Expect(result).To(matchers.HaveVerdict(harness.ReadyOK))
//
// Server matchers take a fakeserver.Target (the in-process *fakeserver.Server or the
// *fakeserver.Container), its journal ([]fakeserver.Record) or a harness.Result, and judge the
// journal as it stands when they run: on a live server wrap them in Eventually. Their failure
// messages tell the run as the journal saw it ("expected ready within 2m; port bound at
// 10m32s, /health 200 from 10m33s").
package matchers

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/truth"
)

// journalTimeout bounds reading a Target's journal (a container's is copied out of Docker).
const journalTimeout = 30 * time.Second

// journalOf reads the journal behind a matcher's actual value.
func journalOf(actual any) ([]fakeserver.Record, error) {
	switch a := actual.(type) {
	case []fakeserver.Record:
		return a, nil
	case harness.Result:
		return a.Journal, nil
	case *harness.Result:
		if a == nil {
			return nil, fmt.Errorf("matchers: got a nil *harness.Result")
		}
		return a.Journal, nil
	case fakeserver.Target:
		ctx, cancel := context.WithTimeout(context.Background(), journalTimeout)
		defer cancel()
		recs, err := a.Journal(ctx)
		if err != nil {
			return nil, fmt.Errorf("matchers: read the server's journal: %w", err)
		}
		return recs, nil
	}
	return nil, fmt.Errorf("matchers: want a fakeserver.Target, a []fakeserver.Record or a harness.Result, got %T", actual)
}

// facts are a run's events as offsets from launch; nil means "did not happen".
type facts struct {
	bound, bindFailed, ready, dead, stopped *time.Duration
	exited                                  bool
	code                                    int
	end                                     time.Duration // the last record's offset
}

func ptr(d time.Duration) *time.Duration { return &d }

// factsOf reads the facts from a journal, by the rules the harness scores with.
func factsOf(recs []fakeserver.Record) facts {
	f := factsOfTruth(fakeserver.GroundTruth(recs))
	for _, r := range recs {
		f.end = max(f.end, r.At)
		if r.Type != fakeserver.RecState {
			continue
		}
		switch {
		case r.State == fakeserver.StateBindFailed && f.bindFailed == nil:
			f.bindFailed = ptr(r.At)
		case r.State == fakeserver.StateStopped && f.stopped == nil:
			f.stopped = ptr(r.At)
		}
	}
	return f
}

// factsOfTruth reads the facts of a truth (a scored run's includes predicted events).
func factsOfTruth(t truth.Truth) facts {
	f := facts{bound: t.Bound, ready: t.Ready, dead: t.Dead, exited: t.Exited()}
	if t.ExitCode != nil {
		f.code = *t.ExitCode
	}
	return f
}

// story tells the run in a few clauses: "port bound at 10m32s, /health 200 from 10m33s,
// exited with code 1 at 11m02s".
func (f facts) story() string {
	var parts []string
	switch {
	case f.bound != nil:
		parts = append(parts, "port bound at "+at(*f.bound))
	case f.bindFailed != nil:
		parts = append(parts, "port bind failed at "+at(*f.bindFailed)+" (address in use)")
	default:
		parts = append(parts, "port never bound")
	}
	switch {
	case f.ready != nil:
		parts = append(parts, "/health 200 from "+at(*f.ready))
	case f.bound != nil:
		parts = append(parts, "never ready")
	}
	switch {
	case f.exited && f.dead != nil:
		parts = append(parts, fmt.Sprintf("exited with code %d at %s", f.code, at(*f.dead)))
	case f.dead != nil:
		parts = append(parts, "wedged at "+at(*f.dead))
	case f.stopped != nil:
		parts = append(parts, "stopped from outside at "+at(*f.stopped))
	case f.end > 0:
		parts = append(parts, "still running at "+at(f.end))
	}
	return strings.Join(parts, ", ")
}

// at prints a scenario offset as the scorecard does (10m32s, 95s, 1.2s).
func at(d time.Duration) string { return harness.FormatDuration(d) }

// span prints a duration a user wrote as they would write it: 2m, 11m30s, 90s.
func span(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
