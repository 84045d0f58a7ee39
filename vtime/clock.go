// Package vtime is event-driven virtual time: one clock per run that stands still while any
// participant works and jumps to the next due instant once all of them are idle. Waiting costs
// nothing and work costs no virtual time, so what a run sees depends on what its participants
// do, never on how fast or how loaded the machine is.
//
// A participant is anything that can make progress without time moving: a goroutine holding a
// Task, a token from Hold, a callback of AfterFunc running, a goroutine woken by a channel
// timer, or an attached Participant (a process group, a socket with bytes in flight). The
// driver jumps only when every one of them is idle. After handing work to something it sees
// only once that calls the clock again (a plain channel timer's receiver, what an AfterFunc
// cancelled, a closed connection's other end, a follower clock shown a new instant), and
// after every call or timer fire while a participant other than this package's sockets is
// attached (a process group, a follower), the clock is itself a follower or it has not moved
// yet, it also waits until it has seen no call for the Quiet period. Showing other processes
// a new instant is neither: their participants see the waits it ends. A goroutine is seen
// only through these: one that starts work on the clock must hold a task or a Hold from
// before it starts (NewTask before the go statement), or time may jump before it begins.
package vtime

import (
	"container/heap"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"
)

// Participant is something outside the clock's own timers that virtual time must wait for.
type Participant interface {
	// Idle reports whether the participant can make no progress until virtual time moves,
	// and the earliest virtual instant it waits for (zero: none).
	Idle() (idle bool, next time.Time)
}

// Staged is a Participant that says when, within one pass over the participants, the driver
// asks it: lowest stage first, attach order within a stage; a participant that is not Staged
// is at stage 0.
//
// The participants are asked one after the other, not at one instant. Work handed from one
// to another without a hold of the clock (a process writes to a pipe or a socket, or execs a
// server that joins the clock) is seen only if the one that hands it over is asked first:
// idle when asked, it cannot hand anything over afterwards without time moving, and what it
// handed over before is the receiver's when the receiver is asked.
type Staged interface {
	Participant
	Stage() int
}

// Stages of the participants that hand work to others: a tool's processes hand requests,
// output lines and launched servers to everything else, and a follower clock (a server in
// another process) hands log lines and exits to the leader's participants.
const (
	StageProcesses = -2
	StageFollowers = -1
)

// Uptime is what CLOCK_MONOTONIC reads at a run's start for the processes on its clock (a
// day of uptime): fixed, not the host's, so that what a program computes from it is the
// same on every run. Python's time.monotonic() is a float of seconds, and whether 600.0 s
// minus a start time rounds below 600 depends on the start time.
const Uptime = 24 * time.Hour

// Options tune the driver. Zero fields take the defaults.
type Options struct {
	// Quiet is the wall time the clock must see no call and no token change before it moves
	// on where it cannot see all the work it handed over (the cases are in the package
	// comment). Task waits and task timers are tracked exactly: once the clock has moved, a
	// run whose steps only wake tasks moves on without a window (a Go tool's 100 ms poll
	// costs microseconds). Default 2 ms.
	Quiet time.Duration
	// Poll is how soon the driver asks a busy participant again; the gap doubles up to
	// MaxPoll while it stays busy. Defaults 100 µs and 2 ms.
	Poll, MaxPoll time.Duration
	// Abandon is how long a fired channel timer whose value nobody receives holds the clock:
	// a safety net for a timer left armed by a select that took another case and was never
	// stopped. It must outlast how long a woken goroutine can wait for a CPU on a loaded
	// machine (tens of milliseconds were seen), or time jumps past what it was woken for.
	// Default 5 s.
	Abandon time.Duration
}

func (o Options) withDefaults() Options {
	if o.Quiet <= 0 {
		o.Quiet = 2 * time.Millisecond
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Microsecond
	}
	if o.MaxPoll < o.Poll {
		o.MaxPoll = max(2*time.Millisecond, o.Poll)
	}
	if o.Abandon <= 0 {
		o.Abandon = 5 * time.Second
	}
	return o
}

// Clock is one run's virtual clock. It implements clockwork.Clock (and so replay.Clock).
type Clock struct {
	opts Options

	mu        sync.Mutex
	now       time.Time
	timers    timerHeap
	seq       uint64
	busy      int                    // Task, Hold and AfterFunc work in progress
	fired     []*timer               // channel timers fired whose value may not have been received yet
	parts     []attached             // in the order the driver asks them (see Staged)
	listeners map[string]bool        // addresses of listeners wrapped by Listen
	clients   map[string]*clientConn // Go clients' connections by local address (see DialContext)
	partSeq   uint64
	onShow    []func(time.Time)
	onAdvance []func(time.Time)
	published time.Time // the last time shown to onAdvance followers
	jumps     uint64
	closed    bool
	link      *follower // a follower's stream to its leader (Follow); nil on a leader
	links     []*Link   // a leader's followers (Lead)
	shown     time.Time // the last instant followers were let fire their timers at

	act atomic.Uint64 // bumped by every call but Now; the driver's sign of life
	// unseen counts hand-overs to work the clock cannot see until it calls the clock again:
	// a channel timer no live task owns fired (its receiver), an AfterFunc ran (what it
	// cancelled), a connection on the clock closed (the other end notices when it reads),
	// an instant was shown to followers (their waiters wake). The driver waits out a quiet
	// window after each; a run that only hands work to tasks moves on without one.
	unseen atomic.Uint64
	kick   chan struct{}
	doneCh chan struct{}
	wg     sync.WaitGroup
}

// New returns a clock reading start, with its driver running. Close stops it.
func New(start time.Time, opts Options) *Clock {
	c := &Clock{opts: opts.withDefaults(), now: start, published: start, shown: start,
		listeners: map[string]bool{}, clients: map[string]*clientConn{},
		kick: make(chan struct{}, 1), doneCh: make(chan struct{})}
	c.wg.Add(1)
	go c.drive()
	return c
}

// Close stops the driver; time stands still from then on. Safe to call twice, and on nil.
func (c *Clock) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	close(c.doneCh)
	parts := c.parts
	c.parts = nil
	c.mu.Unlock()
	c.wg.Wait()
	for _, a := range parts {
		if cl, ok := a.p.(io.Closer); ok {
			_ = cl.Close()
		}
	}
}

// Jumps is how many times the clock has moved.
func (c *Clock) Jumps() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.jumps
}

// State says what the clock waits for, for a report of a clock that stands still: the work
// in progress (tasks, holds, callbacks), the timers and the next one due, the participants
// and which of them are busy.
func (c *Clock) State() string {
	c.mu.Lock()
	busy, timers, fired, now := c.busy, len(c.timers), len(c.fired), c.now
	next := "none"
	if timers > 0 {
		next = "+" + c.timers[0].due.Sub(now).String()
	}
	parts := slices.Clone(c.parts)
	c.mu.Unlock()
	nbusy := 0
	for _, a := range parts {
		if ok, _ := a.p.Idle(); !ok {
			nbusy++
		}
	}
	return fmt.Sprintf("work in progress: %d, timers: %d (next due %s), fired values unreceived: %d, participants busy: %d of %d",
		busy, timers, next, fired, nbusy, len(parts))
}

// Attach adds a participant the clock waits for before every jump; detach removes it. A
// participant still attached when the clock closes is closed with it if it is an io.Closer.
func (c *Clock) Attach(p Participant) (detach func()) {
	a := attached{p: p}
	if s, ok := p.(Staged); ok {
		a.stage = s.Stage()
	}
	_, a.exact = p.(exactParticipant)
	c.mu.Lock()
	c.partSeq++
	a.id = c.partSeq
	i := len(c.parts)
	for i > 0 && c.parts[i-1].stage > a.stage {
		i--
	}
	c.parts = slices.Insert(c.parts, i, a)
	c.mu.Unlock()
	c.touch()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			c.parts = slices.DeleteFunc(c.parts, func(b attached) bool { return b.id == a.id })
			c.mu.Unlock()
			c.touch()
		})
	}
}

// attached is a participant with its place in the driver's pass.
type attached struct {
	p     Participant
	id    uint64
	stage int
	exact bool
}

// exactParticipant is a participant whose Idle answer is exact at the instant it is given:
// the sockets this package wraps, whose bytes and accept queue the kernel counts. Any other
// (a process group read from /proc, a follower in another process) may be about to act on
// something it was just handed, so while one is attached the driver waits out the quiet
// window after every activity.
type exactParticipant interface{ exactIdle() }

// OnShow registers f to be called with the time at every jump, before anything due then
// runs: other processes' time reads follow the clock this way (see OnAdvance for their
// waits). f must wake nothing: the driver takes its next step without a quiet window.
func (c *Clock) OnShow(f func(now time.Time)) {
	c.mu.Lock()
	c.onShow = append(c.onShow, f)
	c.mu.Unlock()
}

// OnAdvance registers f to be called with the time after every jump, once every Go timer
// due then has fired and the run is quiet again (a shared time page for other processes
// follows the clock this way; those processes then act on that instant last). f may end
// waits due by now only where a participant reports each as busy until its waiter has run
// (a process group's slots, a tracee's waits): the driver waits no quiet window after it.
func (c *Clock) OnAdvance(f func(now time.Time)) {
	c.mu.Lock()
	c.onAdvance = append(c.onAdvance, f)
	c.mu.Unlock()
}

// Hold marks work in progress: the clock does not move until release is called.
func (c *Clock) Hold() (release func()) {
	c.mu.Lock()
	c.busy++
	c.mu.Unlock()
	c.act.Add(1)
	var once sync.Once
	return func() { once.Do(c.release) }
}

func (c *Clock) release() {
	c.mu.Lock()
	c.busy--
	c.mu.Unlock()
	c.touch()
}

// handOff records a hand-over to work the clock cannot see (see unseen) and wakes the driver.
func (c *Clock) handOff() {
	c.unseen.Add(1)
	c.touch()
}

// touch records activity and wakes the driver.
func (c *Clock) touch() {
	c.act.Add(1)
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// Now implements clockwork.Clock. Reading the time is not activity: a goroutine that polls
// Now in wall time must not keep the clock from moving.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Since implements clockwork.Clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Until implements clockwork.Clock.
func (c *Clock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }

// Sleep implements clockwork.Clock.
func (c *Clock) Sleep(d time.Duration) {
	t := c.NewTimer(d)
	<-t.Chan()
	t.Stop()
}

// After implements clockwork.Clock.
func (c *Clock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).Chan() }

// NewTimer implements clockwork.Clock.
func (c *Clock) NewTimer(d time.Duration) clockwork.Timer {
	t := &timer{c: c, ch: make(chan time.Time, 1), idx: -1}
	c.arm(t, d)
	return t
}

// AfterFunc implements clockwork.Clock. f runs on its own goroutine and counts as work until
// it returns, so it must not wait for virtual time itself.
func (c *Clock) AfterFunc(d time.Duration, f func()) clockwork.Timer {
	t := &timer{c: c, fn: f, idx: -1}
	c.arm(t, d)
	return t
}

// NewTicker implements clockwork.Clock.
func (c *Clock) NewTicker(d time.Duration) clockwork.Ticker {
	if d <= 0 {
		panic("vtime: non-positive interval for NewTicker")
	}
	t := &timer{c: c, ch: make(chan time.Time, 1), idx: -1, period: d}
	c.arm(t, d)
	return ticker{t}
}

// arm schedules t to fire d from now; d <= 0 fires it at once.
func (c *Clock) arm(t *timer, d time.Duration) {
	c.mu.Lock()
	t.armed = true
	if d <= 0 && t.period == 0 {
		run := c.fireLocked(t, time.Now())
		c.mu.Unlock()
		c.runFunc(run)
		c.touch()
		return
	}
	t.due = c.now.Add(d)
	c.seq++
	t.seq = c.seq
	heap.Push(&c.timers, t)
	c.mu.Unlock()
	c.touch()
}

// disarm takes t out of the schedule and drops a value it delivered; c.mu must be held.
func (c *Clock) disarmLocked(t *timer) bool {
	was := t.armed && t.idx >= 0
	if t.idx >= 0 {
		heap.Remove(&c.timers, t.idx)
	}
	t.armed = false
	if t.ch != nil {
		select {
		case <-t.ch:
		default:
		}
	}
	for i, f := range c.fired {
		if f == t {
			c.fired = append(c.fired[:i], c.fired[i+1:]...)
			break
		}
	}
	return was
}

// fireLocked delivers t at c.now and returns a callback to run with one unit of work held;
// c.mu must be held.
func (c *Clock) fireLocked(t *timer, wall time.Time) func() {
	switch {
	case t.task != nil:
		t.armed = false
		t.task.wakeLocked()
		return nil
	case t.fn != nil:
		t.armed = false
		c.busy++
		c.unseen.Add(1)
		return t.fn
	}
	switch w := t.wakes; {
	case w == nil || w.ended:
		c.unseen.Add(1)
	case w.waiting && !w.inWait:
		w.waiting = false // as Wake: busy from the fire on
		c.busy++
	}
	select {
	case t.ch <- c.now:
	default:
	}
	t.firedWall = wall
	c.fired = append(c.fired, t)
	if t.period > 0 {
		for !t.due.After(c.now) {
			t.due = t.due.Add(t.period)
		}
		c.seq++
		t.seq = c.seq
		heap.Push(&c.timers, t)
	} else {
		t.armed = false
	}
	return nil
}

// runFuncs runs AfterFunc callbacks due at one instant in order, releasing each one's work.
func (c *Clock) runFuncs(fns []func()) {
	if len(fns) == 0 {
		return
	}
	go func() {
		for _, f := range fns {
			f()
			c.release()
		}
	}()
}

func (c *Clock) runFunc(f func()) {
	if f != nil {
		c.runFuncs([]func(){f})
	}
}
