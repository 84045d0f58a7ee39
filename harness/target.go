package harness

import (
	"context"
	"sync"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/truth"
)

// Case is one scenario ready to run: the parsed file, its compiled timeline and what a correct
// tool must conclude.
type Case struct {
	Name     string
	Scenario *scenarios.Scenario
	Compiled *scenarios.Compiled
	Timeline replay.Timeline
	// Expect is the verdict a correct readiness tool reaches (the scenario's expect block).
	Expect Verdict
	// Predicted is the scenario's stated ground truth (offsets in the expect block). A run
	// that ends before an event falls due takes that event from here.
	Predicted truth.Truth
}

// Horizon is the scenario time by which everything the scenario scripts has happened.
func (c Case) Horizon() time.Duration {
	h := c.Timeline.Duration()
	for _, t := range []*time.Duration{c.Predicted.Bound, c.Predicted.Ready, c.Predicted.Dead} {
		if t != nil && *t > h {
			h = *t
		}
	}
	return h
}

// HealthLatency is how long a passing health check takes on this case's server (SGLang
// sleeps 1 s before answering; some scenarios model 25 s under load).
func (c Case) HealthLatency() time.Duration {
	if c.Compiled != nil && c.Compiled.Behavior.HealthLatency > 0 {
		return c.Compiled.Behavior.HealthLatency.D()
	}
	return time.Second
}

// SlowestAnswer is the longest a health probe of this case's server may wait: a slow_health
// fault's latency, or the health timeout of a server that died but keeps its port (zombie,
// wedge: Predicted.Dead without an exit).
func (c Case) SlowestAnswer() time.Duration {
	lat := c.HealthLatency()
	if c.Scenario != nil {
		for _, f := range c.Scenario.Faults {
			if f.Kind == fault.SlowHealth {
				lat = max(lat, time.Second+f.Latency)
			}
		}
	}
	if c.Predicted.Dead != nil && !c.Predicted.Exited() {
		timeout := fakeserver.DefaultHealthTimeout
		if c.Compiled != nil && c.Compiled.Behavior.HealthTimeout > 0 {
			timeout = c.Compiled.Behavior.HealthTimeout.D()
		}
		lat = max(lat, timeout)
	}
	return lat
}

// Target is one running fake server a tool is pointed at: fakeserver's Target (BaseURL, Logs,
// Journal, Wait and Stop, each blocking one taking a context) plus what the harness hands a
// tool and reads back without blocking.
type Target interface {
	fakeserver.Target
	// Clock is the server's scenario clock; the tool and the verdict use the same one.
	Clock() replay.Clock
	LogFile() string // the server's combined stdout+stderr log, as the tool may tail it
	// Exited reports the exit code once the server process has exited.
	Exited() (code int, ok bool)
	// Done is closed when the server process has exited.
	Done() <-chan struct{}
	// OnExit makes f run with the exit code once the server process has exited (at once if
	// it has). On virtual time f runs before the clock can move past the exit, so a tool
	// that wakes its task in f sees the exit at the instant it happened; f must not block.
	OnExit(f func(code int))
}

// exitNotice is OnExit for a target that learns of its server's exit itself.
type exitNotice struct {
	mu    sync.Mutex
	fired bool
	code  int
	fns   []func(code int)
}

func (n *exitNotice) OnExit(f func(code int)) {
	n.mu.Lock()
	if !n.fired {
		n.fns = append(n.fns, f)
		n.mu.Unlock()
		return
	}
	code := n.code
	n.mu.Unlock()
	f(code)
}

// fire runs what OnExit registered; only the first call counts.
func (n *exitNotice) fire(code int) {
	n.mu.Lock()
	if n.fired {
		n.mu.Unlock()
		return
	}
	n.fired, n.code = true, code
	fns := n.fns
	n.fns = nil
	n.mu.Unlock()
	for _, f := range fns {
		f(code)
	}
}

// Launcher starts a case's server on a clock: in-process or in a container.
type Launcher interface {
	// Launch starts the server with scenario time running speed times faster than wall time.
	Launch(ctx context.Context, c Case, speed float64) (Target, error)
	// Name says where servers run ("inprocess", "container").
	Name() string
	// Published reports whether server ports are published through a proxy at speed (a
	// container off virtual time), which holds the port from the start.
	Published(speed float64) bool
	// Overhead is the wall time the launcher's plumbing may add between a server event and
	// a tool seeing it (see PolicyFor).
	Overhead() time.Duration
}
