package fakeserver

import (
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

// healthCheck is one health request as SGLang's handler runs it (SGLang c193a52fa
// python/sglang/srt/entrypoints/http_server.py health_generate): the gates, then a 1-token
// generate and a poll every second for the scheduler's answer until the health timeout. It
// runs on the server's action loop, not on the request's goroutine: uvicorn does not cancel a
// handler whose client disconnected, so a check whose client left still finishes, logs and
// sets the server's status; only its answer goes nowhere.
type healthCheck struct {
	path    string
	rid     string
	tic     time.Duration
	resumes uint64 // s.resumes at tic: the scheduler answered since if it changed
	down    string // the fault holding health down when the check began
	task    *vtime.Task
	answer  chan healthAnswer // buffered: the loop never waits for the handler
}

type healthAnswer struct {
	status int
	fault  string // the fault that decided the answer, for the journal
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet) {
		return
	}
	ctx := r.Context()
	c := &healthCheck{path: r.URL.Path, task: vtime.TaskFrom(ctx), answer: make(chan healthAnswer, 1)}
	s.mu.Lock()
	at := s.offsetNow()
	// slow_health faults delay the whole handler, gates included.
	if delay, why := s.healthDelay(at, c.path); delay > 0 {
		if aw, ok := w.(*accessWriter); ok {
			aw.fault = why
		}
		s.after(at+delay, func(at time.Duration) { s.beginCheckLocked(c, at) })
	} else {
		s.beginCheckLocked(c, at)
	}
	s.mu.Unlock()
	var (
		a   healthAnswer
		got bool
	)
	// A gate answers at once, before the handler is idle: taken idle, the answer would wait
	// for a goroutine the machine may keep off the CPU past the clock's quiet window, and the
	// clock could jump to the client's timeout first.
	select {
	case a = <-c.answer:
		got = true
	default:
		vtime.IdleDuring(ctx, s.clock, func() {
			if testHookHealthIdle != nil {
				testHookHealthIdle()
			}
			select {
			case a = <-c.answer:
				got = true
			case <-ctx.Done(): // the client left or the process died; the check goes on without it
			}
		})
	}
	if !got {
		return
	}
	if aw, ok := w.(*accessWriter); ok && a.fault != "" {
		aw.fault = a.fault
	}
	empty(w, a.status)
}

// testHookHealthIdle runs in a health handler that has gone idle, before it receives (tests
// keep the goroutine off the CPU there, as a loaded machine can).
var testHookHealthIdle func()

// reply hands the check's answer to its handler, busy from now on virtual time.
func (c *healthCheck) reply(status int, fault string) {
	c.task.Wake()
	c.answer <- healthAnswer{status: status, fault: fault}
}

// beginCheckLocked runs the handler's gates at offset at and starts the generating check when
// they let it through; s.mu is held.
func (s *Server) beginCheckLocked(c *healthCheck, at time.Duration) {
	p := s.prof
	switch {
	case p.ShutdownHealth503 && s.gracefulExit:
		s.shutdownLineLocked(at, "shutdown_health", "Health check request received during shutdown. Returning 503.")
		c.reply(http.StatusServiceUnavailable, "")
		return
	case !p.HealthGatedOnStatus && c.path == "/health": // era A: "Check the health of the http server."
		c.reply(http.StatusOK, "")
		return
	case p.HealthGatedOnStatus && s.phase == phaseStarting:
		c.reply(http.StatusServiceUnavailable, "")
		return
	case p.HealthEnvToggle && !*s.cfg.Behavior.HealthGeneration && c.path == "/health":
		c.reply(http.StatusOK, "")
		return
	}
	c.tic, c.resumes, c.down, c.rid = at, s.resumes, s.healthDown(at), healthRID(s.stamp(at))
	s.tokenizerLoopLocked(at)
	s.beginRequestLocked(c.rid)
	s.after(at+s.cfg.Behavior.HealthLatency, func(at time.Duration) { s.pollCheckLocked(c, at) })
}

// pollCheckLocked is one wake-up of the check's poll: it passes once the scheduler has
// answered since tic, fails when the health timeout has run out, else polls again in 1 s.
func (s *Server) pollCheckLocked(c *healthCheck, at time.Duration) {
	answered := s.resumes != c.resumes || (s.schedWedged == nil && !s.schedDead)
	switch {
	case answered && c.down != "":
		s.endRequestLocked(c.rid)
		c.reply(http.StatusServiceUnavailable, c.down)
	case answered:
		s.after(at+s.healthOverheadLocked(), func(at time.Duration) { s.checkPassedLocked(c, at) })
	case at >= c.tic+s.cfg.Behavior.HealthTimeout:
		s.checkFailedLocked(c, at)
	default:
		s.after(at+time.Second, func(at time.Duration) { s.pollCheckLocked(c, at) })
	}
}

// checkPassedLocked: the 1-token generate ran (its prefill line unless the scheduler is busy
// with other requests), the status is Up again, 200.
func (s *Server) checkPassedLocked(c *healthCheck, at time.Duration) {
	if s.running == 0 {
		s.logLocked(at, replay.Stdout, s.prefillEvent(s.stamp(at), s.cfg.Behavior.ProbeTokens, s.cfg.Behavior.ProbeCUDAGraph))
	}
	s.lastHeartbeat = s.stamp(at)
	s.endRequestLocked(c.rid)
	if s.unhealthy {
		s.unhealthy = false
		s.state(at, StateHealthy)
	}
	c.reply(http.StatusOK, "")
}

// checkFailedLocked: no answer within the health timeout. SGLang logs the failure and sets
// ServerStatus.UnHealthy (from v0.5.2; v0.4.6 only logs), then answers 503.
func (s *Server) checkFailedLocked(c *healthCheck, at time.Duration) {
	secs := strconv.Itoa(int(s.cfg.Behavior.HealthTimeout / time.Second))
	s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindHealthFailed, Time: s.stamp(at), Fields: sglang.Fields{
		{Key: "seconds", Value: secs}, {Key: "tic", Value: s.stamp(c.tic).Format("15:04:05")},
		{Key: "last_heartbeat", Value: s.lastHeartbeat.Format("15:04:05")}}})
	s.endRequestLocked(c.rid)
	if s.prof.HealthGatedOnStatus && !s.unhealthy {
		s.unhealthy = true
		s.state(at, StateUnhealthy)
	} else if !s.prof.HealthGatedOnStatus {
		s.state(at, StateUnhealthy)
	}
	c.reply(http.StatusServiceUnavailable, "")
}

// healthOverheadLocked draws the time a check takes after its sleep to look at the answer and
// build the response; s.mu must be held.
func (s *Server) healthOverheadLocked() time.Duration {
	b := s.cfg.Behavior
	return b.HealthOverheadMin + time.Duration(s.healthRNG.Int64N(int64(b.HealthOverheadMax-b.HealthOverheadMin)+1))
}
