package fakeserver

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// --- health --------------------------------------------------------------------------------

func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	if methodIs(w, r, http.MethodGet) {
		empty(w, http.StatusOK)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet) {
		return
	}
	aw, _ := w.(*accessWriter)
	ctx := r.Context()
	s.mu.Lock()
	delay, why := s.healthDelay(s.offsetNow(), r.URL.Path)
	s.mu.Unlock()
	if delay > 0 {
		if aw != nil {
			aw.fault = why
		}
		if !s.sleep(ctx, delay) {
			return
		}
	}
	s.mu.Lock()
	ph := s.phase
	s.mu.Unlock()
	p := s.prof
	switch {
	case !p.HealthGatedOnStatus && r.URL.Path == "/health": // era A: "Check the health of the http server."
		empty(w, http.StatusOK)
		return
	case p.HealthGatedOnStatus && ph == phaseStarting:
		empty(w, http.StatusServiceUnavailable)
		return
	case p.HealthEnvToggle && !*s.cfg.Behavior.HealthGeneration && r.URL.Path == "/health":
		empty(w, http.StatusOK)
		return
	}
	s.generatingCheck(ctx, w, aw)
}

// generatingCheck is the 1-token health generation: 200 after the health latency with a
// prefill line when idle, or 503 after the health timeout when the scheduler does not answer.
func (s *Server) generatingCheck(ctx context.Context, w http.ResponseWriter, aw *accessWriter) {
	tic := s.clock.Now()
	s.mu.Lock()
	hung := s.schedWedged
	dead := s.schedDead
	down := s.healthDown(s.offsetNow())
	s.mu.Unlock()
	if hung != nil || dead {
		timer := s.clock.NewTimer(s.cfg.Behavior.HealthTimeout)
		defer timer.Stop()
		var gone, timedOut bool
		vtime.IdleDuring(ctx, s.clock, func() {
			select {
			case <-ctx.Done():
				gone = true
			case <-hung: // nil channel when dead: never
			case <-timer.Chan():
				timedOut = true
			}
		})
		switch {
		case gone:
			return
		case timedOut:
			s.healthFailed(tic)
			empty(w, http.StatusServiceUnavailable)
			return
		}
	}
	s.mu.Lock()
	latency := s.cfg.Behavior.HealthLatency + s.healthOverheadLocked()
	s.mu.Unlock()
	if !s.sleep(ctx, latency) {
		return
	}
	if down != "" {
		if aw != nil {
			aw.fault = down
		}
		empty(w, http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	at := s.offsetNow()
	if s.running == 0 {
		s.logLocked(at, replay.Stdout, s.prefillEvent(s.stamp(at), s.cfg.Behavior.ProbeTokens, s.cfg.Behavior.ProbeCUDAGraph))
	}
	s.lastHeartbeat = s.stamp(at)
	if s.unhealthy {
		s.unhealthy = false
		s.state(at, StateHealthy)
	}
	s.mu.Unlock()
	empty(w, http.StatusOK)
}

// healthOverheadLocked draws the time a check takes after its sleep to look at the answer and
// build the response; s.mu must be held.
func (s *Server) healthOverheadLocked() time.Duration {
	b := s.cfg.Behavior
	return b.HealthOverheadMin + time.Duration(s.healthRNG.Int64N(int64(b.HealthOverheadMax-b.HealthOverheadMin)+1))
}

func (s *Server) healthFailed(tic time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.offsetNow()
	secs := strconv.Itoa(int(s.cfg.Behavior.HealthTimeout / time.Second))
	s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindHealthFailed, Time: s.stamp(at), Fields: sglang.Fields{
		{Key: "seconds", Value: secs}, {Key: "tic", Value: tic.Format("15:04:05")},
		{Key: "last_heartbeat", Value: s.lastHeartbeat.Format("15:04:05")}}})
	if s.prof.HealthGatedOnStatus && !s.unhealthy {
		s.unhealthy = true
		s.state(at, StateUnhealthy)
	} else if !s.prof.HealthGatedOnStatus {
		s.state(at, StateUnhealthy)
	}
}
