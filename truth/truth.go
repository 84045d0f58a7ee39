// Package truth is the ground truth of one replayed run: when the fake server bound its port,
// became ready and died, and how it exited, as offsets from the scenario's start. A run's
// journal reduces to it, a compiled timeline predicts it, authoring writes a scenario's expect
// block from it and verdicts score tools against it.
package truth

import "time"

// Truth is what a server did (or, predicted, will do) in one run. Nil means "never".
type Truth struct {
	Bound, Ready, Dead *time.Duration
	// ExitCode is the process's exit status; nil while it runs (or wedged for good).
	ExitCode *int
}

// At returns a pointer to d, for literals.
func At(d time.Duration) *time.Duration { return &d }

// Bind records the port bound at offset at; the first bind counts.
func (t *Truth) Bind(at time.Duration) {
	if t.Bound == nil {
		t.Bound = At(at)
	}
}

// BecomeReady records the server ready at offset at; the first time counts.
func (t *Truth) BecomeReady(at time.Duration) {
	if t.Ready == nil {
		t.Ready = At(at)
	}
}

// Exit records the process ending at offset at with code; the first exit counts.
func (t *Truth) Exit(at time.Duration, code int) {
	t.die(at)
	if t.ExitCode == nil {
		t.ExitCode = &code
	}
}

// Wedge records a wedge at offset at that never ends, of the whole server or of its
// scheduler (hung or dead). Such a server is dead as a tool sees it: nothing it is waiting
// for will come, even if a watchdog ends the process much later.
func (t *Truth) Wedge(at time.Duration) { t.die(at) }

func (t *Truth) die(at time.Duration) {
	if t.Dead == nil || at < *t.Dead {
		t.Dead = At(at)
	}
}

// Unbind takes back a bind the server never got (another process holds the port): it dies
// where it would have bound, with code.
func (t *Truth) Unbind(code int) {
	if t.Bound == nil {
		return
	}
	at := *t.Bound
	t.Bound, t.Dead, t.ExitCode = nil, At(at), &code
}

// Exited reports whether the process ended.
func (t Truth) Exited() bool { return t.ExitCode != nil }

// EverReady reports whether the server became ready before it died (if it died).
func (t Truth) EverReady() bool {
	return t.Ready != nil && (t.Dead == nil || *t.Ready < *t.Dead)
}

// ReadyBy reports whether a server that would be ready at r gets there: bound, and not dead
// before r.
func (t Truth) ReadyBy(r time.Duration) bool {
	return t.Bound != nil && (t.Dead == nil || *t.Dead >= r)
}
