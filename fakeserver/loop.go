package fakeserver

import (
	"container/heap"
	"context"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

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
