package vtime

import (
	"container/heap"
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Task is one goroutine's share of a run's work. A task is busy from Begin to End except
// while it waits through its own methods; the clock marks it busy again at the instant it
// wakes it, so no jump can slip in between a wake-up and the work it starts.
//
// On any clock other than a *Clock a Task is plain: its waits use that clock's timers. End,
// Wake, Idle and Notify do nothing on a nil Task.
type Task struct {
	c     *Clock          // nil: plain
	plain clockwork.Clock // the clock of a plain task
	wake  chan struct{}

	// guarded by c.mu
	waiting  bool // idle in Wait or Idle
	inWait   bool // idle in Wait: only the clock, Notify or ctx end it
	notified bool // Notify came while not waiting: the next Wait returns at once
	ended    bool
	t        *timer
	idles    uint64   // Idle calls begun: which one a request was written in (clientConn)
	netHolds []func() // holds of this task's connections, released when it is busy again
	reqHold  func()   // a request not yet on its way (see Request)
	reqOff   bool     // reqHold's request goes to no server of the clock
}

// NewTask begins a task on clock: on a *Clock it counts as work until End.
func NewTask(clock clockwork.Clock) *Task {
	c, ok := clock.(*Clock)
	if !ok {
		return &Task{plain: clock, wake: make(chan struct{}, 1)}
	}
	t := &Task{c: c, wake: make(chan struct{}, 1)}
	t.t = &timer{c: c, task: t, idx: -1}
	c.mu.Lock()
	c.busy++
	c.mu.Unlock()
	c.act.Add(1)
	return t
}

// Waiting reports whether the task is idle in one of its waits (false on a plain task).
func (t *Task) Waiting() bool {
	if t == nil || t.c == nil {
		return false
	}
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	return t.waiting
}

// End ends the task's work. Safe to call twice.
func (t *Task) End() {
	if t == nil || t.c == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	if !t.ended {
		t.ended = true
		if !t.waiting {
			c.busy--
		}
		t.waiting = false
		c.disarmLocked(t.t)
	}
	c.mu.Unlock()
	c.touch()
}

// Sleep waits d of virtual time, or until ctx ends (ctx.Err()).
func (t *Task) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if t.c == nil {
		return timerSleep(ctx, t.plain, d)
	}
	_, err := t.Wait(ctx, t.c.Now().Add(d))
	return err
}

// Wait is idle until due (zero: no deadline), a Notify, or the end of ctx. It reports whether
// a Notify ended it; the error is ctx.Err() when ctx did.
func (t *Task) Wait(ctx context.Context, due time.Time) (notified bool, err error) {
	if t.c == nil {
		return t.plainWait(ctx, due)
	}
	c := t.c
	c.mu.Lock()
	switch {
	case t.notified:
		t.notified = false
		c.mu.Unlock()
		return true, nil
	case t.ended:
		c.mu.Unlock()
		return false, ctx.Err()
	case !due.IsZero() && !due.After(c.now):
		c.mu.Unlock()
		return false, ctx.Err()
	}
	select {
	case <-t.wake:
	default:
	}
	t.waiting, t.inWait = true, true
	c.busy--
	if !due.IsZero() {
		t.t.due = due
		c.seq++
		t.t.seq = c.seq
		t.t.armed = true
		heap.Push(&c.timers, t.t)
	}
	c.mu.Unlock()
	c.touch()

	select {
	case <-t.wake:
	case <-ctx.Done():
	}
	c.mu.Lock()
	t.inWait = false
	if t.waiting { // ctx ended it: nobody marked the task busy
		t.waiting = false
		c.busy++
	}
	c.disarmLocked(t.t)
	notified = t.notified
	t.notified = false
	c.mu.Unlock()
	c.act.Add(1)
	if notified {
		return true, nil
	}
	return false, ctx.Err()
}

func (t *Task) plainWait(ctx context.Context, due time.Time) (bool, error) {
	var ch <-chan time.Time
	if !due.IsZero() {
		d := t.plain.Until(due)
		if d <= 0 {
			return false, ctx.Err()
		}
		tm := t.plain.NewTimer(d)
		defer tm.Stop()
		ch = tm.Chan()
	}
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-ch:
		return false, nil
	case <-t.wake:
		return true, nil
	}
}

// Notify wakes the task from Wait, busy from this call on; a task that is not waiting returns
// from its next Wait at once.
func (t *Task) Notify() {
	if t == nil {
		return
	}
	if t.c == nil {
		select {
		case t.wake <- struct{}{}:
		default:
		}
		return
	}
	c := t.c
	c.mu.Lock()
	t.notified = true
	if t.waiting {
		t.wakeLocked()
		c.disarmLocked(t.t)
	}
	c.mu.Unlock()
	c.touch()
}

// wakeLocked marks a waiting task busy and wakes it; c.mu must be held.
func (t *Task) wakeLocked() {
	if !t.waiting {
		return
	}
	t.waiting = false
	t.c.busy++
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// Wake marks a task that is idle in Idle busy from this call on (it does not end a Wait):
// whoever hands such a task its next piece of work (a value it is about to receive, a
// timeout that cancels its request) calls Wake first, so no jump falls between the hand-over
// and the work.
func (t *Task) Wake() {
	if t == nil || t.c == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	if !t.ended && t.waiting && !t.inWait {
		t.waiting = false
		c.busy++
	}
	c.mu.Unlock()
	c.act.Add(1)
}

// Idle runs f, a blocking call whose progress other participants account for (a request on a
// socket the clock watches, a read of a file a follower reports on), with the task idle.
func (t *Task) Idle(f func()) {
	if t == nil || t.c == nil {
		f()
		return
	}
	c := t.c
	c.mu.Lock()
	if t.ended || t.waiting {
		c.mu.Unlock()
		f()
		return
	}
	t.waiting = true
	t.idles++
	c.busy--
	c.mu.Unlock()
	c.touch()
	defer func() {
		c.mu.Lock()
		if t.waiting {
			t.waiting = false
			c.busy++
		}
		holds := t.netHolds
		t.netHolds = nil
		if t.reqHold != nil {
			holds = append(holds, t.reqHold)
			t.reqHold = nil
		}
		c.mu.Unlock()
		for _, r := range holds {
			r()
		}
		c.act.Add(1)
	}()
	f()
}

// NewTimer is a channel timer of t's clock whose fire marks t busy, in the fire's own clock
// step, when t is idle in Idle. A goroutine that a plain channel timer wakes has only the
// clock's quiet window (Options.Quiet) to become busy again, and a loaded machine can keep
// it off the CPU longer: time then jumps before it acts (llmwait's stall tick, received at
// 5m23s, was handled at the next instant due, 36m00s). On a plain task it is the clock's
// own timer.
func (t *Task) NewTimer(d time.Duration) clockwork.Timer {
	if t == nil {
		panic("vtime: NewTimer on a nil Task")
	}
	if t.c == nil {
		return t.plain.NewTimer(d)
	}
	tm := &timer{c: t.c, ch: make(chan time.Time, 1), idx: -1, wakes: t}
	t.c.arm(tm, d)
	return tm
}

// TaskTimer is t.NewTimer(d) when t is a task of clock, and clock.NewTimer(d) otherwise.
func TaskTimer(t *Task, clock clockwork.Clock, d time.Duration) clockwork.Timer {
	if t != nil && t.on(clock) {
		return t.NewTimer(d)
	}
	return clock.NewTimer(d)
}

// Request holds the clock for a request t is about to make to addr (host:port): until the
// request is on its way or t is busy again after the Idle it makes the request in. A request
// to a server on t's clock is on its way once the server's handler has begun (Started); one
// to any other address once its dial has begun or its bytes are written (an idle task whose
// request no one holds let the clock jump before a refused dial to a port not yet bound was
// even tried, by a loaded machine's scheduling delay). Call it while t is busy, right before.
func (t *Task) Request(addr string) {
	if t == nil || t.c == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.ended || t.reqHold != nil {
		return
	}
	c.busy++
	var once sync.Once
	t.reqHold = func() { once.Do(c.release) }
	t.reqOff = !c.listeners[addr]
}

// onWire ends the hold Request took for a request to no server of the clock: its dial has
// begun or its bytes are written, and what follows is the connection's to account for.
func (t *Task) onWire() {
	c := t.c
	c.mu.Lock()
	r := t.reqHold
	if !t.reqOff {
		r = nil
	} else {
		t.reqHold = nil
	}
	c.mu.Unlock()
	if r != nil {
		r()
	}
}

// taken ends the hold Request took: a handler has the request.
func (t *Task) taken() {
	c := t.c
	c.mu.Lock()
	r := t.reqHold
	t.reqHold = nil
	c.mu.Unlock()
	if r != nil {
		r()
	}
}

// holdUntilBusy holds the clock on t's behalf until t is busy again (see Idle); a task that
// is not idle now is busy already and needs no hold.
func (t *Task) holdUntilBusy() { t.holdUntilBusyIn(0) }

// holdUntilBusyIn is holdUntilBusy for an answer to a request t wrote in its Idle number
// idle (0: any): in a later Idle t no longer waits for it. It went on without the answer
// (it gave up, or left the request to a goroutine), and what it waits for now may need time
// to move, which the hold would forbid.
func (t *Task) holdUntilBusyIn(idle uint64) {
	c := t.c
	c.mu.Lock()
	held := t.holdUntilBusyLocked(idle)
	c.mu.Unlock()
	if held {
		c.act.Add(1)
	}
}

// holdUntilBusyLocked is holdUntilBusyIn with c.mu held; it reports whether it took a hold.
func (t *Task) holdUntilBusyLocked(idle uint64) bool {
	c := t.c
	if t.ended || !t.waiting || t.inWait || (idle != 0 && idle != t.idles) {
		return false
	}
	c.busy++
	var once sync.Once
	t.netHolds = append(t.netHolds, func() { once.Do(c.release) })
	return true
}

type taskKey struct{}

// WithTask returns ctx carrying t, so that Sleep and the waits of code called with ctx are
// t's.
func WithTask(ctx context.Context, t *Task) context.Context {
	return context.WithValue(ctx, taskKey{}, t)
}

// TaskFrom returns the task ctx carries, or nil.
func TaskFrom(ctx context.Context) *Task {
	t, _ := ctx.Value(taskKey{}).(*Task)
	return t
}

// Sleep waits d on clock, or until ctx ends (ctx.Err()). When ctx carries a task of clock,
// the wait is the task's (exact accounting); otherwise it is a plain timer wait.
func Sleep(ctx context.Context, clock clockwork.Clock, d time.Duration) error {
	if t := TaskFrom(ctx); t != nil && t.on(clock) {
		return t.Sleep(ctx, d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	return timerSleep(ctx, clock, d)
}

// timerSleep waits d (> 0) on one of clock's timers, or until ctx ends.
func timerSleep(ctx context.Context, clock clockwork.Clock, d time.Duration) error {
	tm := clock.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.Chan():
		return nil
	}
}

// RequestDuring runs f, which makes one request to addr, with ctx's task (if it is one of
// clock's) idle, the request holding the clock while it is on the wire: see Task.Request and
// DialContext.
func RequestDuring(ctx context.Context, clock clockwork.Clock, addr string, f func()) {
	if t := TaskFrom(ctx); t != nil && t.on(clock) {
		t.Request(addr)
		t.Idle(f)
		return
	}
	f()
}

// IdleDuring runs f with ctx's task (if it is one of clock's) idle; see Task.Idle.
func IdleDuring(ctx context.Context, clock clockwork.Clock, f func()) {
	if t := TaskFrom(ctx); t != nil && t.on(clock) {
		t.Idle(f)
		return
	}
	f()
}

func (t *Task) on(clock clockwork.Clock) bool {
	if t.c != nil {
		return t.c == clock
	}
	return t.plain == clock
}
