package fakeserver

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// --- SIGTERM -------------------------------------------------------------------------------

// drainPoll is how often sigterm_watchdog looks at the remaining requests once it drains.
const drainPoll = 5 * time.Second

// ExitSIGTERM is the exit code of a process that SIGTERM ended by its default action.
const ExitSIGTERM = 143

// Terminate delivers SIGTERM as the profile's release handles it: before the tokenizer
// manager's loop runs (no generate yet) the process exits 143 at once; after, SGLang logs the
// signal, answers /health 503 from 0.5.2 on, drains at its watchdog's next look and then kills
// itself (exit 137). A second SIGTERM is logged again and changes nothing else.
func (s *Server) Terminate() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigtermLocked(s.offsetNow())
}

func (s *Server) sigtermLocked(at time.Duration) {
	if s.phase == phaseDead {
		return
	}
	s.state(at, StateSigterm)
	if s.prof.SigtermPoll <= 0 || s.tmLoopAt == nil {
		s.exitLocked(at, ExitSIGTERM, "")
		return
	}
	if s.wedged != nil { // asyncio runs the handler on its loop, which the wedge blocks
		s.sigtermPending = true
		return
	}
	s.shutdownLineLocked(at, "sigterm", "SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
	if s.gracefulExit {
		return
	}
	s.gracefulExit = true
	// The watchdog has slept SigtermPoll at a time since the loop began.
	poll := s.prof.SigtermPoll
	next := *s.tmLoopAt + ((at-*s.tmLoopAt)/poll+1)*poll
	s.after(next, s.drainLocked)
}

// drainLocked is one look of sigterm_watchdog after SIGTERM.
func (s *Server) drainLocked(at time.Duration) {
	if s.phase == phaseDead {
		return
	}
	if s.prof.UnhealthySkipsDrain && s.unhealthy {
		msg := "Signal SIGTERM received while health check failed. Exiting... remaining number of requests: " + strconv.Itoa(len(s.rids))
		if s.prof.DrainNamesRequests {
			msg = "Signal SIGTERM received while health check failed. Force exiting."
		}
		s.shutdownLineLocked(at, "drain_unhealthy", msg)
		s.exitLocked(at, 137, "")
		return
	}
	msg := "Gracefully exiting... remaining number of requests " + strconv.Itoa(len(s.rids))
	if s.prof.DrainNamesRequests {
		msg = fmt.Sprintf("Gracefully exiting... Remaining number of requests %d. Remaining requests remaining_rids=%s.", len(s.rids), pyList(s.rids))
	}
	s.shutdownLineLocked(at, "drain", msg)
	if len(s.rids) > 0 {
		s.after(at+drainPoll, s.drainLocked)
		return
	}
	s.state(at, StateDrained)
	s.exitLocked(at, 137, "")
}

// shutdownLineLocked prints one of the shutdown lines, known info message id.
func (s *Server) shutdownLineLocked(at time.Duration, id, msg string) {
	s.logLocked(at, replay.Stderr, sglang.Event{Kind: sglang.KindInfo, Time: s.stamp(at), Fields: sglang.Fields{{Key: "msg", Value: id}}, Text: msg})
}

// tokenizerLoopLocked notes the first generate: SGLang's tokenizer manager creates its loop,
// its SIGTERM handler and sigterm_watchdog then (auto_create_handle_loop).
func (s *Server) tokenizerLoopLocked(at time.Duration) {
	if s.tmLoopAt == nil {
		s.tmLoopAt = &at
	}
}

// beginRequestLocked and endRequestLocked keep the rids SGLang's rid_to_state holds, in
// insertion order: what the drain waits for.
func (s *Server) beginRequestLocked(rid string) { s.rids = append(s.rids, rid) }

func (s *Server) endRequestLocked(rid string) {
	if i := slices.Index(s.rids, rid); i >= 0 {
		s.rids = slices.Delete(s.rids, i, i+1)
	}
}

// healthRID is a health check's request id, f"HEALTH_CHECK_{time.time()}".
func healthRID(t time.Time) string {
	f := strconv.FormatFloat(float64(t.UnixNano())/1e9, 'f', -1, 64)
	if !strings.Contains(f, ".") {
		f += ".0"
	}
	return "HEALTH_CHECK_" + f
}

// pyList is a Python list of strings as repr prints it.
func pyList(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("'" + it + "'")
	}
	b.WriteByte(']')
	return b.String()
}
