package replay

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

var opNames = [...]string{
	OpLog:            "log",
	OpBind:           "bind",
	OpExit:           "exit",
	OpWedge:          "wedge",
	OpWedgeScheduler: "wedge_scheduler",
	OpSchedulerDead:  "scheduler_dead",
}

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return "op(" + strconv.Itoa(int(o)) + ")"
}

// MarshalText writes the op's stable name (journals, scenario files).
func (o Op) MarshalText() ([]byte, error) {
	if int(o) >= len(opNames) {
		return nil, fmt.Errorf("replay: cannot marshal unknown %s", o)
	}
	return []byte(o.String()), nil
}

// UnmarshalText reads a name written by MarshalText.
func (o *Op) UnmarshalText(b []byte) error {
	for i, n := range opNames {
		if n == string(b) {
			*o = Op(i)
			return nil
		}
	}
	return fmt.Errorf("replay: unknown op %q: use one of %v", b, opNames)
}

var streamNames = [...]string{Stdout: "stdout", Stderr: "stderr"}

func (s Stream) String() string {
	if int(s) < len(streamNames) {
		return streamNames[s]
	}
	return "stream(" + strconv.Itoa(int(s)) + ")"
}

// MarshalText writes "stdout" or "stderr".
func (s Stream) MarshalText() ([]byte, error) {
	if int(s) >= len(streamNames) {
		return nil, fmt.Errorf("replay: cannot marshal unknown %s", s)
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads "stdout" or "stderr".
func (s *Stream) UnmarshalText(b []byte) error {
	for i, n := range streamNames {
		if n == string(b) {
			*s = Stream(i)
			return nil
		}
	}
	return fmt.Errorf("replay: unknown stream %q: use stdout or stderr", b)
}

// Due is the scenario time at which e falls due: Start + e.At.
func (tl Timeline) Due(e Entry) time.Time { return tl.Start.Add(e.At) }

// Duration is the offset of the last entry (0 for an empty timeline).
func (tl Timeline) Duration() time.Duration {
	var d time.Duration
	for _, e := range tl.Entries {
		d = max(d, e.At)
	}
	return d
}

// Sort orders the entries by offset, keeping the order of entries with equal offsets.
func (tl *Timeline) Sort() {
	slices.SortStableFunc(tl.Entries, func(a, b Entry) int { return cmp.Compare(a.At, b.At) })
}

// Append inserts entries after every existing entry with the same or an earlier offset,
// so a sorted timeline stays sorted and ties keep insertion order.
func (tl *Timeline) Append(entries ...Entry) {
	for _, e := range entries {
		n := len(tl.Entries)
		if n == 0 || tl.Entries[n-1].At <= e.At {
			tl.Entries = append(tl.Entries, e)
			continue
		}
		i := sort.Search(n, func(i int) bool { return tl.Entries[i].At > e.At })
		tl.Entries = slices.Insert(tl.Entries, i, e)
	}
}

// Clone returns a copy that shares no entry storage with tl.
func (tl Timeline) Clone() Timeline {
	return Timeline{Start: tl.Start, Entries: slices.Clone(tl.Entries)}
}

// Shift returns a copy with every offset moved by d (negative d moves entries earlier).
// Offsets that become negative are kept as they are and reported by Validate.
func (tl Timeline) Shift(d time.Duration) Timeline {
	out := tl.Clone()
	for i := range out.Entries {
		out.Entries[i].At += d
	}
	return out
}

// Scale returns a copy with every offset multiplied by f: 0.5 makes a phase twice as fast.
// It panics when f is not a finite number > 0 (check input with CheckFactor).
func (tl Timeline) Scale(f float64) Timeline {
	if err := CheckFactor(f); err != nil {
		panic(err)
	}
	out := tl.Clone()
	for i := range out.Entries {
		at := math.Round(float64(out.Entries[i].At) * f)
		if at >= math.MaxInt64 {
			at = math.MaxInt64
		}
		out.Entries[i].At = time.Duration(at)
	}
	return out
}

// Merge returns one sorted timeline holding tl's entries and those of others. It keeps
// tl.Start. When both Starts are set, an other timeline is placed by its own Start (its
// offsets are rebased onto tl.Start; one that starts earlier gets negative offsets, which
// Validate reports); an other with a zero Start is taken as relative to tl.Start. On equal offsets, tl's entries come first, then others' in argument order.
// Entries after an OpExit are kept; use UntilExit to cut them.
func (tl Timeline) Merge(others ...Timeline) Timeline {
	n := len(tl.Entries)
	for _, o := range others {
		n += len(o.Entries)
	}
	out := Timeline{Start: tl.Start, Entries: make([]Entry, 0, n)}
	out.Entries = append(out.Entries, tl.Entries...)
	for _, o := range others {
		var delta time.Duration
		if !o.Start.IsZero() && !tl.Start.IsZero() {
			delta = o.Start.Sub(tl.Start)
		}
		for _, e := range o.Entries {
			e.At += delta
			out.Entries = append(out.Entries, e)
		}
	}
	out.Sort()
	return out
}

// UntilExit returns a copy that ends at the first OpExit (kept): a process prints nothing
// after it has exited, so a merged fault cuts the recording it lands in.
func (tl Timeline) UntilExit() Timeline {
	out := tl.Clone()
	for i, e := range out.Entries {
		if e.Op == OpExit {
			out.Entries = out.Entries[:i+1]
			break
		}
	}
	return out
}

// FirstOp returns the first entry with op, its index, and whether there was one.
func (tl Timeline) FirstOp(op Op) (Entry, int, bool) {
	for i, e := range tl.Entries {
		if e.Op == op {
			return e, i, true
		}
	}
	return Entry{}, -1, false
}

// FirstKind returns the first OpLog entry whose event is of kind k, its index, and whether
// there was one.
func (tl Timeline) FirstKind(k sglang.Kind) (Entry, int, bool) {
	for i, e := range tl.Entries {
		if e.Op == OpLog && e.Event.Kind == k {
			return e, i, true
		}
	}
	return Entry{}, -1, false
}

// EntryError is one problem Validate found, at entry Index.
type EntryError struct {
	Index int
	Entry Entry
	Msg   string
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("replay: entry %d (%s at %s): %s", e.Index, e.Entry.Op, e.Entry.At, e.Msg)
}

// maxValidateErrors bounds Validate's report: after a few problems the rest are noise.
const maxValidateErrors = 10

// Validate reports what makes tl unplayable: offsets out of order or negative, unknown ops
// or streams, exit codes outside 0..255, or anything after the first OpExit. The error
// joins one *EntryError per problem (at most 10); nil means the Player can run it.
func (tl Timeline) Validate() error {
	var errs []error
	add := func(i int, format string, args ...any) {
		if len(errs) < maxValidateErrors {
			errs = append(errs, &EntryError{Index: i, Entry: tl.Entries[i], Msg: fmt.Sprintf(format, args...)})
		}
	}
	exit := -1
	for i, e := range tl.Entries {
		if e.At < 0 {
			add(i, "negative offset: shift the timeline or fix the entry")
		}
		if i > 0 && e.At < tl.Entries[i-1].At {
			add(i, "comes before entry %d (at %s): call Sort", i-1, tl.Entries[i-1].At)
		}
		if int(e.Op) >= len(opNames) {
			add(i, "unknown op")
		}
		if int(e.Stream) >= len(streamNames) {
			add(i, "unknown stream")
		}
		if e.Op == OpExit && (e.Code < 0 || e.Code > 255) {
			add(i, "exit code %d is outside 0..255", e.Code)
		}
		if exit >= 0 {
			add(i, "follows the exit at entry %d: call UntilExit", exit)
		} else if e.Op == OpExit {
			exit = i
		}
	}
	return errors.Join(errs...)
}
