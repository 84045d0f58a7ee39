package vtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var epoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func newClock(t *testing.T) *Clock {
	t.Helper()
	c := New(epoch, Options{})
	t.Cleanup(c.Close)
	return c
}

// within fails the test when f has not returned after d of wall time: a broken clock
// hangs instead of failing.
func within(t *testing.T, d time.Duration, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("still running after %s of wall time: the clock did not move", d)
	}
}

// A run whose steps only wake tasks moves on as soon as every task waits: with a quiet
// window of a second, which only the first jump waits out (the run's set-up), 120 sleeps
// take about that second rather than two minutes.
func TestTaskSleepJumps(t *testing.T) {
	c := New(epoch, Options{Quiet: time.Second})
	t.Cleanup(c.Close)
	within(t, 5*time.Second, func() {
		task := NewTask(c)
		defer task.End()
		for range 120 {
			if err := task.Sleep(context.Background(), 5*time.Second); err != nil {
				t.Error(err)
			}
		}
	})
	if got := c.Now().Sub(epoch); got != 10*time.Minute {
		t.Fatalf("after 120 x 5 s: %s, want 10m", got)
	}
}

func TestWorkHoldsTheClock(t *testing.T) {
	c := newClock(t)
	// Another task's timer is due at +1 s; a task woken at +0.5 s that works (30 ms of wall
	// time) before it reads the clock must still read +0.5 s.
	var wg sync.WaitGroup
	wg.Add(2)
	var other time.Duration
	first, second := NewTask(c), NewTask(c) // each goroutine's work is on the clock from its start
	go func() {
		defer wg.Done()
		task := first
		defer task.End()
		_ = task.Sleep(context.Background(), time.Second)
		other = c.Now().Sub(epoch)
	}()
	var seen time.Duration
	go func() {
		defer wg.Done()
		task := second
		defer task.End()
		_ = task.Sleep(context.Background(), 500*time.Millisecond)
		time.Sleep(30 * time.Millisecond) // work: wall time passes, virtual time must not
		seen = c.Now().Sub(epoch)
	}()
	within(t, 5*time.Second, wg.Wait)
	if seen != 500*time.Millisecond || other != time.Second {
		t.Fatalf("worker read %s (want 500ms), other %s (want 1s)", seen, other)
	}
}

// A goroutine that a plain channel timer wakes is seen only when it calls the clock again:
// the clock waits out the quiet window before it moves on, so the goroutine's work after the
// receive still reads the instant it was woken at.
func TestUnseenHandOverWaitsOutTheQuietWindow(t *testing.T) {
	c := New(epoch, Options{Quiet: 200 * time.Millisecond})
	t.Cleanup(c.Close)
	tm := c.NewTimer(time.Second)
	later := c.NewTimer(2 * time.Second)
	defer later.Stop()
	var got time.Duration
	within(t, 5*time.Second, func() {
		<-tm.Chan()
		time.Sleep(5 * time.Millisecond) // work, well inside the window
		got = c.Now().Sub(epoch)
	})
	if got != time.Second {
		t.Fatalf("the woken goroutine read +%s, want its timer's +1s", got)
	}
}

func TestNotifyHandsOverWork(t *testing.T) {
	c := newClock(t)
	waiter := NewTask(c)
	var got time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer waiter.End()
		notified, err := waiter.Wait(context.Background(), time.Time{})
		if !notified || err != nil {
			t.Errorf("Wait = %v, %v; want notified", notified, err)
		}
		time.Sleep(30 * time.Millisecond) // work after the hand-over
		got = c.Now().Sub(epoch)
	}()
	// A timer due at +6 s must not fire while the notified task works.
	task := NewTask(c) // on the clock before the timer is armed
	late := c.NewTimer(6 * time.Second)
	defer late.Stop()
	within(t, 5*time.Second, func() {
		_ = task.Sleep(context.Background(), 5*time.Second)
		waiter.Notify()
		task.End()
		<-done
	})
	if got != 5*time.Second {
		t.Fatalf("notified task read %s, want 5s", got)
	}
}

func TestHoldAndAfterFuncHoldTheClock(t *testing.T) {
	c := newClock(t)
	release := c.Hold()
	fired := c.After(time.Second)
	time.Sleep(20 * time.Millisecond)
	select {
	case <-fired:
		t.Fatal("a timer fired while work was held")
	default:
	}
	release()
	within(t, 5*time.Second, func() { <-fired })

	var at atomic.Int64
	c.AfterFunc(time.Second, func() {
		time.Sleep(30 * time.Millisecond)
		at.Store(int64(c.Now().Sub(epoch)))
	})
	next := c.After(1500 * time.Millisecond)
	within(t, 5*time.Second, func() { <-next })
	if got := time.Duration(at.Load()); got != 2*time.Second {
		t.Fatalf("callback read %s, want 2s (it must end before +2.5s fires)", got)
	}
}

type fakePart struct {
	mu   sync.Mutex
	idle bool
	next time.Time
}

func (p *fakePart) Idle() (bool, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.idle, p.next
}

func TestParticipantsGateAndDriveJumps(t *testing.T) {
	c := newClock(t)
	p := &fakePart{next: epoch.Add(7 * time.Second)}
	detach := c.Attach(p)
	var followed atomic.Int64
	c.OnAdvance(func(now time.Time) { followed.Store(int64(now.Sub(epoch))) })
	time.Sleep(20 * time.Millisecond)
	if got := c.Now(); !got.Equal(epoch) {
		t.Fatalf("moved to %s while a participant was busy", got.Sub(epoch))
	}
	p.mu.Lock()
	p.idle = true
	p.mu.Unlock()
	within(t, 5*time.Second, func() {
		for time.Duration(followed.Load()) < 7*time.Second {
			time.Sleep(time.Millisecond)
		}
	})
	if got := c.Now().Sub(epoch); got != 7*time.Second {
		t.Fatalf("jumped to %s, want the participant's 7s", got)
	}
	if got := time.Duration(followed.Load()); got != 7*time.Second {
		t.Fatalf("follower saw %s, want 7s", got)
	}
	detach()
}

// A process hands work to another participant without a hold (it writes a request, execs a
// server that will join the clock) just after the driver asked the receiver and just before
// it asks the process. Asked in attach order the receiver would be asked first and time
// would jump past the hand-over; the process's stage has it asked first.
func TestStagesOrderTheParticipantsPass(t *testing.T) {
	c := newClock(t)
	c.AfterFunc(time.Minute, func() {})
	recv := &receiver{c: c}
	c.Attach(recv)
	c.Attach(&giver{to: recv})
	within(t, 5*time.Second, func() {
		for c.Now().Equal(epoch) {
			time.Sleep(time.Millisecond)
		}
	})
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if !recv.done || !recv.at.Equal(epoch) {
		t.Fatalf("the handed-over work ended at %s (done %v), want +0s: time moved past it", recv.at.Sub(epoch), recv.done)
	}
}

// giver is a process that, when first asked, has just handed its work over and is idle.
type giver struct {
	to   *receiver
	once sync.Once
}

func (g *giver) Idle() (bool, time.Time) {
	g.once.Do(func() {
		g.to.mu.Lock()
		g.to.busy = true
		g.to.mu.Unlock()
	})
	return true, time.Time{}
}

func (g *giver) Stage() int { return StageProcesses }

// receiver does the work it was handed (the server picks the request up) once asked.
type receiver struct {
	c    *Clock
	mu   sync.Mutex
	busy bool
	done bool
	at   time.Time
}

func (r *receiver) Idle() (bool, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.busy {
		r.busy, r.done, r.at = false, true, r.c.Now()
		return false, time.Time{}
	}
	return true, time.Time{}
}

func TestStopDropsAStaleValue(t *testing.T) {
	// A value nobody receives holds the clock for Abandon; keep that short here.
	c := New(epoch, Options{Abandon: 50 * time.Millisecond})
	t.Cleanup(c.Close)
	tm := c.NewTimer(time.Second)
	after := c.NewTimer(time.Second) // due at the same instant, armed later: fires after tm
	within(t, 5*time.Second, func() { <-after.Chan() })
	if tm.Stop() {
		t.Error("Stop after firing reported a pending timer")
	}
	select {
	case <-tm.Chan():
		t.Fatal("a value of the old arming was received after Stop")
	default:
	}
	tm.Reset(time.Second)
	within(t, 5*time.Second, func() {
		if got := (<-tm.Chan()).Sub(epoch); got != 2*time.Second {
			t.Errorf("reset timer fired at %s, want 2s", got)
		}
	})
}

func TestTickerKeepsItsPhase(t *testing.T) {
	c := newClock(t)
	k := c.NewTicker(10 * time.Second)
	defer k.Stop()
	var got []time.Duration
	within(t, 5*time.Second, func() {
		for range 3 {
			got = append(got, (<-k.Chan()).Sub(epoch))
		}
	})
	if want := []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second}; !slices.Equal(got, want) {
		t.Fatalf("ticks at %v, want %v", got, want)
	}
}

func TestCtxEndsATaskWait(t *testing.T) {
	c := newClock(t)
	task := NewTask(c)
	defer task.End()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(10 * time.Millisecond); cancel() }()
	within(t, 5*time.Second, func() {
		if _, err := task.Wait(ctx, time.Time{}); err != context.Canceled {
			t.Errorf("Wait = %v, want context.Canceled", err)
		}
	})
	// The task is busy again: a timer must not fire while it works.
	tm := c.After(time.Second)
	time.Sleep(20 * time.Millisecond)
	select {
	case <-tm:
		t.Fatal("a timer fired while the task was busy again")
	default:
	}
}

// trace runs n tasks that sleep seeded random amounts and notify each other, and returns
// the order and virtual times of everything they did.
func trace(t *testing.T, seed uint64, hog bool) []string {
	c := New(epoch, Options{})
	defer c.Close()
	stop := make(chan struct{})
	if hog {
		for range runtime.GOMAXPROCS(0) {
			go func() {
				for {
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
	}
	defer close(stop)
	var mu sync.Mutex
	var out []string
	const n = 6
	tasks := make([]*Task, n)
	for i := range tasks {
		tasks[i] = NewTask(c)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer tasks[i].End()
			r := rand.New(rand.NewPCG(seed, uint64(i)))
			for k := range 40 {
				if i%2 == 1 && k%5 == 0 {
					_, _ = tasks[i].Wait(context.Background(), c.Now().Add(time.Minute))
				} else {
					_ = tasks[i].Sleep(context.Background(), time.Duration(1+r.IntN(5000))*time.Millisecond)
				}
				mu.Lock()
				out = append(out, fmt.Sprintf("%d@%s", i, c.Now().Sub(epoch)))
				mu.Unlock()
				if i%2 == 0 && k%5 == 0 {
					tasks[i+1].Notify()
				}
			}
		}()
	}
	within(t, 20*time.Second, wg.Wait)
	slices.Sort(out) // tasks woken at one instant may append in either order
	return out
}

func TestSameSeedSameTrace(t *testing.T) {
	a := trace(t, 7, false)
	b := trace(t, 7, true)
	if !slices.Equal(a, b) {
		t.Fatalf("idle and loaded runs differ:\n%v\n%v", a, b)
	}
}
