package fakeserver

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

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
	if s.prof.BindFailShutdownDone { // from 0.5.9 the lifespan joins the warmup thread first
		s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindUvicornShutdown, Time: t, Text: "Application shutdown complete."})
	}
	s.state(at, StateBindFailed)
	code := fault.DefaultBindExitCode
	if f, _ := s.portHolder(); f != nil {
		code = f.ExitCode()
	}
	s.exitLocked(at, code, "")
}

// warmup: the model-info poll, the warmup generate with its prefill line, then "fired up"
// and status Up. No release calls /freeze_gc itself.
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
	s.tokenizerLoopLocked(at)
	s.logLocked(at, replay.Stdout, s.prefillEvent(s.stamp(at), s.cfg.Behavior.WarmupTokens, true))
	done := at + s.cfg.Behavior.WarmupGenerate
	s.after(done, func(at time.Duration) {
		if s.phase != phaseStarting {
			return
		}
		s.internalRequest(at, "POST", "/generate", http.StatusOK, s.cfg.Behavior.WarmupGenerate)
		s.lastHeartbeat = s.stamp(at)
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
		s.wedged = vtime.NewGate()
		s.state(at, StateWedged)
	}
}

func (s *Server) unwedgeLocked(at time.Duration) {
	if s.wedged != nil {
		s.wedged.Open()
		s.wedged = nil
		s.state(at, StateUnwedged)
		if s.sigtermPending {
			s.sigtermPending = false
			s.sigtermLocked(at)
		}
	}
}

func (s *Server) wedgeSchedulerLocked(at time.Duration) {
	if s.schedWedged == nil && !s.schedDead {
		s.schedWedged = vtime.NewGate()
		s.state(at, StateSchedulerWedged)
	}
}

func (s *Server) resumeSchedulerLocked(at time.Duration) {
	if s.schedWedged == nil {
		return
	}
	s.schedWedged.Open()
	s.schedWedged = nil
	s.resumes++
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
	if vc, ok := s.clock.(*vtime.Clock); ok {
		vc.Exit(code) // a follower's leader sees the exit at this instant
	}
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
	for _, f := range s.onExit {
		f(code)
	}
	s.onExit = nil
	if s.task != nil {
		s.task.Notify()
	}
}
