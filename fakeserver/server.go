// Package fakeserver runs a compiled replay.Timeline as a fake SGLang server: the log lines at
// their scenario times, the port bound only when the timeline says so, the HTTP surface of the
// profile's era (health semantics, info, OpenAI endpoints, metrics, access lines), faults,
// exit codes and a ground-truth journal. Start runs it in-process; Run runs the fakesglang
// image as a container; both satisfy Target.
package fakeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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

	mu          sync.Mutex
	phase       phase
	unhealthy   bool
	wedged      *vtime.Gate // non-nil while the whole server is wedged; opened on unwedge
	schedWedged *vtime.Gate // non-nil while the scheduler hangs; opened on resume
	schedDead   bool
	resumes     uint64 // how many times the scheduler resumed from a wedge
	// tmLoopAt is when the tokenizer manager's loop began (the first generate); nil before.
	tmLoopAt     *time.Duration
	gracefulExit bool     // SIGTERM received: SGLang's gracefully_exit
	rids         []string // requests in flight (SGLang's rid_to_state), in arrival order
	// sigtermPending: SIGTERM came while the wedge blocked the loop its handler runs on.
	sigtermPending bool
	warmupBlocked  bool
	lastHeartbeat  time.Time
	running        int // generations in flight
	reqSeq         uint64
	rng            *rand.Rand // under mu, in action order
	// healthRNG draws each health check's overhead, apart from rng so that how many checks
	// clients make does not change the server's own choices.
	healthRNG *rand.Rand // under mu
	exitCode  int
	httpSrv   *http.Server
	holder    *http.Server // errno98 / stale_listener: the other process on the port
	holderLn  net.Listener

	queue actionQueue
	seq   int
	// task is the scheduling loop's share of the run's work: on a virtual clock, time does
	// not move while the loop runs an action or has been told of a new one.
	task *vtime.Task
	dead chan struct{} // closed when the process exits
	// reserved is the loopback port picked for a server given none (see ReservePort).
	reserved *Reservation
	// onExit runs at the exit, on the server's own clock step (see OnExit).
	onExit []func(code int)
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
	s.healthRNG = rand.New(rand.NewPCG(uint64(cfg.Seed), 0x4ea17))
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
	switch {
	case port != 0:
	case dialHost(s.args.Host) == "127.0.0.1":
		// Reserved until Stop: servers bind minutes into their timelines.
		if s.reserved, err = ReservePort(); err != nil {
			s.out.close()
			return nil, err
		}
		port = s.reserved.Port()
	default:
		if port, err = freePort(s.args.Host); err != nil {
			s.out.close()
			return nil, err
		}
	}
	s.port = port
	s.baseURL = "http://" + net.JoinHostPort(dialHost(s.args.Host), strconv.Itoa(port))
	if f, h := s.portHolder(); f != nil {
		if err := s.startHolder(f, h, cfg.Holder); err != nil {
			s.out.close()
			s.releasePort()
			return nil, err
		}
	} else if cfg.Holder != nil {
		cfg.Holder.Close() // no fault holds the port: nobody else is on it
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

// releasePort gives up the port's reservation.
func (s *Server) releasePort() {
	if s.reserved != nil {
		s.reserved.Release()
	}
}

// BaseURL implements Target.
func (s *Server) BaseURL() string { return s.baseURL }

// Port is the TCP port the server binds (or failed to bind).
func (s *Server) Port() int { return s.port }

// Clock is the clock the server runs on.
func (s *Server) Clock() replay.Clock { return s.clock }

// Done is closed when the process exits (OpExit, a fatal fault, or Stop).
func (s *Server) Done() <-chan struct{} { return s.dead }

// OnExit makes f run with the exit code when the process exits, or at once if it has. At
// the exit f runs inside the server's clock step, before a virtual clock can move past the
// exit: a waiter that wakes its task there sees the exit at its instant. f must not call the
// server.
func (s *Server) OnExit(f func(code int)) {
	s.mu.Lock()
	if s.phase != phaseDead {
		s.onExit = append(s.onExit, f)
		s.mu.Unlock()
		return
	}
	code := s.exitCode
	s.mu.Unlock()
	f(code)
}

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
		s.releasePort()
	})
	return nil
}

// offsetNow is the scenario offset of the clock's current time.
func (s *Server) offsetNow() time.Duration { return s.clock.Now().Sub(s.start) }
