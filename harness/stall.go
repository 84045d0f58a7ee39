package harness

import (
	"context"
	"fmt"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
)

// On virtual time a tool that works without ever waiting holds the clock where it is, so its
// harness limit never falls due; so does a server that stops answering the clock. What the
// tool did while the clock stood still tells the two apart: a tool that worked is hung, a
// clock held while the tool did nothing is the harness's error, not the tool's verdict.

// stallWork is how much work a tool may do while the clock stands still: its processes' CPU
// time, or a Go tool's wall time outside its waits. CPU time, not wall time: a loaded
// machine that starves the tool's processes of the CPU does not count against the tool. A
// variable for tests.
var stallWork = time.Minute

// stallWall ends a run whose clock has stood still this long in wall time while the tool did
// not work that much: something else holds the clock. A variable for tests.
var stallWall = 15 * time.Minute

// stallLook is how long the clock stands still before the tool's work is measured (a scan of
// /proc a second for a process tool): a loaded machine holds a clock step for seconds.
const stallLook = 5 * time.Second

// stalled is a run whose clock stood still: the tool's fault (it worked) or not.
type stalled struct {
	tool  bool
	still time.Duration // wall time the clock stood still
	work  time.Duration // the tool's work in that time
	unit  string        // what work counts: "of CPU", "outside its waits"
	state string        // what the clock waited for (vtime.Clock.State)
}

func (s stalled) Error() string {
	if s.tool {
		return fmt.Sprintf("the clock stood still for %s of wall time while the tool worked (%s %s): %s",
			s.still.Round(time.Second), s.work.Round(time.Second), s.unit, s.state)
	}
	return fmt.Sprintf("the clock stood still for %s of wall time while the tool did not work (%s %s); something else holds it: %s",
		s.still.Round(time.Second), s.work.Round(time.Second), s.unit, s.state)
}

// stallCap delivers once clock has stood still while work (the tool's work so far, called
// from one goroutine) grew by stallWork, or for stallWall of wall time; never after ctx ends.
func stallCap(ctx context.Context, clock replay.Clock, unit string, work func() time.Duration) <-chan stalled {
	ch := make(chan stalled, 1)
	look, tickEvery := min(stallLook, stallWork), min(stallWork, time.Second)
	go func() {
		last, since := clock.Now(), time.Now()
		var base time.Duration
		measuring := false
		tick := time.NewTicker(tickEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if n := clock.Now(); !n.Equal(last) {
					last, since, measuring = n, now, false
					continue
				}
				still := now.Sub(since)
				if still < look {
					continue
				}
				w := work()
				if !measuring {
					base, measuring = w, true
				}
				s := stalled{still: still, work: w - base, unit: unit}
				s.tool = s.work >= stallWork
				if s.tool || still >= stallWall {
					if vc, ok := clock.(*vtime.Clock); ok {
						s.state = vc.State()
					}
					ch <- s
					return
				}
			}
		}
	}()
	return ch
}

// groupCPU is the CPU time the processes of group pgid have used, their reaped children's
// included (a loop's short-lived curls).
func groupCPU(pgid int) func() time.Duration {
	return func() time.Duration { return scanGroup(pgid).cpu() }
}

// clockTicks is USER_HZ, the unit of /proc's CPU times: 100 on every Linux architecture Go
// supports.
const clockTicks = 100

// taskWork is a Go tool's work: the wall time its task spent outside its waits, sampled at
// each call.
func taskWork(task *vtime.Task) func() time.Duration {
	var busy time.Duration
	last := time.Now()
	return func() time.Duration {
		now := time.Now()
		if !task.Waiting() {
			busy += now.Sub(last)
		}
		last = now
		return busy
	}
}
