package vtime

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A clock in another process (a fake server in a container) follows a leader over a stream:
// the leader treats it as one participant and asks it, before every jump, whether it is idle
// and what it waits for. Each jump is shown to the follower at once (so what it arms is
// armed from the right instant), but its timers due then fire only once the leader's own
// have fired and the leader is quiet again (as a process on the shared page acts): two
// things due at one instant happen in the same order on every run. The follower never moves
// time itself. Its request hand-overs (Started, Answered) are sent to the leader, whose Go
// clients they concern.
//
// Messages are lines, in order, on one stream:
//
//	follower → leader   H                  hello: the follower is on the clock
//	leader → follower   T <seq> <now>      time jumped to now: read it, fire nothing due yet
//	leader → follower   F <seq> <now>      the leader's timers due at now have fired: fire yours
//	leader → follower   Q <seq> 0          are you idle?
//	follower → leader   R <seq> <0|1> <next>   reply: idle, and the earliest instant it waits for (0: none)
//	follower → leader   S <addr> | A <addr>    a handler began / answered a request from client addr
//	follower → leader   X <code>           the follower's process exits with code
//
// Times are Unix nanoseconds.

// linkTimeout is how long the leader waits for a reply before it counts the follower as busy
// and asks again: a follower starved of CPU on a loaded host is slow, not idle.
const linkTimeout = 5 * time.Second

// follower is a following clock's end of the stream; c.mu guards the idle fields.
type follower struct {
	wmu sync.Mutex
	w   *bufio.Writer
	rc  io.Closer

	// guarded by the clock's mu
	idle    bool      // the driver found nothing to do at idleAct
	idleAct uint64    // the activity count it found that at
	horizon time.Time // timers due by then may fire (the leader's last Q)
}

// Follow returns a clock that reads start and moves only when the leader at the other end of
// conn (see Lead) says so, once Join has been called. Close closes conn.
func Follow(conn io.ReadWriteCloser, start time.Time, opts Options) *Clock {
	f := &follower{w: bufio.NewWriter(conn), rc: conn, horizon: start}
	c := &Clock{opts: opts.withDefaults(), now: start, published: start,
		listeners: map[string]bool{}, clients: map[string]*clientConn{},
		kick: make(chan struct{}, 1), doneCh: make(chan struct{}), link: f}
	c.wg.Add(2)
	go c.drive()
	go c.answer(bufio.NewReader(conn))
	return c
}

// Join tells the leader this follower is on the clock: until then the leader holds its time,
// so a server can set itself up (create its journal, schedule its timeline) first. It does
// nothing on a clock that is not a follower.
func (c *Clock) Join() {
	if c != nil && c.link != nil {
		c.link.send("H")
	}
}

func (f *follower) send(words ...string) {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	_, _ = f.w.WriteString(strings.Join(words, " ") + "\n")
	_ = f.w.Flush()
}

// answer serves the leader's questions until the stream ends.
func (c *Clock) answer(r *bufio.Reader) {
	defer c.wg.Done()
	go func() { <-c.doneCh; _ = c.link.rc.Close() }()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		w := strings.Fields(line)
		if len(w) != 3 {
			continue
		}
		ns, err := strconv.ParseInt(w[2], 10, 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, ns)
		switch w[0] {
		case "T":
			c.mu.Lock()
			if at.After(c.now) {
				c.now = at
			}
			c.mu.Unlock()
			c.link.send("R", w[1], "0", "0")
		case "F":
			c.mu.Lock()
			if at.After(c.now) {
				c.now = at
			}
			due := false
			if at.After(c.link.horizon) {
				c.link.horizon = at
				due = len(c.timers) > 0 && !c.timers[0].due.After(at)
			}
			if due {
				c.link.idle = false
			}
			c.mu.Unlock()
			if due {
				c.touch() // the driver fires what is due now
			}
			c.link.send("R", w[1], "0", "0")
		case "Q":
			idle, next := c.followerIdle()
			n := int64(0)
			if !next.IsZero() {
				n = next.UnixNano()
			}
			c.link.send("R", w[1], boolDigit(idle), strconv.FormatInt(n, 10))
		}
	}
}

// followerIdle reports whether nothing here can make progress until the leader moves time or
// lets a due timer fire, and the earliest instant anything waits for (it may be now: a timer
// that waits for F).
func (c *Clock) followerIdle() (bool, time.Time) {
	c.mu.Lock()
	act := c.act.Load()
	ok := !c.closed && c.link.idle && c.link.idleAct == act && c.busy == 0
	now := c.now
	var next time.Time
	if len(c.timers) > 0 {
		next = c.timers[0].due
	}
	c.mu.Unlock()
	if !ok {
		return false, time.Time{}
	}
	pnext, idle := c.participantsIdle()
	if !idle || c.act.Load() != act {
		return false, time.Time{}
	}
	if !pnext.IsZero() {
		if !pnext.After(now) {
			return false, time.Time{} // a participant has yet to notice the instant it waits for
		}
		if next.IsZero() || pnext.Before(next) {
			next = pnext
		}
	}
	return true, next
}

// Exit tells the leader that this follower's process ends with code, so its tool sees the
// exit at the virtual instant it happened rather than when Docker reports it. It does
// nothing on a clock that is not a follower.
func (c *Clock) Exit(code int) {
	if c != nil && c.link != nil {
		c.link.send("X", strconv.Itoa(code))
	}
}

// handOver sends a hand-over of the request from client addr to the leader; it reports
// whether c is a follower.
func (c *Clock) handOver(kind, addr string) bool {
	if c.link == nil {
		return false
	}
	c.link.send(kind, addr)
	return true
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// Link is a leader's end of a follower's stream: a Participant of the leader's clock.
type Link struct {
	c      *Clock
	wmu    sync.Mutex
	w      *bufio.Writer
	rc     io.Closer
	detach func()
	reply  chan [3]int64 // seq, idle, next
	done   chan struct{}
	exit   chan struct{} // closed when the follower announces its exit
	joined chan struct{} // closed at the follower's hello
	// exitHold holds the clock from the announced exit until its consumer has seen it
	// (ExitSeen) or the link is closed, so a tool watching the server wakes at the instant
	// of the exit. No wall-time bound releases it: a consumer starved of CPU for a second
	// on a loaded host saw the exit after the clock had moved on (compose's next check,
	// 22 s late, in a container matrix).
	exitHold func()
	// procBusy, when set, says whether the follower's process is at work its clock cannot
	// see yet (see WatchProcess).
	procBusy atomic.Pointer[func() bool]

	mu      sync.Mutex
	seq     int64
	hello   bool
	helloAt time.Time // the clock's time at the hello
	code    int
	exited  bool
	dead    bool
	deadErr error
}

// Lead attaches the follower at the other end of conn to c: until it says hello c is held,
// then c waits for it before every jump. addr is where the follower's server listens (a Go
// client's request to it is handed over like one to a server of c's own). The link ends
// when the stream does; Close ends it early.
func (c *Clock) Lead(conn io.ReadWriteCloser, addr string) *Link {
	l := &Link{c: c, w: bufio.NewWriter(conn), rc: conn, reply: make(chan [3]int64, 1), done: make(chan struct{}), exit: make(chan struct{}), joined: make(chan struct{})}
	c.mu.Lock()
	c.listeners[addr] = true
	c.links = append(c.links, l)
	c.mu.Unlock()
	l.detach = c.Attach(l)
	go l.read(bufio.NewReader(conn), addr)
	return l
}

func (l *Link) read(r *bufio.Reader, addr string) {
	defer func() {
		l.c.mu.Lock()
		delete(l.c.listeners, addr)
		for i, x := range l.c.links {
			if x == l {
				l.c.links = append(l.c.links[:i:i], l.c.links[i+1:]...)
				break
			}
		}
		l.c.mu.Unlock()
		l.mu.Lock()
		l.dead = true
		l.mu.Unlock()
		close(l.done)
		l.c.touch()
	}()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			if err != io.EOF {
				l.mu.Lock()
				l.deadErr = err
				l.mu.Unlock()
			}
			return
		}
		w := strings.Fields(line)
		if len(w) == 0 {
			continue
		}
		switch {
		case w[0] == "H":
			now := l.c.Now() // held until the hello: the instant the follower joined
			l.mu.Lock()
			if !l.hello {
				l.hello, l.helloAt = true, now
				close(l.joined)
			}
			l.mu.Unlock()
			l.c.touch()
		case w[0] == "R" && len(w) == 4:
			seq, e1 := strconv.ParseInt(w[1], 10, 64)
			next, e2 := strconv.ParseInt(w[3], 10, 64)
			if e1 == nil && e2 == nil {
				select {
				case <-l.reply: // a stale reply nobody waits for
				default:
				}
				idle := int64(0)
				if w[2] == "1" {
					idle = 1
				}
				l.reply <- [3]int64{seq, idle, next}
			}
		case w[0] == "S" && len(w) == 2:
			if cc := l.c.client(w[1]); cc != nil {
				cc.t.taken()
			}
		case w[0] == "A" && len(w) == 2:
			if cc := l.c.client(w[1]); cc != nil {
				cc.answered()
			}
		case w[0] == "X" && len(w) == 2:
			if code, err := strconv.Atoi(w[1]); err == nil {
				l.mu.Lock()
				if !l.exited {
					l.code, l.exited = code, true
					l.exitHold = l.c.Hold()
					close(l.exit)
				}
				l.mu.Unlock()
			}
		}
	}
}

// show tells the follower time jumped to now, and waits until it has read it.
func (l *Link) show(now time.Time) { l.ask("T", now) }

// fire lets the follower fire its timers due by now, once the leader's have fired.
func (l *Link) fire(now time.Time) { l.ask("F", now) }

// Idle implements Participant: it asks the follower, once its process is quiet (see
// WatchProcess).
func (l *Link) Idle() (bool, time.Time) {
	if busy := l.procBusy.Load(); busy != nil && (*busy)() {
		return false, time.Time{}
	}
	return l.ask("Q", time.Unix(0, 0))
}

// WatchProcess makes Idle ask busy before it asks the follower: whether the follower's
// process is at work its clock does not know of yet. A signal another process sends it (a
// launcher's SIGTERM) is such work until the server's handler runs: the kernel holds it
// pending, then the runtime's threads hand it on, and only then does the follower's clock
// see it. busy is asked first, so work it sees leave the process reaches the follower
// before the follower is asked.
func (l *Link) WatchProcess(busy func() bool) { l.procBusy.Store(&busy) }

// Stage implements Staged: the follower's server hands log lines and its exit to the
// leader's participants.
func (l *Link) Stage() int { return StageFollowers }

// ask sends a question and waits for its reply.
func (l *Link) ask(kind string, now time.Time) (bool, time.Time) {
	l.mu.Lock()
	if l.dead {
		l.mu.Unlock()
		return true, time.Time{}
	}
	if !l.hello {
		l.mu.Unlock()
		return false, time.Time{}
	}
	l.seq++
	seq := l.seq
	l.mu.Unlock()
	l.wmu.Lock()
	_, err := fmt.Fprintf(l.w, "%s %d %d\n", kind, seq, now.UnixNano())
	if err == nil {
		err = l.w.Flush()
	}
	l.wmu.Unlock()
	timeout := time.NewTimer(linkTimeout)
	defer timeout.Stop()
	if err != nil {
		// The follower is gone, but what it sent before it went (its exit, which holds the
		// clock) may still be unread: idle only once read has reached the stream's end. Idle
		// at once let the clock jump past a server's exit to the tool's next probe (a
		// container's exit seen 4-19 s late under load).
		select {
		case <-l.done:
			return true, time.Time{}
		case <-timeout.C:
			return false, time.Time{}
		}
	}
	for {
		select {
		case r := <-l.reply:
			if r[0] != seq {
				continue
			}
			if r[1] != 1 {
				return false, time.Time{}
			}
			if r[2] == 0 {
				return true, time.Time{}
			}
			return true, time.Unix(0, r[2])
		case <-l.done:
			return true, time.Time{}
		case <-timeout.C:
			return false, time.Time{}
		}
	}
}

// WaitExit waits until the follower has announced its exit or its stream has ended, and
// returns the announced code; announced is false when the stream ended without one. err is
// ctx's error when ctx ended first. Use it rather than a select over ExitAnnounced and Done:
// the stream carries the exit before its end, and once both are closed a select picks
// either at random, losing the code (and the instant of the exit) half the time.
func (l *Link) WaitExit(ctx context.Context) (code int, announced bool, err error) {
	select {
	case <-l.exit:
	case <-l.done:
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
	code, announced = l.Exited()
	return code, announced, nil
}

// Exited reports the exit code the follower announced before its process ended. Once Done
// is closed it is final.
func (l *Link) Exited() (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.code, l.exited
}

// Joined is closed when the follower has joined the clock (see Join).
func (l *Link) Joined() <-chan struct{} { return l.joined }

// JoinedAt is the clock's time when the follower joined; false before it has. Read it
// rather than the clock after Joined: once the follower is on the clock nothing holds it,
// and the clock may have moved by the time a goroutine woken by Joined runs.
func (l *Link) JoinedAt() (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.helloAt, l.hello
}

// Done is closed when the follower's stream ends.
func (l *Link) Done() <-chan struct{} { return l.done }

// ExitAnnounced is closed when the follower announces its exit (Exited then has the code):
// at the virtual instant of the exit, before its process is gone.
func (l *Link) ExitAnnounced() <-chan struct{} { return l.exit }

// ExitSeen releases the hold the announced exit took: whoever reports the exit to the
// tool has done so. The one who waits for the exit (WaitExit) must call it, or Close; it is
// safe to call at any time and more than once.
func (l *Link) ExitSeen() {
	l.mu.Lock()
	release := l.exitHold
	l.exitHold = nil
	l.mu.Unlock()
	if release != nil {
		release()
	}
}

// Close detaches the follower and closes the stream.
func (l *Link) Close() error {
	l.ExitSeen()
	l.detach()
	return l.rc.Close()
}
