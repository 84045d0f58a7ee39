package replay

import (
	"context"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Step is one entry as the Player hands it to sinks.
type Step struct {
	Entry
	Index int       // position in the timeline
	Due   time.Time // Timeline.Start + At, in scenario time
}

// Sink receives steps in timeline order, on the Player's goroutine. A sink handles the ops
// it cares about and ignores the rest. Emit should return quickly: the next step waits for
// it. An error stops the replay.
type Sink interface {
	Emit(ctx context.Context, s Step) error
}

// SinkFunc adapts a function to Sink.
type SinkFunc func(ctx context.Context, s Step) error

// Emit calls f.
func (f SinkFunc) Emit(ctx context.Context, s Step) error { return f(ctx, s) }

// ChanSink sends every step on ch. The send blocks until received or ctx ends, so nothing
// is dropped; give ch a buffer if the receiver may lag, or the replay lags with it.
func ChanSink(ch chan<- Step) Sink {
	return SinkFunc(func(ctx context.Context, s Step) error {
		select {
		case ch <- s:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
}

// Player emits a timeline on a clock: each entry goes to every sink, in sink order, when
// the clock reaches Timeline.Start + At.
type Player struct {
	tl    Timeline
	clock Clock
	sinks []Sink
}

// NewPlayer returns a Player for tl on c. To replay from the timeline's beginning, c must
// read tl.Start when Play is called, e.g. Scaled(tl.Start, factor); entries already due
// when Play starts are emitted at once, in order.
func NewPlayer(tl Timeline, c Clock, sinks ...Sink) *Player {
	return &Player{tl: tl, clock: c, sinks: sinks}
}

// Play emits every entry at its due time and returns nil after the last one (an OpExit is
// always last). It returns ctx.Err() when ctx ends first, a validation error before
// emitting anything when the timeline is not playable, or the first sink error.
//
// OpLog events whose Time is set (lines that print a header) are stamped with the entry's
// due time, so a replayed log reads like the original; a zero Time means the line has no
// header and stays zero.
//
// Waiting uses one timer, reset per distinct due time, never polling. On a Scaled clock it
// is a bare runtime timer armed for the wall time left, so dispatch is as precise as the
// Go runtime's own timers (see BenchmarkTimerBaseline100x).
func (p *Player) Play(ctx context.Context) error {
	if err := p.tl.Validate(); err != nil {
		return fmt.Errorf("replay: timeline is not playable: %w", err)
	}
	w := newWaiter(p.clock)
	defer w.stop()
	for i, e := range p.tl.Entries {
		due := p.tl.Start.Add(e.At)
		if err := w.until(ctx, due); err != nil {
			return err
		}
		if e.Op == OpLog && !e.Event.Time.IsZero() {
			e.Event.Time = due
		}
		s := Step{Entry: e, Index: i, Due: due}
		for _, sink := range p.sinks {
			if err := sink.Emit(ctx, s); err != nil {
				return fmt.Errorf("replay: sink failed at entry %d (%s at %s): %w", i, e.Op, e.At, err)
			}
		}
	}
	return nil
}

// waiter sleeps until a due time on a clock, reusing one timer.
type waiter struct {
	clock Clock
	wall  *scaledClock // set when clock is Scaled: wait on a bare runtime timer
	ct    clockwork.Timer
	rt    *time.Timer
}

func newWaiter(c Clock) *waiter {
	w := &waiter{clock: c}
	w.wall, _ = c.(*scaledClock)
	return w
}

// until returns nil once the clock reads due or later, or ctx.Err() if ctx ends first.
func (w *waiter) until(ctx context.Context, due time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		d := w.clock.Until(due)
		if d <= 0 {
			return nil
		}
		var ch <-chan time.Time
		switch {
		case w.wall != nil && w.rt == nil:
			w.rt = time.NewTimer(w.wall.toWall(d))
			ch = w.rt.C
		case w.wall != nil:
			w.rt.Reset(w.wall.toWall(d))
			ch = w.rt.C
		case w.ct == nil:
			w.ct = w.clock.NewTimer(d)
			ch = w.ct.Chan()
		default:
			w.ct.Reset(d)
			ch = w.ct.Chan()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (w *waiter) stop() {
	if w.ct != nil {
		w.ct.Stop()
	}
	if w.rt != nil {
		w.rt.Stop()
	}
}
