package fault

import (
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/truth"
)

// Fault is one kind's behaviour. Every kind predicts its effect on the ground truth; its live
// effect is whichever of the optional interfaces below it implements, and the fake server asks
// every fault of a run for each of them.
type Fault interface {
	// Predict folds the fault, triggered at offset at, into the truth a compiled timeline
	// implies (f.Truth holds what the timeline alone implies).
	Predict(s Spec, at time.Duration, f *Forecast)
}

// Forecast is what prediction lends a fault.
type Forecast struct {
	Truth *truth.Truth
	// HealthHeld is set by a fault that keeps /health from ever answering 200: the server
	// never reports ready, whatever its warmup does.
	HealthHeld bool
	// TeardownOnChildCrash: this SGLang version ends the process when its scheduler dies.
	TeardownOnChildCrash bool
	// WarmupBroken is set by a fault that keeps warmup from ever finishing.
	WarmupBroken bool
}

// Checker is a kind with rules beyond which fields it accepts and needs.
type Checker interface {
	Check(Spec) error
}

// Live is one fault during a run: its spec and behaviour, whether and when it triggered, and
// how many requests or streams it has hit. The fake server's lock guards it.
type Live struct {
	Spec
	Fault   Fault
	Armed   bool
	Trigger time.Duration
	Hits    int
}

// NewLive prepares s for a run; s must have passed Validate.
func NewLive(s Spec) *Live {
	d, _ := Lookup(s.Kind)
	return &Live{Spec: s, Fault: d.Fault}
}

// ActiveAt reports whether the fault is in force at offset at.
func (l *Live) ActiveAt(at time.Duration) bool {
	return l.Armed && l.Active(l.Trigger, at)
}

// Take counts one hit on a request (or stream) to path when the fault is in force at at,
// its route matches (an empty route matches every path) and it has hits left (count 0: no
// limit).
func (l *Live) Take(at time.Duration, path string) bool {
	if !l.ActiveAt(at) || (l.Route != "" && l.Route != path) || (l.Count > 0 && l.Hits >= l.Count) {
		return false
	}
	l.Hits++
	return true
}

// Server is what a fault's live effect may do to the fake server. Every method is called, and
// every After callback runs, with the server's lock held; offsets are scenario time.
type Server interface {
	// After runs f on the run's loop at offset at.
	After(at time.Duration, f func(at time.Duration))
	// Log prints one log line at offset at.
	Log(at time.Duration, stream replay.Stream, ev sglang.Event)
	// Stamp is the scenario time of offset at, for log line headers.
	Stamp(at time.Duration) time.Time
	// SchedulerRanks is the rank prefix of the scheduler's (TP0) lines.
	SchedulerRanks() []sglang.Rank
	// Bound reports whether the HTTP port is bound; Dead whether the process has exited.
	Bound() bool
	Dead() bool
	// Exit ends the process with code; cause names the fault in the journal.
	Exit(at time.Duration, code int, cause Kind)
	// Wedge stops the whole server answering, Unwedge ends that.
	Wedge(at time.Duration)
	Unwedge(at time.Duration)
	// WedgeScheduler hangs generation, ResumeScheduler ends that.
	WedgeScheduler(at time.Duration)
	ResumeScheduler(at time.Duration)
	// SchedulerDead kills the scheduler process; the version decides whether the server
	// follows it down.
	SchedulerDead(at time.Duration)
}

// Armer is a fault with a process-level effect, applied when it triggers.
type Armer interface {
	Arm(l *Live, srv Server)
}

// Answer is how a fault answers a request in place of the server.
type Answer struct {
	Status  int    // HTTP status of an error answer
	Message string // the error body's message
	Drop    bool   // close the connection without an answer instead
	// Location is the Location header of a redirect answer, "" for none.
	Location string
}

// Answerer is a fault that answers some requests itself, before any handler runs.
type Answerer interface {
	Answer(l *Live, at time.Duration, path string) (Answer, bool)
}

// HealthHolder is a fault that can keep /health from ever answering 200.
type HealthHolder interface {
	HoldsHealth(Spec) bool
}

// HoldsHealth reports whether s keeps /health from ever answering 200 for the whole run: such
// a server never reports ready, whatever its warmup does.
func HoldsHealth(s Spec) bool {
	d, ok := Lookup(s.Kind)
	if !ok {
		return false
	}
	h, ok := d.Fault.(HealthHolder)
	return ok && h.HoldsHealth(s)
}

// SeenTruth is t, a server's own ground truth, as a client sees it through faults: a fault
// that holds /health for the whole run means the server is never seen ready.
func SeenTruth(t truth.Truth, faults []Spec) truth.Truth {
	for _, f := range faults {
		if HoldsHealth(f) {
			t.Ready = nil
		}
	}
	return t
}

// HealthDelayer is a fault that slows health checks to path.
type HealthDelayer interface {
	HealthDelay(l *Live, at time.Duration, path string) time.Duration
}

// HealthDowner is a fault that holds health checks down at some instants.
type HealthDowner interface {
	HealthDown(l *Live, at time.Duration) bool
}

// StreamResetter is a fault that cuts a new stream on path after some chunks.
type StreamResetter interface {
	ResetAfter(l *Live, at time.Duration, path string) (chunks int, ok bool)
}

// PortHolder is a fault that puts another process on the port before the server binds it:
// one that answers every request with HolderStatus, or (0) accepts and closes.
type PortHolder interface {
	HolderStatus(s Spec) int
}

// HoldsPort reports whether one of specs puts another process on the port before the server
// binds it.
func HoldsPort(specs []Spec) bool {
	for _, s := range specs {
		if d, ok := Lookup(s.Kind); ok {
			if _, ok := d.Fault.(PortHolder); ok {
				return true
			}
		}
	}
	return false
}

// WarmupTaker is a fault that takes over the server's warmup once the port is bound.
type WarmupTaker interface {
	TakeWarmup(s Spec, srv Server, at time.Duration)
}

// start is the offset the fault takes effect: At after its trigger.
func (l *Live) start() time.Duration { return l.Trigger + l.At }

// armWindow runs begin when l takes effect and, when for bounds it, end for lasting faults.
func armWindow(l *Live, srv Server, begin, end func(time.Duration)) {
	srv.After(l.start(), begin)
	if l.For > 0 {
		srv.After(l.start()+l.For, end)
	}
}

// predictLastingWedge: a wedge with no end (for 0) is a death as a tool sees it.
func predictLastingWedge(s Spec, at time.Duration, f *Forecast) {
	if s.For == 0 {
		f.Truth.Wedge(at)
	}
}
