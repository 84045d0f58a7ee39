// Package replay is time and timelines: one Clock drives a run (real, scaled or manual), a
// Timeline holds events at offsets from a start time, and a Player emits a timeline on a clock.
package replay

import (
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// Stream is the process output an entry is written to.
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
)

// StreamFor is the stream p's release writes e to; a line SGLang does not print itself
// (another library's) keeps def.
func StreamFor(p sglang.Profile, e sglang.Event, def Stream) Stream {
	s, ok := p.StreamOf(e.Kind)
	switch {
	case !ok:
		return def
	case s == sglang.Stderr:
		return Stderr
	}
	return Stdout
}

// Op is what the server process does at an entry besides (or instead of) printing a line.
type Op uint8

const (
	OpLog            Op = iota // print Event on Stream
	OpBind                     // uvicorn binds the HTTP port; status Starting, warmup begins
	OpExit                     // the process exits with Code (137 = SIGKILL, as SGLang's launcher does)
	OpWedge                    // the whole server stops answering: accepts, never responds
	OpWedgeScheduler           // HTTP stays up, the scheduler stops: generation hangs, health 503 after its timeout
	OpSchedulerDead            // the scheduler died but HTTP stays up (era A/B zombie)
)

// Entry is one step of a timeline.
type Entry struct {
	At     time.Duration // offset from Timeline.Start
	Op     Op
	Stream Stream
	Event  sglang.Event // for OpLog; Event.Time is Start+At when rendered
	Code   int          // exit code for OpExit
}

// Timeline is a run's scripted steps, sorted by At (stable: equal offsets keep their order).
type Timeline struct {
	Start   time.Time // scenario epoch: the time the first log line is stamped with
	Entries []Entry
}
