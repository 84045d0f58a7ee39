package replay

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/vtime"
)

// Clock is the one source of time for a run. Log timestamps, timers, probe intervals and
// deadlines are all read from it, so a whole run can be compressed (Scaled) or stepped (Manual).
type Clock = clockwork.Clock

// Real returns the wall clock.
func Real() Clock { return clockwork.NewRealClock() }

// Manual returns a clock that stands still until the test advances it.
func Manual(t time.Time) *clockwork.FakeClock { return clockwork.NewFakeClockAt(t) }

// Scaled returns a clock whose time starts at epoch now and runs factor times faster than
// wall time: after one wall second, Now() is epoch + factor seconds. Durations passed to it
// (Sleep, timers, tickers) are scenario durations.
//
// Precision: Now is computed from the monotonic wall clock, never accumulated, so it does
// not drift. Each wait arms one runtime timer for ceil(d/factor) of wall time; rounding up
// means a timer never fires before its scenario due time, and the runtime timer's own
// latency (well under a millisecond on an idle Linux host) is the only lateness. There is
// no polling loop. At factor 100, one wall millisecond is 100 scenario milliseconds, so
// scenario-time lateness is the wall lateness times factor.
//
// Scaled panics when factor is not a finite number > 0: that is a programming error, and
// callers that take the factor from input must check it (see CheckFactor).
func Scaled(epoch time.Time, factor float64) Clock {
	if err := CheckFactor(factor); err != nil {
		panic(err)
	}
	return &scaledClock{epoch: epoch, wall: time.Now(), factor: factor}
}

// CheckFactor reports whether factor can drive a Scaled clock.
func CheckFactor(factor float64) error {
	if math.IsNaN(factor) || math.IsInf(factor, 0) || factor <= 0 {
		return fmt.Errorf("replay: time factor %v is invalid: use a finite number > 0 (1 = real time, 60 = one minute per second)", factor)
	}
	return nil
}

// Factor reports how many times faster than wall time c runs: the factor of a Scaled clock,
// 1 for any other clock except a Manual or virtual one, which do not follow wall time (0).
func Factor(c Clock) float64 {
	switch c := c.(type) {
	case *scaledClock:
		return c.factor
	case *clockwork.FakeClock, *vtime.Clock:
		return 0
	}
	return 1
}

// SleepCtx waits d on c, or until ctx is done, whichever comes first. It returns ctx.Err()
// when ctx ended the wait, nil otherwise. On a virtual clock (vtime) the wait is the task's
// that ctx carries, so the clock knows the caller is idle until it wakes.
func SleepCtx(ctx context.Context, c Clock, d time.Duration) error {
	return vtime.Sleep(ctx, c, d)
}

type scaledClock struct {
	epoch  time.Time // scenario time at wall
	wall   time.Time // wall time (with monotonic reading) at creation
	factor float64
}

func (c *scaledClock) Now() time.Time {
	return c.epoch.Add(time.Duration(float64(time.Since(c.wall)) * c.factor))
}

func (c *scaledClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *scaledClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// toWall converts a scenario duration to wall time, rounding up so waits never end early.
func (c *scaledClock) toWall(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	w := math.Ceil(float64(d) / c.factor)
	if w >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(w)
}

func (c *scaledClock) Sleep(d time.Duration) { time.Sleep(c.toWall(d)) }

func (c *scaledClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

func (c *scaledClock) NewTimer(d time.Duration) clockwork.Timer {
	t := &scaledTimer{clock: c, ch: make(chan time.Time, 1)}
	t.fire = func() { t.send() }
	t.mu.Lock()
	t.arm(d)
	t.mu.Unlock()
	return t
}

func (c *scaledClock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &scaledTimer{clock: c}
	t.fire = f
	t.mu.Lock()
	t.arm(d)
	t.mu.Unlock()
	return t
}

func (c *scaledClock) NewTicker(d time.Duration) clockwork.Ticker {
	if d <= 0 {
		panic("replay: non-positive interval for NewTicker")
	}
	t := &scaledTicker{clock: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// scaledTimer wraps one runtime timer per arming. A generation number, bumped by Stop and
// Reset, keeps a callback that already started from delivering a stale tick, which gives
// the Go 1.23 guarantee: after Stop or Reset returns, no value from the old arming is
// received.
type scaledTimer struct {
	clock *scaledClock
	ch    chan time.Time // nil for AfterFunc timers
	fire  func()

	mu      sync.Mutex
	gen     uint64
	pending bool // armed and not yet fired or stopped
	rt      *time.Timer
}

func (t *scaledTimer) Chan() <-chan time.Time { return t.ch }

// arm starts a new generation; t.mu must be held.
func (t *scaledTimer) arm(d time.Duration) {
	t.gen++
	gen := t.gen
	t.pending = true
	t.rt = time.AfterFunc(t.clock.toWall(d), func() {
		t.mu.Lock()
		ok := gen == t.gen && t.pending
		if ok {
			t.pending = false
		}
		t.mu.Unlock()
		if ok {
			t.fire()
		}
	})
}

func (t *scaledTimer) send() {
	select {
	case t.ch <- t.clock.Now():
	default:
	}
}

// disarm stops the current generation and drains a delivered tick; t.mu must be held.
func (t *scaledTimer) disarm() bool {
	was := t.pending
	t.pending = false
	t.gen++
	if t.rt != nil {
		t.rt.Stop()
	}
	if t.ch != nil {
		select {
		case <-t.ch:
		default:
		}
	}
	return was
}

func (t *scaledTimer) Stop() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.disarm()
}

func (t *scaledTimer) Reset(d time.Duration) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.disarm()
	t.arm(d)
	return was
}

// scaledTicker re-arms one runtime timer per tick at an absolute scenario due time
// (previous due + period), so rounding never accumulates into drift. Like time.Ticker it
// drops ticks for a slow receiver and keeps its phase.
type scaledTicker struct {
	clock *scaledClock
	ch    chan time.Time

	mu     sync.Mutex
	gen    uint64
	period time.Duration
	due    time.Time
	rt     *time.Timer
}

func (t *scaledTicker) Chan() <-chan time.Time { return t.ch }

func (t *scaledTicker) Reset(d time.Duration) {
	if d <= 0 {
		panic("replay: non-positive interval for Ticker.Reset")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
	t.period = d
	t.due = t.clock.Now().Add(d)
	t.armLocked()
}

func (t *scaledTicker) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stopLocked()
}

func (t *scaledTicker) stopLocked() {
	t.gen++
	if t.rt != nil {
		t.rt.Stop()
		t.rt = nil
	}
}

func (t *scaledTicker) armLocked() {
	gen := t.gen
	t.rt = time.AfterFunc(t.clock.toWall(t.clock.Until(t.due)), func() { t.tick(gen) })
}

func (t *scaledTicker) tick(gen uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if gen != t.gen {
		return
	}
	now := t.clock.Now()
	if now.Before(t.due) { // woke early (cannot happen with ceil, but never tick early)
		t.armLocked()
		return
	}
	select {
	case t.ch <- now:
	default:
	}
	for !t.due.After(now) {
		t.due = t.due.Add(t.period)
	}
	t.armLocked()
}
