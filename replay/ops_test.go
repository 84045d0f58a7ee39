package replay

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

var epoch = time.Date(2025, 6, 14, 8, 12, 0, 0, time.UTC)

func logAt(at time.Duration, text string) Entry {
	return Entry{At: at, Op: OpLog, Event: sglang.Event{Kind: sglang.KindUnknown, Text: text}}
}

func texts(tl Timeline) []string {
	var out []string
	for _, e := range tl.Entries {
		if e.Op == OpLog {
			out = append(out, e.Event.Text)
		} else {
			out = append(out, e.Op.String())
		}
	}
	return out
}

func TestSortIsStable(t *testing.T) {
	tl := Timeline{Start: epoch, Entries: []Entry{
		logAt(2*time.Second, "c"), logAt(time.Second, "a"), logAt(2*time.Second, "d"), logAt(time.Second, "b"),
	}}
	tl.Sort()
	if got, want := texts(tl), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
		t.Fatalf("Sort = %v, want %v", got, want)
	}
}

func TestAppendKeepsOrder(t *testing.T) {
	var tl Timeline
	tl.Append(logAt(2*time.Second, "b"), logAt(5*time.Second, "d"))
	tl.Append(logAt(2*time.Second, "c"), logAt(0, "a"), logAt(5*time.Second, "e"))
	if got, want := texts(tl), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Fatalf("Append = %v, want %v", got, want)
	}
}

func TestShiftScaleDoNotAlias(t *testing.T) {
	tl := Timeline{Start: epoch, Entries: []Entry{logAt(time.Second, "a"), logAt(3*time.Second, "b")}}
	sh := tl.Shift(500 * time.Millisecond)
	sc := tl.Scale(0.5)
	if tl.Entries[0].At != time.Second {
		t.Fatalf("Shift or Scale changed the receiver: %v", tl.Entries[0].At)
	}
	if got := []time.Duration{sh.Entries[0].At, sh.Entries[1].At}; !slices.Equal(got, []time.Duration{1500 * time.Millisecond, 3500 * time.Millisecond}) {
		t.Errorf("Shift = %v", got)
	}
	if got := []time.Duration{sc.Entries[0].At, sc.Entries[1].At}; !slices.Equal(got, []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond}) {
		t.Errorf("Scale = %v", got)
	}
	if d := tl.Shift(-2 * time.Second).Validate(); d == nil {
		t.Error("Validate accepted a negative offset after Shift")
	}
}

func TestScalePanicsOnBadFactor(t *testing.T) {
	for _, f := range []float64{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Scale(%v) did not panic", f)
				}
			}()
			Timeline{}.Scale(f)
		}()
	}
}

func TestMerge(t *testing.T) {
	base := Timeline{Start: epoch, Entries: []Entry{logAt(0, "a"), logAt(2*time.Second, "c"), logAt(4*time.Second, "e")}}
	// Placed by its own Start: 1s after epoch, so its 1s entry lands at 2s, after base's "c".
	abs := Timeline{Start: epoch.Add(time.Second), Entries: []Entry{logAt(time.Second, "d")}}
	// Zero Start: offsets are relative to base.Start.
	rel := Timeline{Entries: []Entry{logAt(time.Second, "b"), {At: 3 * time.Second, Op: OpExit, Code: 137}}}
	m := base.Merge(abs, rel)
	if got, want := texts(m), []string{"a", "b", "c", "d", "exit", "e"}; !slices.Equal(got, want) {
		t.Fatalf("Merge = %v, want %v", got, want)
	}
	if !m.Start.Equal(epoch) {
		t.Errorf("Merge Start = %v, want %v", m.Start, epoch)
	}
	if m.Validate() == nil {
		t.Error("Validate accepted an entry after OpExit")
	}
	cut := m.UntilExit()
	if got, want := texts(cut), []string{"a", "b", "c", "d", "exit"}; !slices.Equal(got, want) {
		t.Fatalf("UntilExit = %v, want %v", got, want)
	}
	if err := cut.Validate(); err != nil {
		t.Fatalf("Validate(UntilExit) = %v", err)
	}
	if len(base.Entries) != 3 {
		t.Errorf("Merge changed the receiver")
	}
}

func TestLookupsAndDuration(t *testing.T) {
	tl := Timeline{Start: epoch, Entries: []Entry{
		logAt(0, "x"),
		{At: time.Second, Op: OpLog, Event: sglang.Event{Kind: sglang.KindReady}},
		{At: 2 * time.Second, Op: OpBind},
		{At: 3 * time.Second, Op: OpLog, Event: sglang.Event{Kind: sglang.KindReady}},
	}}
	if e, i, ok := tl.FirstKind(sglang.KindReady); !ok || i != 1 || e.At != time.Second {
		t.Errorf("FirstKind(ready) = %v, %d, %v", e.At, i, ok)
	}
	if _, i, ok := tl.FirstOp(OpBind); !ok || i != 2 {
		t.Errorf("FirstOp(bind) = %d, %v", i, ok)
	}
	if _, i, ok := tl.FirstOp(OpExit); ok || i != -1 {
		t.Errorf("FirstOp(exit) = %d, %v, want none", i, ok)
	}
	if d := tl.Duration(); d != 3*time.Second {
		t.Errorf("Duration = %v", d)
	}
	if got := tl.Due(tl.Entries[3]); !got.Equal(epoch.Add(3 * time.Second)) {
		t.Errorf("Due = %v", got)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name    string
		entries []Entry
		want    []string // substrings, one per expected EntryError, in order
	}{
		{"empty", nil, nil},
		{"ok", []Entry{logAt(0, "a"), {At: time.Second, Op: OpBind}, {At: time.Second, Op: OpExit, Code: 137}}, nil},
		{"unsorted", []Entry{logAt(2*time.Second, "a"), logAt(time.Second, "b")}, []string{"entry 1", "call Sort"}},
		{"negative", []Entry{logAt(-time.Second, "a")}, []string{"negative offset"}},
		{"after exit", []Entry{{Op: OpExit}, logAt(0, "a")}, []string{"follows the exit at entry 0"}},
		{"bad code", []Entry{{Op: OpExit, Code: 300}}, []string{"outside 0..255"}},
		{"bad op", []Entry{{Op: Op(99)}}, []string{"unknown op"}},
		{"bad stream", []Entry{{Stream: Stream(7)}}, []string{"unknown stream"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Timeline{Start: epoch, Entries: c.entries}.Validate()
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", c.want)
			}
			var ee *EntryError
			if !errors.As(err, &ee) {
				t.Fatalf("Validate error %T is not an *EntryError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestValidateCapsErrors(t *testing.T) {
	var tl Timeline
	for i := range 50 {
		tl.Entries = append(tl.Entries, logAt(-time.Duration(i+1), "x"))
	}
	err := tl.Validate()
	if err == nil {
		t.Fatal("Validate accepted 50 negative offsets")
	}
	if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != maxValidateErrors {
		t.Fatalf("Validate reported %d errors, want %d", n, maxValidateErrors)
	}
}

func TestOpStreamText(t *testing.T) {
	for _, op := range []Op{OpLog, OpBind, OpExit, OpWedge, OpWedgeScheduler, OpSchedulerDead} {
		b, err := op.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back Op
		if err := back.UnmarshalText(b); err != nil || back != op {
			t.Errorf("Op round trip %v -> %q -> %v, %v", op, b, back, err)
		}
	}
	for _, s := range []Stream{Stdout, Stderr} {
		b, _ := s.MarshalText()
		var back Stream
		if err := back.UnmarshalText(b); err != nil || back != s {
			t.Errorf("Stream round trip %v -> %q -> %v, %v", s, b, back, err)
		}
	}
	var op Op
	if err := op.UnmarshalText([]byte("explode")); err == nil || !strings.Contains(err.Error(), "use one of") {
		t.Errorf("UnmarshalText(explode) = %v", err)
	}
	if _, err := Op(42).MarshalText(); err == nil {
		t.Error("MarshalText accepted an unknown op")
	}
}
