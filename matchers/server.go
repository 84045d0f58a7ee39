package matchers

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/gomega/gcustom"
	"github.com/onsi/gomega/types"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/sglang"
)

// message is what a failure says: "expected " + Want (or NotWant, negated) + "; " + Got. The
// match function fills Got, so the message tells the run the matcher last looked at.
type message struct {
	Want, NotWant, Got string
}

const failureTemplate = "expected {{if .NegatedFailure}}{{.Data.NotWant}}{{else}}{{.Data.Want}}{{end}}; {{.Data.Got}}"

func build(want, notWant string, match func(actual any, m *message) (bool, error)) types.GomegaMatcher {
	m := &message{Want: want, NotWant: notWant}
	g := gcustom.MakeMatcher(func(actual any) (bool, error) { return match(actual, m) }).WithTemplate(failureTemplate, m)
	return told{CustomGomegaMatcher: g, m: m}
}

// told renders the failure from what the match read, not from the actual value: gcustom
// formats the actual by reflection, and a live *fakeserver.Server's fields are being written
// by its goroutines meanwhile.
type told struct {
	gcustom.CustomGomegaMatcher
	m *message
}

func (t told) FailureMessage(any) string { return t.CustomGomegaMatcher.FailureMessage(t.m.Got) }

func (t told) NegatedFailureMessage(any) string {
	return t.CustomGomegaMatcher.NegatedFailureMessage(t.m.Got)
}

// onJournal builds a matcher over a server's journal.
func onJournal(want, notWant string, match func(recs []fakeserver.Record, f facts, m *message) bool) types.GomegaMatcher {
	return build(want, notWant, func(actual any, m *message) (bool, error) {
		recs, err := journalOf(actual)
		if err != nil {
			return false, err
		}
		f := factsOf(recs)
		m.Got = f.story()
		return match(recs, f, m), nil
	})
}

// BeBound succeeds once the server has bound its HTTP port.
func BeBound() types.GomegaMatcher {
	return onJournal("the port bound", "the port unbound", func(_ []fakeserver.Record, f facts, _ *message) bool {
		return f.bound != nil
	})
}

// BeReadyWithin succeeds when the server became ready (warmup done: a correct health probe
// passes) at most d after launch, scenario time.
func BeReadyWithin(d time.Duration) types.GomegaMatcher {
	return onJournal("ready within "+span(d), "not ready within "+span(d), func(_ []fakeserver.Record, f facts, _ *message) bool {
		return f.ready != nil && *f.ready <= d
	})
}

// HaveDiedWith succeeds when the server process exited with code (a wedge is not an exit;
// neither is a stop from outside).
func HaveDiedWith(code int) types.GomegaMatcher {
	c := strconv.Itoa(code)
	return onJournal("an exit with code "+c, "no exit with code "+c, func(_ []fakeserver.Record, f facts, _ *message) bool {
		return f.exited && f.code == code
	})
}

// HaveServed succeeds when the server answered a client's request for route with status (the
// server's own warmup requests do not count).
func HaveServed(route string, status int) types.GomegaMatcher {
	want := fmt.Sprintf("%s to have answered %d", route, status)
	notWant := fmt.Sprintf("%s never to answer %d", route, status)
	return onJournal(want, notWant, func(recs []fakeserver.Record, f facts, m *message) bool {
		counts := map[string]int{}
		first := map[string]time.Duration{}
		others := map[string]int{}
		for _, r := range recs {
			if r.Type != fakeserver.RecRequest || r.Internal {
				continue
			}
			if r.Route != route {
				others[r.Route]++
				continue
			}
			k := answer(r)
			if _, ok := first[k]; !ok {
				first[k] = r.At
			}
			counts[k]++
		}
		m.Got = served(route, counts, first, others) + "; " + f.story()
		return counts[strconv.Itoa(status)] > 0
	})
}

// answer is how a request ended: its status, or "reset"/"abandoned" when it got none.
func answer(r fakeserver.Record) string {
	if r.Outcome != "" {
		return r.Outcome
	}
	return strconv.Itoa(r.Status)
}

// served summarises a route's answers: "/health answered 503 x12 (first at 10m32s), 200 x3
// (first at 10m33s)", or which routes clients asked for when none reached it.
func served(route string, counts map[string]int, first map[string]time.Duration, others map[string]int) string {
	if len(counts) == 0 {
		if len(others) == 0 {
			return "no client request reached the server"
		}
		var seen []string
		for _, r := range slices.Sorted(maps.Keys(others)) {
			seen = append(seen, fmt.Sprintf("%s x%d", r, others[r]))
		}
		return "no client asked for " + route + " (requests: " + strings.Join(seen, ", ") + ")"
	}
	keys := slices.SortedFunc(maps.Keys(counts), func(a, b string) int { return int(first[a] - first[b]) })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s x%d (first at %s)", k, counts[k], at(first[k])))
	}
	return route + " answered " + strings.Join(parts, ", ")
}

// HaveLogged succeeds when the server printed a line of kind (sglang.KindReady,
// sglang.KindCUDAOOM, ...).
func HaveLogged(kind sglang.Kind) types.GomegaMatcher {
	name := kind.String()
	return onJournal("a "+name+" line in the log", "no "+name+" line in the log", func(recs []fakeserver.Record, f facts, m *message) bool {
		lines := 0
		var last []string
		for _, r := range recs {
			if r.Type != fakeserver.RecLog {
				continue
			}
			if r.Kind == name {
				m.Got = fmt.Sprintf("at %s it printed %q; %s", at(r.At), r.Line, f.story())
				return true
			}
			lines++
			if len(last) == 0 || last[len(last)-1] != r.Kind {
				last = append(last, r.Kind)
			}
		}
		if len(last) > 5 {
			last = last[len(last)-5:]
		}
		m.Got = fmt.Sprintf("no %s line among %d logged", name, lines)
		if len(last) > 0 {
			m.Got += " (the last kinds: " + strings.Join(last, ", ") + ")"
		}
		m.Got += "; " + f.story()
		return false
	})
}
