// Package report draws what happened in a run: the server's phases, every request the tool
// made, the ground-truth markers and the tool's claim on one scenario-time axis, as SVG, and
// bundles a scorecard's pictures into a self-contained HTML page and a Markdown report.
package report

import (
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/truth"
)

// Phase is a server phase a band shows.
type Phase string

// Phases, in the order a healthy start passes them. Init covers everything between the
// named phases (process start, distributed init, KV pool, post-capture set-up).
const (
	PhaseInit      Phase = "init"
	PhaseLoad      Phase = "loading"
	PhaseCapture   Phase = "capture"
	PhaseHiCache   Phase = "HiCache"
	PhaseStarting  Phase = "Starting"
	PhaseReady     Phase = "ready"
	PhaseUnhealthy Phase = "unhealthy"
	PhaseWedged    Phase = "wedged"
	PhaseDead      Phase = "dead"
)

// Phases lists every phase in legend order.
func Phases() []Phase {
	return []Phase{PhaseInit, PhaseLoad, PhaseCapture, PhaseHiCache, PhaseStarting, PhaseReady, PhaseUnhealthy, PhaseWedged, PhaseDead}
}

// Band is one phase over [From, To) in scenario time since launch.
type Band struct {
	Phase    Phase
	From, To time.Duration
}

// ProbeClass groups a request by what the tool got back.
type ProbeClass uint8

// Probe classes, one row each in the picture.
const (
	Probe2xx     ProbeClass = iota // answered 2xx
	Probe3xx4xx                    // redirect or client error (auth, wrong route)
	Probe5xx                       // 503 Starting/UnHealthy and other server errors
	ProbeNoReply                   // reset or abandoned before a response
	numProbeClasses
)

var probeClassNames = [numProbeClasses]string{"2xx", "3xx/4xx", "5xx", "no reply"}

func (c ProbeClass) String() string { return probeClassNames[c] }

// Probe is one request the tool made, as the server's journal recorded it.
type Probe struct {
	At      time.Duration
	Latency time.Duration
	Route   string
	Status  int
	Class   ProbeClass
}

// Mark is a ground-truth event: bound, ready or dead.
type Mark struct {
	Name  string // "bound", "ready", "dead"
	At    time.Duration
	Label string // text drawn beside the marker
	// Predicted: the run ended before the event fell due, so the time is the scenario's
	// stated truth rather than the journal's.
	Predicted bool
}

// Timeline is one run reduced to what its picture shows. Times are scenario offsets from
// launch.
type Timeline struct {
	Scenario, Tool string
	Speed          float64
	Unscaled       bool
	Wall           time.Duration

	Bands  []Band
	Probes []Probe
	Marks  []Mark
	// Stopped is when the harness stopped the server (the tool had returned); 0 when the
	// journal does not say. Nothing after it was replayed.
	Stopped time.Duration

	Claim    harness.Outcome
	ClaimAt  time.Duration
	Verdict  harness.Verdict
	Expect   harness.Verdict
	Reason   string
	Err      error
	Ignored  int // 2xx health answers after t_ready that the tool did not act on
	Duration time.Duration
}

// healthRoutes answer readiness probes; 2xx on them after t_ready is a ready server speaking.
var healthRoutes = map[string]bool{"/health": true, "/health_generate": true, "/v1/models": true, "/get_model_info": true, "/model_info": true, "/ping": true}

// NewTimeline builds the picture data of one run from its result and the server's journal
// (fakeserver records, offsets from the scenario start).
func NewTimeline(r harness.Result, journal []fakeserver.Record) Timeline {
	t := Timeline{
		Scenario: r.Scenario, Tool: r.Tool, Speed: r.Speed, Unscaled: r.Unscaled, Wall: r.Wall,
		Claim: r.Claim.Outcome, Verdict: r.Verdict, Expect: r.Expect, Reason: r.Reason, Err: r.Err,
	}
	t.Bands, t.Stopped = bands(journal)
	for _, rec := range journal {
		if rec.Type != fakeserver.RecRequest || rec.Internal {
			continue
		}
		t.Probes = append(t.Probes, Probe{At: rec.At, Latency: rec.Latency, Route: rec.Route, Status: rec.Status, Class: classify(rec)})
	}
	t.Marks = marks(r.Truth, fakeserver.GroundTruth(journal))
	if !r.Claim.At.IsZero() && !r.Start.IsZero() {
		t.ClaimAt = r.Claim.At.Sub(r.Start)
	} else if r.Claim.Outcome == harness.NoClaim && r.Err == nil {
		t.ClaimAt = r.Limit
	}
	if r.Truth.Ready != nil && (r.Claim.Outcome != harness.ClaimReady || r.Verdict == harness.ReadyLate) {
		ready := *r.Truth.Ready
		for _, p := range t.Probes {
			if p.Class == Probe2xx && healthRoutes[p.Route] && p.At >= ready && (t.ClaimAt == 0 || p.At <= t.ClaimAt) {
				t.Ignored++
			}
		}
	}
	// The harness stops the server only after the tool returns; a journal that ends earlier
	// (a wedged server writes nothing more) still had the server in its last phase until then.
	if n := len(t.Bands); n > 0 && t.Stopped == 0 && t.Bands[n-1].Phase != PhaseDead {
		t.Bands[n-1].To = max(t.Bands[n-1].To, t.ClaimAt)
	}
	end := max(t.ClaimAt, t.Stopped)
	for _, b := range t.Bands {
		end = max(end, b.To)
	}
	for _, m := range t.Marks {
		end = max(end, m.At)
	}
	for _, p := range t.Probes {
		end = max(end, p.At+p.Latency)
	}
	t.Duration = end
	if n := len(t.Bands); n > 0 && t.Bands[n-1].Phase == PhaseDead {
		t.Bands[n-1].To = end // dead stays dead to the end of the picture
	}
	return t
}

func classify(rec fakeserver.Record) ProbeClass {
	switch {
	case rec.Outcome != "" || rec.Status == 0:
		return ProbeNoReply
	case rec.Status < 300:
		return Probe2xx
	case rec.Status < 500:
		return Probe3xx4xx
	}
	return Probe5xx
}

// logPhase maps the sglang log kinds that open a start-up phase. Every rank prints them, so
// only the first occurrence of a kind counts.
var logPhase = map[string]Phase{
	"load_begin":    PhaseLoad,
	"load_end":      PhaseInit,
	"cg_begin":      PhaseCapture,
	"cg_end":        PhaseInit,
	"hicache_alloc": PhaseHiCache,
}

// bands walks the journal in order: log lines drive the start-up phases until the port is
// bound; from then on the server's state changes do (a late log line must not paint over
// Starting or ready).
func bands(journal []fakeserver.Record) ([]Band, time.Duration) {
	var (
		out     []Band
		cur     = PhaseInit
		from    time.Duration
		seen    = map[string]bool{}
		bound   bool
		ready   bool
		stopped time.Duration
		last    time.Duration
	)
	move := func(p Phase, at time.Duration) {
		if p == cur || cur == PhaseDead {
			return
		}
		if at > from {
			out = append(out, Band{Phase: cur, From: from, To: at})
		}
		cur, from = p, max(from, at)
	}
	for _, rec := range journal {
		last = max(last, rec.At)
		switch rec.Type {
		case fakeserver.RecLog:
			if p, ok := logPhase[rec.Kind]; ok && !bound && !seen[rec.Kind] {
				seen[rec.Kind] = true
				move(p, rec.At)
			}
		case fakeserver.RecState:
			switch rec.State {
			case fakeserver.StateBound:
				bound = true
				if !ready {
					move(PhaseStarting, rec.At)
				}
			case fakeserver.StateReady, fakeserver.StateHealthy:
				ready = true
				move(PhaseReady, rec.At)
			case fakeserver.StateUnhealthy:
				move(PhaseUnhealthy, rec.At)
			case fakeserver.StateWedged, fakeserver.StateSchedulerWedged:
				move(PhaseWedged, rec.At)
			case fakeserver.StateUnwedged, fakeserver.StateSchedulerResume:
				if ready {
					move(PhaseReady, rec.At)
				} else if bound {
					move(PhaseStarting, rec.At)
				} else {
					move(PhaseInit, rec.At)
				}
			case fakeserver.StateSchedulerDead, fakeserver.StateDead, fakeserver.StateBindFailed:
				move(PhaseDead, rec.At)
			case fakeserver.StateStopped:
				stopped = rec.At
			}
		}
	}
	end := last
	if stopped > 0 {
		end = stopped
	}
	// The last phase is kept even when it is the journal's last word (a death, a wedge that
	// silenced the server); NewTimeline extends it to the end of the run.
	if len(journal) > 0 {
		out = append(out, Band{Phase: cur, From: from, To: max(end, from)})
	}
	return out, stopped
}

// marks places the ground truth the verdict was judged by; an event the journal lacks but
// the truth has was filled in from the scenario (the run ended first).
func marks(tr, g truth.Truth) []Mark {
	var out []Mark
	add := func(name string, at *time.Duration, inJournal bool, suffix string) {
		if at == nil {
			return
		}
		m := Mark{Name: name, At: *at, Predicted: !inJournal}
		m.Label = name + " " + harness.FormatDuration(m.At) + suffix
		if m.Predicted {
			m.Label += " (predicted)"
		}
		out = append(out, m)
	}
	add("bound", tr.Bound, g.Bound != nil, "")
	add("ready", tr.Ready, g.Ready != nil, "")
	dead := ", wedged"
	if tr.ExitCode != nil {
		dead = ", exit " + strconv.Itoa(*tr.ExitCode)
	}
	add("dead", tr.Dead, g.Dead != nil, dead)
	return out
}
