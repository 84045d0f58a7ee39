package ready

import (
	"context"
	"errors"
	"net"
	"net/url"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/vtime"
)

// Wait blocks until the server at spec.Endpoint is ready or a failure rule fires, and reports
// which. The error is nil exactly when the report's Code is CodeReady; otherwise it is an
// *Error carrying the code (ExitCode maps it). A ctx that ends first yields CodeTimeout when
// its deadline passed and CodeInternal when it was cancelled.
func Wait(ctx context.Context, spec Spec) (Report, error) {
	s, base, err := spec.withDefaults()
	if err != nil {
		return rejectSpec(spec, err)
	}
	if s.Log != nil && s.Parser == nil {
		s.Parser = NewSGLangParser()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := newWaiter(ctx, &s, base)
	if w.ownTask {
		defer w.loopTask.End()
	}
	w.watchLog()
	if s.Process != nil {
		w.procDone = s.Process.Done()
	}
	w.syncer, _ = s.Log.(Syncer)
	// The loop's own timer marks its task busy at the fire: a tick received while the clock
	// waits out its quiet window must not let time jump before the loop has handled it.
	w.timer = vtime.TaskTimer(w.loopTask, w.clock, 0)
	defer w.timer.Stop()
	for !w.m.d.done {
		w.schedule()
		w.handle(w.await())
	}
	return w.report()
}

// rejectSpec reports a spec Wait cannot use.
func rejectSpec(spec Spec, err error) (Report, error) {
	rep := Report{Code: CodeInternal, Cause: "invalid spec: " + err.Error()}
	if t, ok := spec.Process.(Terminator); ok { // a launched server must not outlive a bad spec
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if terr := t.Terminate(ctx); terr != nil {
			rep.Notes = append(rep.Notes, terr.Error())
		}
	}
	return rep, &Error{Code: CodeInternal, Cause: rep.Cause}
}

// waiter is one Wait: the state machine, the prober and what its loop waits on.
type waiter struct {
	ctx   context.Context
	s     *Spec
	base  *url.URL
	clock clockwork.Clock
	start time.Time
	m     *machine
	p     *prober

	// The caller's task on a virtual clock (nil otherwise): the loop is idle only while it
	// waits (await), and whoever hands it work wakes it first.
	loopTask *vtime.Task
	ownTask  bool // loopTask was begun here and ends with Wait

	logCh    chan logLine
	logDone  chan error
	procDone <-chan struct{}

	roundCh  chan round
	inFlight bool
	// A healthy round waiting for the log to be read up to the moment it ended (see Syncer).
	syncer    Syncer
	held      round
	synced    <-chan struct{}
	nextProbe time.Time
	lastRound roundKind
	timer     clockwork.Timer
}

func newWaiter(ctx context.Context, s *Spec, base *url.URL) *waiter {
	clock := s.Clock
	start := clock.Now()
	w := &waiter{
		ctx: ctx, s: s, base: base, clock: clock, start: start,
		m: newMachine(s, start), p: newProber(s, base),
		logDone: make(chan error, 1), roundCh: make(chan round, 1),
		nextProbe: start, lastRound: roundKind(255),
	}
	w.loopTask = vtime.TaskFrom(ctx)
	if w.loopTask == nil {
		w.loopTask = vtime.NewTask(clock)
		w.ownTask = true
	}
	return w
}

func (w *waiter) emit(ev Progress) {
	if w.s.Observe != nil {
		ev.T = w.clock.Since(w.start).Seconds()
		w.s.Observe(ev)
	}
}

// watchLog starts the log watcher, when the spec has a log.
func (w *waiter) watchLog() {
	if w.s.Log == nil {
		return
	}
	w.m.lastProgress = w.start // a server that prints nothing at all is stalled in "starting"
	w.logCh = make(chan logLine, 256)
	// On a virtual clock the watcher is a task of its own that wakes the loop's task
	// before it hands over a line.
	wt := vtime.NewTask(w.clock)
	logCh, logDone := w.logCh, w.logDone // the loop drops its copies once the log ends
	go func() {
		defer wt.End()
		wctx := vtime.WithTask(w.ctx, wt)
		err := watchLog(wctx, idleReader{w.s.Log, wt}, w.s.Parser, logCh, w.loopTask)
		w.loopTask.Wake()
		logDone <- err
	}()
}

func (w *waiter) startRound() {
	w.inFlight = true
	w.p.logKey = w.m.logAPIKey // no round in flight: the prober is not running
	rt := vtime.NewTask(w.clock)
	go func() {
		defer rt.End()
		r := w.p.run(vtime.WithTask(w.ctx, rt))
		w.loopTask.Wake()
		w.roundCh <- r
	}()
}

// progress emits a phase or percent change since prevPhase and prevPct.
func (w *waiter) progress(prevPhase Phase, prevPct int) {
	m := w.m
	if m.phase != prevPhase {
		w.emit(Progress{Event: "phase", Phase: m.phase, Pct: pctPtr(m.pct)})
	} else if m.pct != prevPct && m.pct >= 0 {
		w.emit(Progress{Event: "progress", Phase: m.phase, Pct: pctPtr(m.pct)})
	}
}

// judge hands a finished round to the machine and schedules the next one.
func (w *waiter) judge(r round, at time.Time) {
	w.inFlight = false
	pp, pc := w.m.phase, w.m.pct
	_, again := w.m.onRound(r, at)
	w.progress(pp, pc)
	if r.kind != w.lastRound || r.kind == roundOK {
		w.emit(Progress{Event: "probe", Phase: w.m.phase, Message: r.detail})
		w.lastRound = r.kind
	}
	w.nextProbe = at.Add(w.s.Interval)
	if again {
		w.nextProbe = w.clock.Now()
	}
}

// schedule starts a round when one is due and sets the timer to the next thing due.
func (w *waiter) schedule() {
	now := w.clock.Now()
	if !w.inFlight && !now.Before(w.nextProbe) {
		w.startRound()
	}
	wake := w.m.nextWake()
	if !w.inFlight && w.nextProbe.Before(wake) {
		wake = w.nextProbe
	}
	w.timer.Reset(max(w.clock.Until(wake), 0))
}

// arrival is what ended one wait of the loop, with what came with it.
type arrival struct {
	ev   waitEvent
	line logLine // evLine
	err  error   // evLogEnd: the watcher's
	r    round   // evRound
}

// await blocks until something arrives. It is idle only while nothing has: on a virtual
// clock time may move only then, and what arrived while the loop worked is taken first
// (taken idle, it would wait for a goroutine the machine may keep off the CPU past the
// clock's quiet window, and time could jump before it).
func (w *waiter) await() arrival {
	var a arrival
	select {
	case <-w.ctx.Done():
		a.ev = evCtx
	case a.line = <-w.logCh:
		a.ev = evLine
	case a.err = <-w.logDone:
		a.ev = evLogEnd
	case <-w.procDone:
		a.ev = evExit
	case a.r = <-w.roundCh:
		a.ev = evRound
	case <-w.synced:
		a.ev = evSynced
	case <-w.timer.Chan():
		a.ev = evTick
	default:
		w.loopTask.Idle(func() {
			select {
			case <-w.ctx.Done():
				a.ev = evCtx
			case a.line = <-w.logCh:
				a.ev = evLine
			case a.err = <-w.logDone:
				a.ev = evLogEnd
			case <-w.procDone:
				a.ev = evExit
			case a.r = <-w.roundCh:
				a.ev = evRound
			case <-w.synced:
				a.ev = evSynced
			case <-w.timer.Chan():
				a.ev = evTick
			}
		})
	}
	return a
}

func (w *waiter) handle(a arrival) {
	m, now := w.m, w.clock.Now
	switch a.ev {
	case evCtx:
		if errors.Is(w.ctx.Err(), context.DeadlineExceeded) {
			m.finish(CodeTimeout, "caller's deadline passed in phase "+m.phase.String())
		} else {
			m.finish(CodeInternal, "cancelled in phase "+m.phase.String())
		}
	case evLine:
		w.onLine(a.line)
	case evLogEnd:
		w.onLogEnd(a.err)
	case evExit:
		w.procDone = nil
		// The lines it printed on the way out are the cause: let them arrive first.
		drainNow(w.logCh, m, now())
		m.onExitPending(w.s.Process.Status(), now())
		if w.logDone == nil {
			m.logEnded(now())
		}
	case evRound:
		if a.r.kind == roundOK && w.syncer != nil && w.logCh != nil && !m.logReady {
			w.held, w.synced = a.r, w.syncer.Sync()
			return
		}
		w.judge(a.r, now())
	case evSynced:
		w.synced = nil
		drainNow(w.logCh, m, now())
		w.judge(w.held, now())
	case evTick:
		m.onTick(now())
	}
}

func (w *waiter) onLine(l logLine) {
	m := w.m
	pp, pc, armed := m.phase, m.pct, m.fatalLine
	if m.onLine(l.ev, l.raw, w.clock.Now()) && !w.inFlight {
		w.nextProbe = w.clock.Now()
	}
	w.progress(pp, pc)
	if m.fatalLine != armed && m.fatalLine != "" {
		w.emit(Progress{Event: "fatal", Phase: m.phase, Message: "fatal line (confirming): " + m.fatalLine})
	}
}

func (w *waiter) onLogEnd(lerr error) {
	m := w.m
	w.logCh, w.logDone = drain(w.logCh, m, w.clock.Now()), nil
	if w.synced != nil { // the log ended: nothing more will come before the round
		w.synced = nil
		w.judge(w.held, w.clock.Now())
	}
	if lerr != nil {
		m.notes = append(m.notes, "log stream failed: "+lerr.Error())
	}
	m.logEnded(w.clock.Now())
}

// report ends the wait: it stops a launch that did not become ready and emits the verdict.
func (w *waiter) report() (Report, error) {
	m, s := w.m, w.s
	rep := Report{
		Code: m.d.code, Cause: m.d.cause, Elapsed: w.clock.Since(w.start), Phase: m.phase, Percent: m.pct,
		Exit: m.exit, Fatal: m.fatalLine, Lines: m.tail, Probes: w.p.requests, Notes: append(m.notes, w.p.notes...),
	}
	if rep.Code != CodeReady {
		if t, ok := s.Process.(Terminator); ok && s.Process != nil {
			if err := terminate(t, s, w.base.Host); err != nil {
				rep.Notes = append(rep.Notes, err.Error())
			}
		}
	}
	code := int(rep.Code)
	w.emit(Progress{Event: "verdict", Phase: rep.Phase, Code: &code, Message: rep.Verdict()})
	if rep.Code == CodeReady {
		return rep, nil
	}
	return rep, &Error{Code: rep.Code, Cause: rep.Cause}
}

// waitEvent is what ended one wait of Wait's loop.
type waitEvent int

const (
	evCtx waitEvent = iota
	evLine
	evLogEnd
	evExit
	evRound
	evSynced
	evTick
)

func pctPtr(p int) *int {
	if p < 0 {
		return nil
	}
	return &p
}

// drain consumes whatever the finished watcher left buffered.
func drain(ch chan logLine, m *machine, now time.Time) chan logLine {
	drainNow(ch, m, now)
	return nil
}

func drainNow(ch chan logLine, m *machine, now time.Time) {
	for ch != nil {
		select {
		case l := <-ch:
			m.onLine(l.ev, l.raw, now)
		default:
			return
		}
	}
}

// terminate kills the launch's processes and waits (bounded) until nothing accepts on the
// port, so a relaunch does not race a dying listener into EADDRINUSE. Once every process of
// the launch is gone a listener that stays is another process's, so that wait is short.
// Wall time: real processes.
func terminate(t Terminator, s *Spec, hostport string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := t.Terminate(ctx); err != nil {
		return err
	}
	ctx, cancel = context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for {
		c, err := net.DialTimeout("tcp", hostport, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		select {
		case <-ctx.Done():
			return errors.New("port " + hostport + " still accepts connections after every process of the launch was killed: another process listens there")
		case <-time.After(50 * time.Millisecond):
		}
	}
}
