package vtime

import (
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

// TestTaskTimerHoldsItsTask: a goroutine idle in Task.Idle that a timer wakes may stay off the
// CPU for longer than the clock's quiet window before it acts (a loaded machine). With the
// task's own timer the clock waits for it; with a plain channel timer it jumps to the next
// instant due meanwhile, and the goroutine reads that instant instead of its own.
func TestTaskTimerHoldsItsTask(t *testing.T) {
	for _, tc := range []struct {
		name  string
		timer func(*Task, *Clock) clockwork.Timer
		exact bool
	}{
		{"task timer", func(k *Task, c *Clock) clockwork.Timer { return TaskTimer(k, c, time.Minute) }, true},
		{"plain channel timer", func(_ *Task, c *Clock) clockwork.Timer { return c.NewTimer(time.Minute) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock(t)
			task := NewTask(c)             // on the clock before any timer is armed
			later := c.NewTimer(time.Hour) // the next instant due after the tick
			defer later.Stop()
			tm := tc.timer(task, c)
			defer tm.Stop()
			task.Idle(func() {
				<-tm.Chan()
				time.Sleep(20 * time.Millisecond) // 10x the quiet window: preempted after the receive
			})
			got := c.Now().Sub(epoch)
			task.End()
			if tc.exact && got != time.Minute {
				t.Fatalf("the woken task read %s, want its tick's 1m0s", got)
			}
			if !tc.exact { // the race the task timer closes; on a starved driver it may not show
				t.Logf("with a plain channel timer the woken task read %s (its tick: 1m0s)", got)
			}
		})
	}
}
