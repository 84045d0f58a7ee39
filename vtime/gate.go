package vtime

import (
	"context"
	"sync"
)

// Gate is a one-shot barrier for tasks: Wait is idle until Open. Open marks every task waiting
// at the gate busy before it wakes them, so no jump falls between the opening and their work;
// a task woken by closing a plain channel has only the clock's quiet window to run, and a
// loaded machine can let time jump first (a wedged server's answer at a later instant).
type Gate struct {
	mu      sync.Mutex
	ch      chan struct{}
	open    bool
	waiters map[*Task]int
}

// NewGate returns a closed gate.
func NewGate() *Gate { return &Gate{ch: make(chan struct{}), waiters: map[*Task]int{}} }

// Wait blocks, with ctx's task idle, until the gate opens (true) or ctx ends (false).
func (g *Gate) Wait(ctx context.Context) bool {
	t := TaskFrom(ctx)
	g.mu.Lock()
	if g.open {
		g.mu.Unlock()
		return true
	}
	if t != nil {
		g.waiters[t]++
	}
	g.mu.Unlock()
	defer func() {
		if t == nil {
			return
		}
		g.mu.Lock()
		if g.waiters[t]--; g.waiters[t] <= 0 {
			delete(g.waiters, t)
		}
		g.mu.Unlock()
	}()
	opened := false
	wait := func() {
		select {
		case <-g.ch:
			opened = true
		case <-ctx.Done():
		}
	}
	if t != nil {
		t.Idle(wait)
	} else {
		wait()
	}
	return opened
}

// Open opens the gate, the waiting tasks busy from this call on. Safe to call twice.
func (g *Gate) Open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		return
	}
	g.open = true
	for t := range g.waiters {
		t.Wake()
	}
	close(g.ch)
}
