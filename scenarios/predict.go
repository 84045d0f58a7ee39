package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"

	"github.com/incident-replay/incident-replay/replay"
)

// Prediction is the ground truth a compiled timeline implies: what the journal of a run
// without tool interference will show. Nil times mean "never".
type Prediction struct {
	Bound, Ready, Dead *time.Duration
	ExitCode           *int
}

// Predict reads the ground truth off the timeline: bound at OpBind, ready one warmup after it
// (unless the server died or its scheduler wedged first), dead at OpExit or at an unbounded
// wedge. A timeline that prints its own ready line (a recorded log) runs no live warmup: it is
// ready at the first such line after the bind, as fakeserver has it.
func (c *Compiled) Predict() Prediction {
	var p Prediction
	at := func(d time.Duration) *time.Duration { return &d }
	var wedgedAt, readyLine *time.Duration
	recordedReady := false
	for _, e := range c.Timeline.Entries {
		switch e.Op {
		case replay.OpLog:
			if e.Event.Kind == sglang.KindReady {
				recordedReady = true
				if readyLine == nil && p.Bound != nil {
					readyLine = at(e.At)
				}
			}
		case replay.OpBind:
			if p.Bound == nil {
				p.Bound = at(e.At)
			}
		case replay.OpExit:
			if p.Dead == nil {
				p.Dead = at(e.At)
			}
			if p.ExitCode == nil {
				code := e.Code
				p.ExitCode = &code
			}
		case replay.OpWedge, replay.OpSchedulerDead:
			if p.Dead == nil {
				p.Dead = at(e.At)
			}
		case replay.OpWedgeScheduler:
			// A scheduler that hangs for good is dead as a tool sees it (fakeserver.GroundTruth
			// takes the same view), even if the watchdog ends the process much later.
			if wedgedAt == nil {
				wedgedAt = at(e.At)
			}
			if p.Dead == nil {
				p.Dead = at(e.At)
			}
		}
	}
	c.applyFaults(&p, &wedgedAt)
	if recordedReady {
		if r := readyLine; p.Bound != nil && r != nil && (p.Dead == nil || *p.Dead >= *r) && (wedgedAt == nil || *wedgedAt >= *r) && !c.warmupBroken() {
			p.Ready = r
		}
		return p
	}
	if p.Bound != nil && !c.Args.SkipServerWarmup {
		r := *p.Bound + c.warmupLatency()
		if (p.Dead == nil || *p.Dead >= r) && (wedgedAt == nil || *wedgedAt >= r) && !c.warmupBroken() {
			p.Ready = &r
		}
	} else if p.Bound != nil {
		p.Ready = at(*p.Bound)
	}
	return p
}

// applyFaults folds the faults that end or wedge the server into the prediction.
func (c *Compiled) applyFaults(p *Prediction, wedgedAt **time.Duration) {
	for _, f := range c.Faults {
		trig, ok := c.faultTrigger(f)
		if !ok {
			continue
		}
		switch f.Kind {
		case fault.Wedge, fault.WedgeScheduler:
			if f.For != 0 {
				continue
			}
			t := trig
			if f.Kind == fault.WedgeScheduler {
				*wedgedAt = &t
			}
			if p.Dead == nil || *p.Dead > t {
				p.Dead = &t
			}
		case fault.SchedulerDead:
			// Generation stops for good: dead as a tool sees it, and no warmup after it can
			// finish. Era C's SubprocessWatchdog also ends the process (137) a second later.
			t := trig
			*wedgedAt = &t
			if p.Dead == nil || *p.Dead > t {
				p.Dead = &t
			}
			if c.Profile.TeardownOnChildCrash && p.ExitCode == nil {
				code := 137
				p.ExitCode = &code
			}
		case fault.StaleListener, fault.Errno98:
			// The new server never binds; it dies where it would have bound.
			if p.Bound != nil {
				t, code := *p.Bound, f.ExitCode()
				p.Bound, p.Dead, p.ExitCode = nil, &t, &code
			}
		case fault.WarmupProxyFailure:
			if p.Bound != nil {
				win := f.For
				if win == 0 {
					win = fault.DefaultProxyPollWindow
				}
				t, code := *p.Bound+win, f.ExitCode()
				p.Dead, p.ExitCode = &t, &code
			}
		}
	}
}

// faultTrigger is the offset a fault starts at: At, or At after the first line containing
// AfterLine (false when that line never appears).
func (c *Compiled) faultTrigger(f fault.Spec) (time.Duration, bool) {
	if f.AfterLine == "" {
		return f.At, true
	}
	for _, e := range c.Timeline.Entries {
		if e.Op == replay.OpLog && strings.Contains(sglang.Render(e.Event, c.Profile), f.AfterLine) {
			return e.At + f.At, true
		}
	}
	return 0, false
}

// warmupBroken reports faults that stop warmup from ever finishing.
func (c *Compiled) warmupBroken() bool {
	for _, f := range c.Faults {
		switch f.Kind {
		case "warmup_proxy_failure", "errno98", "stale_listener":
			return true
		}
	}
	return false
}

// Check compares a prediction (or a journal's truth) with the expect block.
func (e Expect) Check(got Prediction) error {
	var errs []string
	cmp := func(name string, want, have *Duration, haveD *time.Duration) {
		switch {
		case want == nil && haveD != nil:
			errs = append(errs, fmt.Sprintf("%s: expected never, got %v", name, *haveD))
		case want != nil && haveD == nil:
			errs = append(errs, fmt.Sprintf("%s: expected %v, got never", name, want.D()))
		case want != nil && haveD != nil:
			if d := *haveD - want.D(); d > e.Tolerance.D() || -d > e.Tolerance.D() {
				errs = append(errs, fmt.Sprintf("%s: expected %v ± %v, got %v", name, want.D(), e.Tolerance.D(), *haveD))
			}
		}
	}
	cmp("bound", e.Bound, nil, got.Bound)
	cmp("ready", e.Ready, nil, got.Ready)
	cmp("dead", e.Dead, nil, got.Dead)
	switch {
	case e.ExitCode != nil && got.ExitCode == nil:
		errs = append(errs, fmt.Sprintf("exit_code: expected %d, got no exit", *e.ExitCode))
	case e.ExitCode == nil && got.ExitCode != nil:
		errs = append(errs, fmt.Sprintf("exit_code: expected no exit, got %d", *got.ExitCode))
	case e.ExitCode != nil && *e.ExitCode != *got.ExitCode:
		errs = append(errs, fmt.Sprintf("exit_code: expected %d, got %d", *e.ExitCode, *got.ExitCode))
	}
	if len(errs) > 0 {
		return fmt.Errorf("ground truth differs from expect: %v", errs)
	}
	return nil
}

func show(d *time.Duration) string {
	if d == nil {
		return "never"
	}
	return d.String()
}
