package vtime

import (
	"context"
	"testing"
	"time"
)

// BenchmarkPollLoop is a Go tool's poll loop on virtual time, as testcontainers' ForHTTP
// runs it: 100 ms sleeps, each a jump of the clock. Its wall time per poll is what a jump
// costs the driver (a 15-minute startup timeout is 9,000 polls): a task's wait needs no
// quiet window.
func BenchmarkPollLoop(b *testing.B) {
	c := New(t0, Options{})
	defer c.Close()
	task := NewTask(c)
	defer task.End()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if err := task.Sleep(ctx, 100*time.Millisecond); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if got, want := c.Now().Sub(t0), time.Duration(b.N)*100*time.Millisecond; got != want {
		b.Fatalf("the clock read +%s after %d polls, want +%s", got, b.N, want)
	}
}
