package vtime

import (
	"time"
)

// timer is one scheduled wake-up: a channel timer or ticker (ch), an AfterFunc (fn) or a
// Task's wait (task).
type timer struct {
	c      *Clock
	due    time.Time
	seq    uint64 // arming order: timers due at one instant fire in the order they were armed
	idx    int    // position in the heap, -1 when not scheduled
	armed  bool
	ch     chan time.Time
	fn     func()
	task   *Task
	period time.Duration // tickers
	wakes  *Task         // a channel timer's owner, marked busy at each fire (Task.NewTimer)

	firedWall time.Time // wall time of the last delivery on ch
}

// Chan implements clockwork.Timer.
func (t *timer) Chan() <-chan time.Time { return t.ch }

// Stop implements clockwork.Timer: after it returns no value of the old arming is received.
func (t *timer) Stop() bool {
	t.c.mu.Lock()
	was := t.c.disarmLocked(t)
	t.c.mu.Unlock()
	t.c.touch()
	return was
}

// Reset implements clockwork.Timer.
func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	was := t.c.disarmLocked(t)
	t.c.mu.Unlock()
	t.c.arm(t, d)
	return was
}

// ticker adapts a periodic timer to clockwork.Ticker.
type ticker struct{ t *timer }

func (k ticker) Chan() <-chan time.Time { return k.t.ch }
func (k ticker) Stop()                  { k.t.Stop() }
func (k ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("vtime: non-positive interval for Ticker.Reset")
	}
	k.t.c.mu.Lock()
	k.t.c.disarmLocked(k.t)
	k.t.period = d
	k.t.c.mu.Unlock()
	k.t.c.arm(k.t, d)
}

// timerHeap orders timers by (due, seq).
type timerHeap []*timer

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].idx, h[j].idx = i, j
}
func (h *timerHeap) Push(x any) {
	t := x.(*timer)
	t.idx = len(*h)
	*h = append(*h, t)
}
func (h *timerHeap) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	t.idx = -1
	return t
}
