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
	"github.com/incident-replay/incident-replay/vtime"
)

// Every kind's behaviour is in package fault; the server asks each fault of the run for the
// effects it has (the fault.Armer, fault.Answerer ... interfaces) and lends it faultHost.

// armFault starts f's clock at trigger (0, or the offset of the line that matched); s.mu is
// held. Process-level faults queue their actions; request-level faults are asked per request.
func (s *Server) armFault(f *fault.Live, trigger time.Duration) {
	f.Armed, f.Trigger = true, trigger
	if a, ok := f.Fault.(fault.Armer); ok {
		a.Arm(f, faultHost{s})
	}
}

// armAfterLine arms the faults waiting for a line that contains their after_line; s.mu is held.
func (s *Server) armAfterLine(at time.Duration, line string) {
	for _, f := range s.faults {
		if f.AfterLine != "" && !f.Armed && strings.Contains(line, f.AfterLine) {
			s.armFault(f, at)
		}
	}
}

// faultHost is the server as a fault's live effect sees it (fault.Server); s.mu is held.
type faultHost struct{ s *Server }

func (h faultHost) After(at time.Duration, f func(time.Duration)) { h.s.after(at, f) }
func (h faultHost) Log(at time.Duration, stream replay.Stream, ev sglang.Event) {
	h.s.logLocked(at, stream, ev)
}
func (h faultHost) Stamp(at time.Duration) time.Time { return h.s.stamp(at) }
func (h faultHost) SchedulerRanks() []sglang.Rank    { return h.s.schedRanks() }
func (h faultHost) Bound() bool                      { return h.s.phase != phaseLoading }
func (h faultHost) Dead() bool                       { return h.s.phase == phaseDead }
func (h faultHost) Exit(at time.Duration, code int, cause fault.Kind) {
	h.s.exitLocked(at, code, string(cause))
}
func (h faultHost) Wedge(at time.Duration)           { h.s.wedgeLocked(at) }
func (h faultHost) Unwedge(at time.Duration)         { h.s.unwedgeLocked(at) }
func (h faultHost) WedgeScheduler(at time.Duration)  { h.s.wedgeSchedulerLocked(at) }
func (h faultHost) ResumeScheduler(at time.Duration) { h.s.resumeSchedulerLocked(at) }
func (h faultHost) SchedulerDead(at time.Duration) {
	h.s.schedulerDeadLocked(at, h.s.prof.TeardownOnChildCrash)
}

// answer asks the faults whether one of them answers a request to path in the server's
// place, consuming one of its hits; s.mu must be held.
func (s *Server) answer(at time.Duration, path string) (fault.Answer, fault.Kind, bool) {
	for _, f := range s.faults {
		if a, ok := f.Fault.(fault.Answerer); ok {
			if ans, hit := a.Answer(f, at, path); hit {
				return ans, f.Kind, true
			}
		}
	}
	return fault.Answer{}, "", false
}

// healthDelay sums the delays the faults in force add to a health check of path, and names
// the last fault that added one; s.mu must be held.
func (s *Server) healthDelay(at time.Duration, path string) (time.Duration, string) {
	var d time.Duration
	why := ""
	for _, f := range s.faults {
		if h, ok := f.Fault.(fault.HealthDelayer); ok {
			if x := h.HealthDelay(f, at, path); x > 0 {
				d += x
				why = string(f.Kind)
			}
		}
	}
	return d, why
}

// healthDown names a fault that holds health down at offset at ("" when none); s.mu must be
// held.
func (s *Server) healthDown(at time.Duration) string {
	for _, f := range s.faults {
		if h, ok := f.Fault.(fault.HealthDowner); ok && h.HealthDown(f, at) {
			return string(f.Kind)
		}
	}
	return ""
}

// streamReset returns after how many chunks a new stream on path is reset (0: never), and
// the fault that resets it; s.mu must be held.
func (s *Server) streamReset(at time.Duration, path string) (int, string) {
	for _, f := range s.faults {
		if r, ok := f.Fault.(fault.StreamResetter); ok {
			if n, hit := r.ResetAfter(f, at, path); hit {
				return n, string(f.Kind)
			}
		}
	}
	return 0, ""
}

// portHolder returns the fault that puts another process on the port, if any.
func (s *Server) portHolder() (*fault.Live, fault.PortHolder) {
	for _, f := range s.faults {
		if h, ok := f.Fault.(fault.PortHolder); ok {
			return f, h
		}
	}
	return nil, nil
}

// warmupTaker returns the fault that takes over the warmup, if any.
func (s *Server) warmupTaker() (*fault.Live, fault.WarmupTaker) {
	for _, f := range s.faults {
		if w, ok := f.Fault.(fault.WarmupTaker); ok {
			return f, w
		}
	}
	return nil, nil
}

// startHolder puts "another process" on the port before the timeline binds: an HTTP server
// that answers every request with the holder's status (stale_listener), or a non-HTTP owner
// that accepts and closes (errno98).
func (s *Server) startHolder(f *fault.Live, h fault.PortHolder, ln net.Listener) error {
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", net.JoinHostPort(s.args.Host, strconv.Itoa(s.port))); err != nil {
			return err
		}
	}
	// The holder is a process of its own on a real host, answering at once; here it is on the
	// run's clock like the server, so no jump falls between a request to it and its answer.
	vc, onClock := s.clock.(*vtime.Clock)
	if onClock {
		ln = vtime.Listen(ln, vc)
	}
	s.holderLn = ln
	if status := h.HolderStatus(f.Spec); status != 0 {
		kind := string(f.Kind)
		s.holder = &http.Server{ReadHeaderTimeout: ReadHeaderTimeout, MaxHeaderBytes: MaxHeaderBytes,
			Handler: vtime.Handle(s.clock, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				s.journal.add(Record{At: s.offsetNow(), Type: RecRequest, Method: r.Method, Route: r.URL.Path,
					Status: status, Client: r.RemoteAddr, Fault: kind})
				w.Header().Set("Content-Length", "0")
				w.WriteHeader(status)
			}))}
		if onClock {
			vtime.Serve(s.holder)
		}
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
