// Package fakeserver runs a compiled replay.Timeline as a fake SGLang server: the log lines at
// their scenario times, the port bound only when the timeline says so, the HTTP surface of the
// profile's era (health semantics, info, OpenAI endpoints, metrics, access lines), faults,
// exit codes and a ground-truth journal. Start runs it in-process; Run runs the fakesglang
// image as a container; both satisfy Target.
package fakeserver

import (
	"bytes"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// Target is a running fake server, in-process or in a container.
type Target interface {
	// BaseURL is http://127.0.0.1:PORT; it is known before the port is bound.
	BaseURL() string
	// Logs returns what the server printed so far (stdout and stderr interleaved); an
	// in-process server keeps the last LogMemoryBytes of it.
	Logs(ctx context.Context) ([]byte, error)
	// Journal returns the ground-truth records so far.
	Journal(ctx context.Context) ([]Record, error)
	// Wait blocks until the server process exits and returns its exit code.
	Wait(ctx context.Context) (int, error)
	// Stop ends the server (if still running) and releases everything it holds.
	Stop(ctx context.Context) error
}

type phase uint8

const (
	phaseLoading  phase = iota // port not bound
	phaseStarting              // bound, warmup pending (ServerStatus.Starting)
	phaseUp                    // ready
	phaseDead                  // process exited
)

// Server is an in-process fake SGLang server.
type Server struct {
	cfg     Config
	args    args
	prof    sglang.Profile
	clock   replay.Clock
	start   time.Time
	baseURL string
	port    int
	faults  []*fault.Live
	// recordedReady: the timeline prints its own ready line, so no live warmup is run.
	recordedReady, recordedUvicorn bool

	out     *output
	journal *journal
	metrics *metrics
	static  staticBodies

	mu            sync.Mutex
	phase         phase
	unhealthy     bool
	wedged        chan struct{} // non-nil while the whole server is wedged; closed on unwedge
	schedWedged   chan struct{} // non-nil while the scheduler hangs; closed on resume
	schedDead     bool
	warmupBlocked bool
	lastHeartbeat time.Time
	running       int // generations in flight
	reqSeq        uint64
	rng           *rand.Rand // under mu, in action order
	exitCode      int
	httpSrv       *http.Server
	holder        *http.Server // errno98 / stale_listener: the other process on the port
	holderLn      net.Listener

	queue actionQueue
	seq   int
	// task is the scheduling loop's share of the run's work: on a virtual clock, time does
	// not move while the loop runs an action or has been told of a new one.
	task *vtime.Task
	dead chan struct{} // closed when the process exits
	// deadCtx ends when the process exits, cancelling every request in flight.
	deadCtx    context.Context
	deadCancel context.CancelFunc
	loopWG     sync.WaitGroup
	cancel     context.CancelFunc
	stop       sync.Once
}

// Start validates cfg, reserves the port and starts playing the timeline. The returned
// server's BaseURL answers connection refused until the timeline binds the port. ctx bounds
// the whole run: when it ends the server stops as Stop would.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.withDefaults(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, args: resolveArgs(cfg.Args), prof: cfg.Profile, start: cfg.Timeline.Start, dead: make(chan struct{})}
	s.deadCtx, s.deadCancel = context.WithCancel(context.Background())
	s.clock = cfg.Clock
	if s.clock == nil {
		s.clock = replay.Scaled(cfg.Timeline.Start, 1)
	}
	s.rng = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5e9a1))
	s.journal = newJournal(cfg.Journal)
	var err error
	if s.out, err = newOutput(cfg.Stdout, cfg.Stderr, cfg.LogFile, cfg.Profile, s.journal); err != nil {
		return nil, err
	}
	s.metrics = newMetrics(s.args.ServedModelName, s.args.ContextLength)
	if err := s.buildStatic(); err != nil {
		s.out.close()
		return nil, err
	}
	for _, e := range cfg.Timeline.Entries {
		if e.Op == replay.OpLog && e.Event.Kind == sglang.KindReady {
			s.recordedReady = true
		}
		if e.Op == replay.OpLog && e.Event.Kind == sglang.KindUvicornRunning {
			s.recordedUvicorn = true
		}
	}
	port := s.args.Port
	for _, f := range cfg.Faults {
		s.faults = append(s.faults, fault.NewLive(f))
	}
	if port == 0 {
		if port, err = freePort(s.args.Host); err != nil {
			s.out.close()
			return nil, err
		}
	}
	s.port = port
	s.baseURL = "http://" + net.JoinHostPort(dialHost(s.args.Host), strconv.Itoa(port))
	if f, h := s.portHolder(); f != nil {
		if err := s.startHolder(f, h); err != nil {
			s.out.close()
			return nil, err
		}
	}
	s.task = vtime.NewTask(s.clock)
	s.schedule(cfg.Timeline, s.faults)
	ctx, s.cancel = context.WithCancel(ctx)
	s.loopWG.Add(1)
	go s.loop(ctx)
	go func() {
		<-ctx.Done()
		_ = s.Stop(context.Background())
	}()
	return s, nil
}

// dialHost is where clients reach a server bound on host: a wildcard bind is reached on
// loopback, never on another interface.
func dialHost(host string) string {
	switch host {
	case "", "0.0.0.0":
		return "127.0.0.1"
	case "::":
		return "::1"
	}
	return host
}

// freePort asks the kernel for a free port and releases it, so the URL is known long before
// the timeline binds. Another process could take it meanwhile; Errno 98 is then the honest
// outcome, as with real SGLang.
func freePort(host string) (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(dialHost(host), "0"))
	if err != nil {
		return 0, fmt.Errorf("fakeserver: cannot reserve a port on %s: %w", host, err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// BaseURL implements Target.
func (s *Server) BaseURL() string { return s.baseURL }

// Port is the TCP port the server binds (or failed to bind).
func (s *Server) Port() int { return s.port }

// Clock is the clock the server runs on.
func (s *Server) Clock() replay.Clock { return s.clock }

// Done is closed when the process exits (OpExit, a fatal fault, or Stop).
func (s *Server) Done() <-chan struct{} { return s.dead }

// ExitCode reports the exit code once the process has exited.
func (s *Server) ExitCode() (int, bool) {
	select {
	case <-s.dead:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.exitCode, true
	default:
		return 0, false
	}
}

// Logs implements Target.
func (s *Server) Logs(context.Context) ([]byte, error) { return s.out.snapshot(), nil }

// Journal implements Target. It reads back what was written to Config.Journal when that is
// a *bytes.Buffer or a file; otherwise it reports that the journal went elsewhere.
func (s *Server) Journal(context.Context) ([]Record, error) {
	s.journal.mu.Lock()
	defer s.journal.mu.Unlock()
	switch w := s.journal.w.(type) {
	case *bytes.Buffer:
		return ReadJournal(bytes.NewReader(w.Bytes()))
	case *os.File:
		f, err := os.Open(w.Name())
		if err != nil {
			return nil, fmt.Errorf("fakeserver: reopen journal: %w", err)
		}
		defer f.Close()
		return ReadJournal(f)
	}
	return nil, errors.New("fakeserver: the journal writer cannot be read back; pass a *bytes.Buffer or *os.File as Config.Journal")
}

// Wait implements Target.
func (s *Server) Wait(ctx context.Context) (int, error) {
	select {
	case <-s.dead:
		code, _ := s.ExitCode()
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Stop implements Target: it ends the run like a SIGKILL from outside (exit 137 when still
// running) and closes the listener, the port holder and the log file. Safe to call twice.
func (s *Server) Stop(context.Context) error {
	s.stop.Do(func() {
		s.mu.Lock()
		if s.phase != phaseDead {
			s.exitLocked(s.offsetNow(), 137, "stopped")
		}
		s.mu.Unlock()
		s.cancel()
		s.loopWG.Wait()
		s.mu.Lock()
		if s.holder != nil {
			s.holder.Close()
		}
		s.mu.Unlock()
		s.out.close()
	})
	return nil
}

// offsetNow is the scenario offset of the clock's current time.
func (s *Server) offsetNow() time.Duration { return s.clock.Now().Sub(s.start) }

// --- the scheduling loop -------------------------------------------------------------------

type action struct {
	at  time.Duration
	seq int
	fn  func(at time.Duration)
}

type actionQueue []action

func (q actionQueue) Len() int { return len(q) }
func (q actionQueue) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q actionQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *actionQueue) Push(x any)   { *q = append(*q, x.(action)) }
func (q *actionQueue) Pop() any {
	old := *q
	a := old[len(old)-1]
	*q = old[:len(old)-1]
	return a
}

// after queues fn at offset at; s.mu must be held (or the loop not yet started). Actions run
// in (at, insertion) order on the loop goroutine, which makes the run deterministic.
func (s *Server) after(at time.Duration, fn func(at time.Duration)) {
	s.seq++
	heap.Push(&s.queue, action{at: at, seq: s.seq, fn: fn})
	if s.task != nil {
		s.task.Notify()
	}
}

// CatchUp runs now every scheduled action due at or before offset d that the loop has not
// run yet. On a loaded machine the loop's timer fires late, so a client can see a log line
// (a traceback) before the action right after it (the wedge) has run; the harness calls
// CatchUp with a tool's claim time so that the journal it scores against holds everything
// due by then. Actions run in the same order as on the loop, so a run stays deterministic.
func (s *Server) CatchUp(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.phase != phaseDead && s.queue.Len() > 0 && s.queue[0].at <= d {
		next := heap.Pop(&s.queue).(action)
		next.fn(next.at)
	}
}

func (s *Server) loop(ctx context.Context) {
	defer s.loopWG.Done()
	defer s.task.End()
	for {
		s.mu.Lock()
		if s.phase == phaseDead {
			s.mu.Unlock()
			return
		}
		var due time.Time // zero: nothing queued, wait for after()
		if s.queue.Len() > 0 {
			next := s.queue[0]
			due = s.start.Add(next.at)
			if !s.clock.Now().Before(due) {
				heap.Pop(&s.queue)
				next.fn(next.at)
				s.mu.Unlock()
				continue
			}
		}
		s.mu.Unlock()
		if _, err := s.task.Wait(ctx, due); err != nil {
			return
		}
	}
}

// schedule queues the timeline's entries and the time-triggered faults.
func (s *Server) schedule(tl replay.Timeline, faults []*fault.Live) {
	for _, e := range tl.Entries {
		e := e
		s.after(e.At, func(at time.Duration) { s.apply(e, at) })
	}
	for _, f := range faults {
		if f.AfterLine == "" {
			s.armFault(f, 0)
		}
	}
}

// apply performs one timeline entry; s.mu is held.
func (s *Server) apply(e replay.Entry, at time.Duration) {
	if s.phase == phaseDead {
		return
	}
	switch e.Op {
	case replay.OpLog:
		ev := s.realPort(e.Event)
		if !ev.Time.IsZero() {
			ev.Time = s.start.Add(at)
		}
		s.logLocked(at, e.Stream, ev)
		if ev.Kind == sglang.KindReady && s.recordedReady && s.phase == phaseStarting {
			s.setUpLocked(at)
		}
	case replay.OpBind:
		s.bindLocked(at)
	case replay.OpExit:
		s.exitLocked(at, e.Code, "")
	case replay.OpWedge:
		s.wedgeLocked(at)
	case replay.OpWedgeScheduler:
		s.wedgeSchedulerLocked(at)
	case replay.OpSchedulerDead:
		s.schedulerDeadLocked(at, false)
	}
}

func (s *Server) stamp(at time.Duration) time.Time { return s.start.Add(at) }

func (s *Server) state(at time.Duration, state string) {
	s.journal.add(Record{At: at, Type: RecState, State: state})
}

// logLocked prints one line and feeds the after_line fault triggers.
func (s *Server) logLocked(at time.Duration, stream replay.Stream, ev sglang.Event) {
	s.armAfterLine(at, s.out.line(at, stream, ev))
}

// schedRanks is the header rank prefix of scheduler (TP0) lines.
func (s *Server) schedRanks() []sglang.Rank {
	if s.args.TPSize > 1 {
		return []sglang.Rank{{Name: "TP", N: 0}}
	}
	return s.prof.SingleGPURanks()
}

func (s *Server) bindLocked(at time.Duration) {
	if s.phase != phaseLoading {
		return
	}
	t := s.stamp(at)
	if !s.recordedUvicorn {
		s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornStarted, Time: t, Fields: sglang.Fields{{Key: "pid", Value: strconv.Itoa(s.cfg.Behavior.PID)}}})
		s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornWaiting, Time: t})
		s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornComplete, Time: t})
	}
	if s.holder != nil || s.holderLn != nil {
		s.bindFailedLocked(at)
		return
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(s.args.Host, strconv.Itoa(s.port)))
	if err != nil { // the port was taken from outside: the same ending as a real Errno 98
		s.bindFailedLocked(at)
		return
	}
	s.httpSrv = &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       time.Minute,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          nil,
		// Every request context ends when the process exits (exitLocked cancels deadCtx).
		BaseContext: func(net.Listener) context.Context { return s.deadCtx },
	}
	if vc, ok := s.clock.(*vtime.Clock); ok {
		// A request read from a connection is work until its handler has begun.
		ln = vtime.Listen(ln, vc)
		vtime.Serve(s.httpSrv)
	}
	srv := s.httpSrv
	go func() { _ = srv.Serve(ln) }()
	if !s.recordedUvicorn {
		s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornRunning, Time: t, Fields: sglang.Fields{
			{Key: "scheme", Value: "http"}, {Key: "host", Value: s.args.Host}, {Key: "port", Value: strconv.Itoa(s.port)}}})
	}
	s.phase = phaseStarting
	s.state(at, StateBound)
	s.lastHeartbeat = t
	if s.recordedReady {
		return
	}
	if f, w := s.warmupTaker(); f != nil {
		w.TakeWarmup(f.Spec, faultHost{s}, at)
		return
	}
	if s.args.SkipServerWarmup {
		s.setUpLocked(at)
		s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindReady, Time: t})
		return
	}
	s.after(at+s.cfg.Behavior.WarmupPoll, s.warmupPoll)
}

func (s *Server) bindFailedLocked(at time.Duration) {
	t := s.stamp(at)
	s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindErrno98, Time: t, Fields: sglang.Fields{
		{Key: "host", Value: s.args.Host}, {Key: "port", Value: strconv.Itoa(s.port)}}})
	s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornShutdown, Time: t, Text: "Waiting for application shutdown."})
	s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornShutdown, Time: t, Text: "Application shutdown complete."})
	s.state(at, StateBindFailed)
	code := fault.DefaultBindExitCode
	if f, _ := s.portHolder(); f != nil {
		code = f.ExitCode()
	}
	s.exitLocked(at, code, "")
}

// warmup: the model-info poll, the warmup generate with its prefill line, era C freeze_gc,
// then "fired up" and status Up.
func (s *Server) warmupPoll(at time.Duration) {
	if s.phase != phaseStarting {
		return
	}
	s.internalRequest(at, "GET", s.prof.WarmupInfoPath, http.StatusOK, 0)
	s.warmupGenerate(at)
}

func (s *Server) warmupGenerate(at time.Duration) {
	if s.phase != phaseStarting {
		return
	}
	if s.schedWedged != nil || s.schedDead {
		s.warmupBlocked = !s.schedDead // resumes with the scheduler
		return
	}
	s.logLocked(at, replay.Stdout, s.prefillEvent(s.stamp(at), s.cfg.Behavior.WarmupTokens, true))
	done := at + s.cfg.Behavior.WarmupGenerate
	s.after(done, func(at time.Duration) {
		if s.phase != phaseStarting {
			return
		}
		s.internalRequest(at, "POST", "/generate", http.StatusOK, s.cfg.Behavior.WarmupGenerate)
		s.lastHeartbeat = s.stamp(at)
		if s.prof.FreezeGC {
			s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindFreezeGC, Time: s.stamp(at), Ranks: s.schedRanks(),
				Text: "Freezing GC in Scheduler process. gen0: 48->0, gen1: 12->0, gen2: 1305->1317"})
			s.internalRequest(at, "POST", "/freeze_gc", http.StatusOK, 0)
		}
		s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindReady, Time: s.stamp(at)})
		s.setUpLocked(at)
	})
}

// internalRequest logs and journals one of the server's own warmup requests, from an
// ephemeral loopback port chosen by the seeded generator.
func (s *Server) internalRequest(at time.Duration, method, path string, status int, lat time.Duration) {
	client := "127.0.0.1:" + strconv.Itoa(32768+s.rng.IntN(28231))
	s.logLocked(at, replay.Stdout, accessEvent(s.stamp(at), client, method, path, status))
	s.journal.add(Record{At: at, Type: RecRequest, Method: method, Route: path, Status: status, Latency: lat, Client: client, Internal: true})
}

func (s *Server) setUpLocked(at time.Duration) {
	if s.phase != phaseStarting {
		return
	}
	s.phase = phaseUp
	s.state(at, StateReady)
}

func (s *Server) wedgeLocked(at time.Duration) {
	if s.wedged == nil {
		s.wedged = make(chan struct{})
		s.state(at, StateWedged)
	}
}

func (s *Server) unwedgeLocked(at time.Duration) {
	if s.wedged != nil {
		close(s.wedged)
		s.wedged = nil
		s.state(at, StateUnwedged)
	}
}

func (s *Server) wedgeSchedulerLocked(at time.Duration) {
	if s.schedWedged == nil && !s.schedDead {
		s.schedWedged = make(chan struct{})
		s.state(at, StateSchedulerWedged)
	}
}

func (s *Server) resumeSchedulerLocked(at time.Duration) {
	if s.schedWedged == nil {
		return
	}
	close(s.schedWedged)
	s.schedWedged = nil
	s.lastHeartbeat = s.stamp(at)
	s.state(at, StateSchedulerResume)
	if s.warmupBlocked {
		s.warmupBlocked = false
		s.warmupGenerate(at)
	}
}

// schedulerDeadLocked: the scheduler process died. Era C's SubprocessWatchdog tears the
// server down about 1 s later (exit 137); older eras keep HTTP up as a zombie.
func (s *Server) schedulerDeadLocked(at time.Duration, teardown bool) {
	if s.schedDead {
		return
	}
	s.schedDead = true
	s.state(at, StateSchedulerDead)
	if !teardown {
		return
	}
	pid := strconv.Itoa(s.cfg.Behavior.PID + 1)
	s.after(at+time.Second, func(at time.Duration) {
		t := s.stamp(at)
		s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindSubprocessCrash, Time: t, Fields: sglang.Fields{
			{Key: "name", Value: "scheduler_0"}, {Key: "pid", Value: pid}, {Key: "code", Value: "-9"}}})
		s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindSigquitReceived, Time: t,
			Text: "SIGQUIT received. signum=None, frame=None. It usually means one child failed."})
		s.exitLocked(at, 137, string(fault.SchedulerDead))
	})
}

// exitLocked ends the process: the listener and every open connection close at once (what
// clients of a SIGKILLed server see), the journal records the code.
func (s *Server) exitLocked(at time.Duration, code int, why string) {
	if s.phase == phaseDead {
		return
	}
	s.phase = phaseDead
	s.exitCode = code
	if why == "stopped" {
		s.state(at, StateStopped)
	} else {
		c := code
		s.journal.add(Record{At: at, Type: RecState, State: StateDead, Code: &c, Fault: why})
	}
	if s.httpSrv != nil {
		s.httpSrv.Close()
	}
	if s.holderLn != nil && s.holder == nil {
		s.holderLn.Close() // errno98's holder belongs to the failed launch (e.g. a leftover rank)
	}
	s.metrics.dead()
	close(s.dead)
	s.deadCancel()
	if s.task != nil {
		s.task.Notify()
	}
}

// --- output --------------------------------------------------------------------------------

// output renders lines once and fans them out to the streams, the log file, the in-memory
// tail Logs returns, and the journal.
type output struct {
	mu      sync.Mutex
	streams [2]io.Writer
	file    *os.File
	mem     logTail
	prof    sglang.Profile
	journal *journal
	buf     []byte
}

func newOutput(stdout, stderr io.Writer, logFile string, prof sglang.Profile, j *journal) (*output, error) {
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = stdout
	}
	o := &output{streams: [2]io.Writer{stdout, stderr}, mem: logTail{limit: LogMemoryBytes}, prof: prof, journal: j}
	if logFile != "" {
		f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return nil, fmt.Errorf("fakeserver: open --log-file: %w", err)
		}
		o.file = f
	}
	return o, nil
}

func (o *output) line(at time.Duration, stream replay.Stream, ev sglang.Event) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.buf = append(sglang.AppendRender(o.buf[:0], ev, o.prof), '\n')
	w := o.streams[0]
	if stream == replay.Stderr {
		w = o.streams[1]
	}
	_, _ = w.Write(o.buf)
	if o.file != nil {
		_, _ = o.file.Write(o.buf)
	}
	o.mem.Write(o.buf)
	text := string(o.buf[:len(o.buf)-1])
	o.journal.add(Record{At: at, Type: RecLog, Stream: stream.String(), Kind: ev.Kind.String(), Line: text})
	return text
}

func (o *output) snapshot() []byte {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.mem.Bytes()
}

func (o *output) close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.file != nil {
		_ = o.file.Close()
		o.file = nil
	}
}

func accessEvent(t time.Time, client, method, path string, status int) sglang.Event {
	return sglang.Event{Kind: sglang.KindAccess, Time: t, Fields: accessFields(nil, client, method, path, status)}
}

// accessFields appends an access line's fields to dst (the caller's storage, so the hot
// path allocates nothing here).
func accessFields(dst sglang.Fields, client, method, path string, status int) sglang.Fields {
	return append(dst, sglang.Field{Key: "client", Value: client}, sglang.Field{Key: "method", Value: method},
		sglang.Field{Key: "path", Value: path}, sglang.Field{Key: "proto", Value: "HTTP/1.1"},
		sglang.Field{Key: "status", Value: statusCode(status)}, sglang.Field{Key: "reason", Value: http.StatusText(status)})
}

// statusCodes are the decimal forms of 100..599, so an access line does not format one.
var statusCodes = func() (t [600]string) {
	for i := 100; i < len(t); i++ {
		t[i] = strconv.Itoa(i)
	}
	return t
}()

func statusCode(code int) string {
	if code >= 100 && code < len(statusCodes) {
		return statusCodes[code]
	}
	return strconv.Itoa(code)
}

// prefillEvent is the scheduler's Prefill line for one new sequence of tokens.
func (s *Server) prefillEvent(t time.Time, tokens int, cudaGraph bool) sglang.Event {
	ev := sglang.Prefill(s.prof, sglang.PrefillStats{NewSeq: 1, NewToken: tokens, CUDAGraph: cudaGraph})
	ev.Time, ev.Ranks = t, s.schedRanks()
	return ev
}
