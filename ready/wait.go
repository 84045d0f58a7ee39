package ready

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
)

// Wait blocks until the server at spec.Endpoint is ready or a failure rule fires, and reports
// which. The error is nil exactly when the report's Code is CodeReady; otherwise it is an
// *Error carrying the code (ExitCode maps it). A ctx that ends first yields CodeTimeout when
// its deadline passed and CodeInternal when it was cancelled.
func Wait(ctx context.Context, spec Spec) (Report, error) {
	s, base, err := spec.withDefaults()
	if err != nil {
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
	if s.Log != nil && s.Parser == nil {
		s.Parser = NewSGLangParser()
	}
	clock := s.Clock
	start := clock.Now()
	m := newMachine(&s, start)
	p := newProber(&s, base)
	emit := func(ev Progress) {
		if s.Observe != nil {
			ev.T = clock.Since(start).Seconds()
			s.Observe(ev)
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The caller's task on a virtual clock (nil otherwise): the loop below is idle only
	// while it waits, and whoever hands it work wakes it first.
	loopTask := vtime.TaskFrom(ctx)
	if loopTask == nil {
		loopTask = vtime.NewTask(clock)
		defer loopTask.End()
	}

	var logCh chan logLine
	logDone := make(chan error, 1)
	if s.Log != nil {
		m.lastProgress = start // a server that prints nothing at all is stalled in "starting"
		logCh = make(chan logLine, 256)
		// On a virtual clock the watcher is a task of its own that wakes the loop's task
		// before it hands over a line.
		wt := vtime.NewTask(clock)
		go func() {
			defer wt.End()
			wctx := vtime.WithTask(ctx, wt)
			err := watchLog(wctx, idleReader{s.Log, wt}, s.Parser, logCh, loopTask)
			loopTask.Wake()
			logDone <- err
		}()
	}
	var procDone <-chan struct{}
	if s.Process != nil {
		procDone = s.Process.Done()
	}

	roundCh := make(chan round, 1)
	inFlight := false
	// A healthy round waiting for the log to be read up to the moment it ended (see Syncer).
	syncer, _ := s.Log.(Syncer)
	var (
		held   round
		synced <-chan struct{}
	)
	nextProbe := start
	lastRound := roundKind(255)
	timer := clock.NewTimer(0)
	defer timer.Stop()

	startRound := func() {
		inFlight = true
		p.logKey = m.logAPIKey // no round in flight: the prober is not running
		rt := vtime.NewTask(clock)
		go func() {
			defer rt.End()
			r := p.run(vtime.WithTask(ctx, rt))
			loopTask.Wake()
			roundCh <- r
		}()
	}
	progress := func(prevPhase Phase, prevPct int) {
		if m.phase != prevPhase {
			emit(Progress{Event: "phase", Phase: m.phase, Pct: pctPtr(m.pct)})
		} else if m.pct != prevPct && m.pct >= 0 {
			emit(Progress{Event: "progress", Phase: m.phase, Pct: pctPtr(m.pct)})
		}
	}

	judge := func(r round, at time.Time) {
		inFlight = false
		pp, pc := m.phase, m.pct
		_, again := m.onRound(r, at)
		progress(pp, pc)
		if r.kind != lastRound || r.kind == roundOK {
			emit(Progress{Event: "probe", Phase: m.phase, Message: r.detail})
			lastRound = r.kind
		}
		nextProbe = at.Add(s.Interval)
		if again {
			nextProbe = clock.Now()
		}
	}

	for !m.d.done {
		now := clock.Now()
		if !inFlight && !now.Before(nextProbe) {
			startRound()
		}
		wake := m.nextWake()
		if !inFlight && nextProbe.Before(wake) {
			wake = nextProbe
		}
		timer.Reset(max(clock.Until(wake), 0))

		// Idle while nothing has arrived: on a virtual clock, time may move only then.
		var (
			ev   waitEvent
			l    logLine
			lerr error
			r    round
		)
		loopTask.Idle(func() {
			select {
			case <-ctx.Done():
				ev = evCtx
			case l = <-logCh:
				ev = evLine
			case lerr = <-logDone:
				ev = evLogEnd
			case <-procDone:
				ev = evExit
			case r = <-roundCh:
				ev = evRound
			case <-synced:
				ev = evSynced
			case <-timer.Chan():
				ev = evTick
			}
		})
		switch ev {
		case evCtx:
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				m.finish(CodeTimeout, "caller's deadline passed in phase "+m.phase.String())
			} else {
				m.finish(CodeInternal, "cancelled in phase "+m.phase.String())
			}
		case evLine:
			pp, pc, armed := m.phase, m.pct, m.fatalLine
			if m.onLine(l.ev, l.raw, clock.Now()) && !inFlight {
				nextProbe = clock.Now()
			}
			progress(pp, pc)
			if m.fatalLine != armed && m.fatalLine != "" {
				emit(Progress{Event: "fatal", Phase: m.phase, Message: "fatal line (confirming): " + m.fatalLine})
			}
		case evLogEnd:
			logCh, logDone = drain(logCh, m, clock.Now()), nil
			if synced != nil { // the log ended: nothing more will come before the round
				synced = nil
				judge(held, clock.Now())
			}
			if lerr != nil {
				m.notes = append(m.notes, "log stream failed: "+lerr.Error())
			}
			m.logEnded(clock.Now())
		case evExit:
			procDone = nil
			// The lines it printed on the way out are the cause: let them arrive first.
			drainNow(logCh, m, clock.Now())
			m.onExitPending(s.Process.Status(), clock.Now())
			if logDone == nil {
				m.logEnded(clock.Now())
			}
		case evRound:
			if r.kind == roundOK && syncer != nil && logCh != nil && !m.logReady {
				held, synced = r, syncer.Sync()
				continue
			}
			judge(r, clock.Now())
		case evSynced:
			synced = nil
			drainNow(logCh, m, clock.Now())
			judge(held, clock.Now())
		case evTick:
			m.onTick(clock.Now())
		}
	}

	rep := Report{
		Code: m.d.code, Cause: m.d.cause, Elapsed: clock.Since(start), Phase: m.phase, Percent: m.pct,
		Exit: m.exit, Fatal: m.fatalLine, Lines: m.tail, Probes: p.requests, Notes: append(m.notes, p.notes...),
	}
	if rep.Code != CodeReady {
		if t, ok := s.Process.(Terminator); ok && s.Process != nil {
			if err := terminate(t, &s, base.Host); err != nil {
				rep.Notes = append(rep.Notes, err.Error())
			}
		}
	}
	code := int(rep.Code)
	emit(Progress{Event: "verdict", Phase: rep.Phase, Code: &code, Message: rep.Verdict()})
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
