package vtime

import (
	"context"
	"testing"
	"time"
)

// A task waiting at a gate is busy from the instant the gate opens: the clock does not jump
// between the opening and the task's next move, however late its goroutine runs.
func TestGateWakesItsWaitersBusy(t *testing.T) {
	c := New(t0, Options{Quiet: time.Nanosecond}) // a quiet window no goroutine can count on

	defer c.Close()
	g := NewGate()
	waiter := NewTask(c)
	ctx := WithTask(context.Background(), waiter)
	c.AfterFunc(time.Second, g.Open)
	c.AfterFunc(time.Second+time.Millisecond, func() {}) // where the clock goes next, unheld
	at := make(chan time.Duration, 1)
	go func() {
		defer waiter.End()
		if !g.Wait(ctx) {
			t.Error("the gate did not open")
		}
		time.Sleep(20 * time.Millisecond) // a goroutine the machine runs late
		at <- c.Now().Sub(t0)
	}()
	if got := <-at; got != time.Second {
		t.Fatalf("the waiter moved on at %s, want 1s (the opening)", got)
	}
	ctx2, cancel := context.WithCancel(context.Background())
	cancel()
	if !g.Wait(ctx2) {
		t.Error("an open gate made a late waiter wait")
	}
}
