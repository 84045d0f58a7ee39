package fakeserver

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// activeFault is a fault spec with its runtime state: when it triggered and how many
// requests or streams it has hit (guarded by Server.mu).
type activeFault struct {
	fault.Spec
	armed   bool
	trigger time.Duration
	hits    int
}

// armFault starts f's clock at trigger (0, or the offset of the line that matched).
// Process-level faults queue their actions; request-level faults are consulted per request.
func (s *Server) armFault(f *activeFault, trigger time.Duration) {
	f.armed, f.trigger = true, trigger
	start := trigger + f.At
	switch f.Kind {
	case fault.Crash:
		s.after(start, func(at time.Duration) { s.crashLocked(at, f.Spec) })
	case fault.Wedge:
		s.after(start, s.wedgeLocked)
		if f.For > 0 {
			s.after(start+f.For, s.unwedgeLocked)
		}
	case fault.WedgeScheduler:
		s.after(start, s.wedgeSchedulerLocked)
		if f.For > 0 {
			s.after(start+f.For, s.resumeSchedulerLocked)
		}
	case fault.SchedulerDead:
		s.after(start, func(at time.Duration) { s.schedulerDeadLocked(at, s.prof.TeardownOnChildCrash) })
	}
}

// crashLocked: a scheduler exception, the launcher's SIGQUIT handler, then the exit code.
func (s *Server) crashLocked(at time.Duration, f fault.Spec) {
	if s.phase == phaseDead {
		return
	}
	t := s.stamp(at)
	msg := f.Message
	if msg == "" {
		msg = "RuntimeError: injected crash (incident-replay fault)"
	}
	s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindSchedulerExc, Time: t, Ranks: s.schedRanks(), Text: "Traceback (most recent call last):"})
	exc, text, _ := strings.Cut(msg, ": ")
	s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindException, Fields: sglang.Fields{{Key: "exc", Value: exc}}, Text: text})
	if s.phase == phaseLoading {
		s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindSigquitChild, Time: t})
	} else {
		s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindSigquitReceived, Time: t,
			Text: "SIGQUIT received. signum=None, frame=None. It usually means one child failed."})
	}
	s.exitLocked(at, f.ExitCode(), string(fault.Crash))
}

// faultOf returns the first fault of kind k.
func (s *Server) faultOf(k fault.Kind) *activeFault {
	for _, f := range s.faults {
		if f.Kind == k {
			return f
		}
	}
	return nil
}

// activeAt reports whether f is in force at offset at; s.mu must be held.
func (f *activeFault) activeAt(at time.Duration) bool {
	return f.armed && f.Active(f.trigger, at)
}

// requestFault picks the fault that shapes a request to path, consuming one of its hits;
// s.mu must be held.
func (s *Server) requestFault(at time.Duration, path string) *activeFault {
	for _, f := range s.faults {
		if f.Kind != fault.FailRequests || !f.activeAt(at) {
			continue
		}
		if f.Route != "" && f.Route != path {
			continue
		}
		if f.Count > 0 && f.hits >= f.Count {
			continue
		}
		f.hits++
		return f
	}
	return nil
}

// healthDelay sums slow_health latencies in force for path; s.mu must be held.
func (s *Server) healthDelay(at time.Duration, path string) (time.Duration, string) {
	var d time.Duration
	why := ""
	for _, f := range s.faults {
		if f.Kind != fault.SlowHealth || !f.activeAt(at) {
			continue
		}
		if f.Route != "" && f.Route != path {
			continue
		}
		if f.Route == "" && path != "/health" && path != "/health_generate" {
			continue
		}
		d += f.Latency
		why = string(fault.SlowHealth)
	}
	return d, why
}

// flapDown reports whether a flap holds health down at offset at; s.mu must be held.
func (s *Server) flapDown(at time.Duration) bool {
	for _, f := range s.faults {
		if f.Kind != fault.Flap || !f.activeAt(at) {
			continue
		}
		phase := (at - f.trigger - f.At) / f.Period
		if phase%2 == 1 {
			return true
		}
	}
	return false
}

// streamReset returns after how many chunks a new stream on path is reset (0: never);
// s.mu must be held.
func (s *Server) streamReset(at time.Duration, path string) int {
	for _, f := range s.faults {
		if f.Kind != fault.ResetStream || !f.activeAt(at) || (f.Route != "" && f.Route != path) {
			continue
		}
		if f.Count > 0 && f.hits >= f.Count {
			continue
		}
		f.hits++
		if f.Chunks == 0 {
			return fault.DefaultResetAfterChunks
		}
		return f.Chunks
	}
	return 0
}

// startHolder puts "another process" on the port before the timeline binds: a stale SGLang
// that answers every request (stale_listener) or a non-HTTP owner that accepts and closes
// (errno98).
func (s *Server) startHolder() error {
	ln, err := net.Listen("tcp", net.JoinHostPort(s.args.Host, strconv.Itoa(s.port)))
	if err != nil {
		return err
	}
	s.holderLn = ln
	if f := s.faultOf(fault.StaleListener); f != nil {
		status := f.HTTPStatus()
		s.holder = &http.Server{ReadHeaderTimeout: ReadHeaderTimeout, MaxHeaderBytes: MaxHeaderBytes,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.journal.add(Record{At: s.offsetNow(), Type: RecRequest, Method: r.Method, Route: r.URL.Path,
					Status: status, Client: r.RemoteAddr, Fault: string(fault.StaleListener)})
				w.Header().Set("Content-Length", "0")
				w.WriteHeader(status)
			})}
		go func() { _ = s.holder.Serve(ln) }()
		return nil
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return nil
}
