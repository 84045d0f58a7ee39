package replay

import (
	"context"
	"errors"
	"math"
	"runtime"
	"testing"
	"time"
)

// These tests run a Scaled clock at a high factor so they take a few wall milliseconds.
// They assert only what must hold however slow the machine is: nothing fires early, and
// stopped timers never fire. Upper bounds on lateness are the benchmark's job.

const fast = 10000 // one scenario second per 0.1 wall millisecond

func TestScaledNowRunsFromEpoch(t *testing.T) {
	before := time.Now()
	c := Scaled(epoch, fast)
	n0 := c.Now()
	if n0.Before(epoch) {
		t.Fatalf("Now = %v, before epoch %v", n0, epoch)
	}
	time.Sleep(2 * time.Millisecond)
	n1 := c.Now()
	wall := time.Since(before) // read after n1: a bound on the wall time n1 saw
	// At least 2 wall ms have passed, so at least 20 scenario s; at most wall*factor.
	if el := n1.Sub(epoch); el < 20*time.Second || el > time.Duration(float64(wall)*fast) {
		t.Fatalf("after %v wall, scenario elapsed %v at factor %v", wall, el, fast)
	}
	if s, u := c.Since(epoch), c.Until(epoch); s <= 0 || u >= 0 {
		t.Fatalf("Since(epoch) = %v, Until(epoch) = %v", s, u)
	}
	if got := Factor(c); got != fast {
		t.Fatalf("Factor = %v", got)
	}
}

func TestScaledTimersNeverEarly(t *testing.T) {
	c := Scaled(epoch, fast)
	const d = 30 * time.Second // 3 wall ms
	cases := []struct {
		name string
		wait func() time.Time // returns the scenario time the wait ended
	}{
		{"NewTimer", func() time.Time { return <-c.NewTimer(d).Chan() }},
		{"After", func() time.Time { return <-c.After(d) }},
		{"Sleep", func() time.Time { c.Sleep(d); return c.Now() }},
		{"AfterFunc", func() time.Time {
			ch := make(chan time.Time, 1)
			c.AfterFunc(d, func() { ch <- c.Now() })
			return <-ch
		}},
		{"SleepCtx", func() time.Time {
			if err := SleepCtx(context.Background(), c, d); err != nil {
				t.Fatal(err)
			}
			return c.Now()
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := c.Now()
			if got := tc.wait(); got.Sub(start) < d {
				t.Fatalf("waited %v of scenario time, want at least %v", got.Sub(start), d)
			}
		})
	}
}

func TestScaledTimerStopReset(t *testing.T) {
	c := Scaled(epoch, fast)
	tm := c.NewTimer(time.Hour)
	if !tm.Stop() {
		t.Fatal("Stop of a pending timer = false")
	}
	if tm.Stop() {
		t.Fatal("second Stop = true")
	}
	start := c.Now()
	if tm.Reset(20 * time.Second) {
		t.Fatal("Reset of a stopped timer = true")
	}
	if got := <-tm.Chan(); got.Sub(start) < 20*time.Second {
		t.Fatalf("reset timer fired after %v, want >= 20s", got.Sub(start))
	}
	// A fired timer's stale value is drained by Reset: the next receive is the new arming.
	tm.Reset(10 * time.Second)
	waitBuffered(t, tm.Chan()) // it fired and its value sits in the channel
	start = c.Now()
	tm.Reset(20 * time.Second)
	if got := <-tm.Chan(); got.Sub(start) < 20*time.Second {
		t.Fatalf("received %v after Reset, want a value >= 20s later (stale tick?)", got.Sub(start))
	}

	fired := make(chan struct{}, 1)
	af := c.AfterFunc(time.Second, func() { fired <- struct{}{} })
	if !af.Stop() {
		t.Fatal("Stop of a pending AfterFunc = false")
	}
	<-c.After(20 * time.Second) // well past its due time
	select {
	case <-fired:
		t.Fatal("stopped AfterFunc ran")
	default:
	}
}

func TestScaledTicker(t *testing.T) {
	c := Scaled(epoch, fast)
	const period = 10 * time.Second // 1 wall ms
	start := c.Now()
	tk := c.NewTicker(period)
	defer tk.Stop()
	for i := 1; i <= 5; i++ {
		got := <-tk.Chan()
		// Ticks may be dropped for a slow receiver, but none comes before its slot.
		if got.Sub(start) < time.Duration(i)*period {
			t.Fatalf("tick %d at %v, before %v", i, got.Sub(start), time.Duration(i)*period)
		}
	}
	tk.Stop()
	select {
	case <-tk.Chan(): // at most the one buffered before Stop
	default:
	}
	<-c.After(5 * period) // five slots in which a running ticker would tick
	select {
	case <-tk.Chan():
		t.Fatal("stopped ticker ticked")
	default:
	}
}

// waitBuffered waits until a timer has fired into ch without receiving its value.
func waitBuffered(t *testing.T, ch <-chan time.Time) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(ch) == 0; runtime.Gosched() {
		if time.Now().After(deadline) {
			t.Fatal("the timer never fired")
		}
	}
}

func TestSleepCtxCancel(t *testing.T) {
	fc := Manual(epoch)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- SleepCtx(ctx, fc, time.Hour) }()
	waitBlocked(t, fc)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("SleepCtx = %v, want context.Canceled", err)
	}
	if err := SleepCtx(ctx, fc, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("SleepCtx(0) on a done context = %v", err)
	}
	if err := SleepCtx(context.Background(), fc, -time.Second); err != nil {
		t.Fatalf("SleepCtx(-1s) = %v", err)
	}
	go func() { done <- SleepCtx(context.Background(), fc, time.Minute) }()
	waitBlocked(t, fc)
	fc.Advance(time.Minute)
	if err := <-done; err != nil {
		t.Fatalf("SleepCtx after Advance = %v", err)
	}
}

func TestFactorAndCheckFactor(t *testing.T) {
	if Factor(Real()) != 1 || Factor(Manual(epoch)) != 0 {
		t.Fatalf("Factor(Real) = %v, Factor(Manual) = %v", Factor(Real()), Factor(Manual(epoch)))
	}
	for _, f := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if CheckFactor(f) == nil {
			t.Errorf("CheckFactor(%v) = nil", f)
		}
	}
	if err := CheckFactor(60); err != nil {
		t.Errorf("CheckFactor(60) = %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("Scaled(0) did not panic")
		}
	}()
	Scaled(epoch, 0)
}
