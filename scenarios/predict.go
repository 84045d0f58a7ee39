package scenarios

import (
	"fmt"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/truth"
)

// Predict reads the ground truth off the timeline: bound at OpBind, ready one warmup after it
// (unless the server died first), dead at OpExit or at a wedge that never ends, then each
// fault's own predicted effect. A timeline that prints its own ready line (a recorded log)
// runs no live warmup: it is ready at the first such line after the bind, as fakeserver has
// it.
func (c *Compiled) Predict() truth.Truth {
	var p truth.Truth
	var readyLine *time.Duration
	recordedReady := false
	for _, e := range c.Timeline.Entries {
		switch e.Op {
		case replay.OpLog:
			if e.Event.Kind == sglang.KindReady {
				recordedReady = true
				if readyLine == nil && p.Bound != nil {
					readyLine = truth.At(e.At)
				}
			}
		case replay.OpBind:
			p.Bind(e.At)
		case replay.OpExit:
			p.Exit(e.At, e.Code)
		case replay.OpWedge, replay.OpSchedulerDead, replay.OpWedgeScheduler:
			p.Wedge(e.At) // the timeline has no op that ends them
		}
	}
	f := fault.Forecast{Truth: &p, TeardownOnChildCrash: c.Profile.TeardownOnChildCrash}
	for _, spec := range c.Faults {
		if at, ok := c.faultTrigger(spec); ok {
			if d, known := fault.Lookup(spec.Kind); known {
				d.Fault.Predict(spec, at, &f)
			}
		}
	}
	switch {
	case f.HealthHeld: // /health never answers 200: the server never reports ready
	case recordedReady:
		if readyLine != nil && p.ReadyBy(*readyLine) && !f.WarmupBroken {
			p.BecomeReady(*readyLine)
		}
	case p.Bound != nil && !c.Args.SkipServerWarmup:
		if r := *p.Bound + c.warmupLatency(); p.ReadyBy(r) && !f.WarmupBroken {
			p.BecomeReady(r)
		}
	case p.Bound != nil:
		p.BecomeReady(*p.Bound)
	}
	return p
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

// Truth is the ground truth the expect block states.
func (e Expect) Truth() truth.Truth {
	at := func(d *Duration) *time.Duration {
		if d == nil {
			return nil
		}
		return truth.At(d.D())
	}
	t := truth.Truth{Bound: at(e.Bound), Ready: at(e.Ready), Dead: at(e.Dead)}
	if e.ExitCode != nil {
		code := *e.ExitCode
		t.ExitCode = &code
	}
	return t
}

// Check compares a prediction (or a journal's truth) with the expect block.
func (e Expect) Check(got truth.Truth) error {
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
