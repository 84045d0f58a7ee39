package vtime

import (
	"container/heap"
	"slices"
	"time"
)

// drive is the clock's one goroutine: it waits until nothing can make progress without time
// moving, then moves time to the earliest instant anyone waits for and fires what is due.
func (c *Clock) drive() {
	defer c.wg.Done()
	wait := time.NewTimer(time.Hour)
	defer wait.Stop()
	pause := func(d time.Duration) bool {
		wait.Reset(d)
		select {
		case <-c.doneCh:
			return false
		case <-c.kick:
		case <-wait.C:
		}
		return true
	}
	var (
		lastAct    uint64
		quietSince = time.Now()
		quietFor   uint64        // c.unseen when the last quiet window was seen through
		backoff    = c.opts.Poll // grows while a participant stays busy
	)
	for {
		unseen := c.unseen.Load() // before act: a hand-over after this is seen in the next pass
		act := c.act.Load()
		wall := time.Now()
		if act != lastAct {
			lastAct, quietSince = act, wall
		}
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		working := c.busy > 0 // a release kicks the driver
		pending := !working && c.pendingLocked(wall)
		if pending {
			quietSince = wall // a value just received is a goroutine that now works
		}
		nparts := len(c.parts)
		// A participant that is not exact (see exactParticipant) may be about to act on
		// what a call or a timer's fire did. A follower's steps hand work to the leader's
		// processes and containers it cannot see. A clock that has not moved yet is in a
		// run's set-up (a server started, then its client's task made), not all on the clock
		// yet. Each waits out the window after every activity (see advance for the steps
		// that are none).
		inexact := c.link != nil || c.jumps == 0 ||
			slices.ContainsFunc(c.parts, func(a attached) bool { return !a.exact })
		c.mu.Unlock()
		if working || pending {
			d := time.Hour
			if pending {
				d = c.opts.Poll
			}
			if !pause(d) {
				return
			}
			continue
		}
		if inexact || unseen != quietFor {
			if left := c.opts.Quiet - wall.Sub(quietSince); left > 0 {
				if !pause(left) {
					return
				}
				continue
			}
			quietFor = unseen
		}
		next, idle := c.participantsIdle()
		if !idle {
			// A process group starting a curl is busy for milliseconds: look again soon, then
			// less often, so that a hundred runs do not spend the cores asking.
			if !pause(backoff) {
				return
			}
			backoff = min(2*backoff, c.opts.MaxPoll)
			continue
		}
		backoff = c.opts.Poll
		if !c.advance(lastAct, next) {
			// Nothing is due: wait for a new timer or a participant to register one.
			d := time.Hour
			if nparts > 0 && c.link == nil { // a follower's participants are asked afresh by each question
				d = c.opts.Poll
			}
			if !pause(d) {
				return
			}
		}
	}
}

// pendingLocked reports whether a fired channel timer may still wake a goroutine: its value
// was not received yet, and it was delivered less than Abandon ago. Received values are
// dropped from the list; c.mu must be held.
func (c *Clock) pendingLocked(wall time.Time) bool {
	pending, received := false, false
	keep := c.fired[:0]
	for _, t := range c.fired {
		switch {
		case len(t.ch) == 0:
			received = true
		case wall.Sub(t.firedWall) < c.opts.Abandon:
			pending = true
			keep = append(keep, t)
		}
	}
	for i := len(keep); i < len(c.fired); i++ {
		c.fired[i] = nil
	}
	c.fired = keep
	return pending || received
}

// participantsIdle asks every attached participant, in stage order (see Staged); c.mu is not
// held (a participant may read /proc).
func (c *Clock) participantsIdle() (next time.Time, idle bool) {
	c.mu.Lock()
	parts := slices.Clone(c.parts)
	c.mu.Unlock()
	for _, a := range parts {
		ok, n := a.p.Idle()
		if !ok {
			return time.Time{}, false
		}
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	return next, true
}

// advance takes one step, unless anything happened since the driver saw act: it fires the
// first Go timer due now (one per step, in arming order, so that two things due at one
// instant happen one after the other, each once the run is quiet again: a probe's 1 s
// timeout and a 1 s health check never race), or, once none is due now, shows followers
// (other processes' view of the clock) the current time, or moves time to the earliest of
// the next timer and next (a participant's deadline). It reports whether there was anything
// to do. Only a step that can wake what the clock does not see at once is a hand-off, with
// a quiet window after it: a Go timer's fire and a follower clock's steps. A jump shows other
// processes a new instant and wakes nothing (OnShow), and a showing ends waits that their
// participants report as busy until they have run (OnAdvance), so neither is activity: the
// run was quiet before it, and the next step waits for no new window (a Go tool's 100 ms
// poll took three windows instead of one; a founding loop's probe, two fewer).
func (c *Clock) advance(act uint64, next time.Time) bool {
	c.mu.Lock()
	if c.closed || c.busy > 0 || c.act.Load() != act {
		c.mu.Unlock()
		return true // look again
	}
	fireBy := c.now
	if c.link != nil {
		fireBy = c.link.horizon // the leader says when a follower's timers at now may fire
	}
	if len(c.timers) > 0 && !c.timers[0].due.After(fireBy) {
		t := heap.Pop(&c.timers).(*timer)
		f := c.fireLocked(t, time.Now())
		c.mu.Unlock()
		c.runFunc(f)
		c.touch()
		return true
	}
	if len(c.links) > 0 && c.shown.Before(c.now) {
		// Followers' timers due now fire after this clock's, and before processes on the
		// shared page act: in the order an in-process server's would.
		now := c.now
		c.shown = now
		links := c.links
		c.mu.Unlock()
		for _, l := range links {
			l.fire(now)
		}
		c.handOff()
		return true
	}
	if c.published.Before(c.now) {
		now := c.now
		c.published = now
		follow := c.onAdvance
		c.mu.Unlock()
		for _, f := range follow {
			f(now)
		}
		return true
	}
	if len(c.timers) > 0 && (next.IsZero() || c.timers[0].due.Before(next)) {
		next = c.timers[0].due
	}
	if c.link != nil {
		// A follower does not move time: it is idle at act, and the leader moves it.
		c.link.idle, c.link.idleAct = true, act
		c.mu.Unlock()
		return false
	}
	if next.IsZero() || !next.After(c.now) {
		// Nothing is due, or a participant waits for an instant already shown to it (it
		// has not noticed yet): wait for it.
		c.mu.Unlock()
		return false
	}
	c.now = next
	c.jumps++
	links, shows := c.links, c.onShow
	c.mu.Unlock()
	for _, l := range links {
		l.show(next)
	}
	for _, f := range shows {
		f(next)
	}
	if len(links) > 0 {
		c.handOff()
	}
	return true
}
