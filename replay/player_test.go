package replay

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// drain returns the steps available on ch without waiting for more.
func drain(ch <-chan Step) []string {
	var out []string
	for {
		select {
		case s := <-ch:
			if s.Op == OpLog {
				out = append(out, s.Event.Text)
			} else {
				out = append(out, s.Op.String())
			}
		default:
			return out
		}
	}
}

// waitBlocked waits until Play is parked on its timer, so an Advance cannot race it.
func waitBlocked(t *testing.T, fc interface {
	BlockUntilContext(context.Context, int) error
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatalf("player never waited on the clock: %v", err)
	}
}

func TestPlayerDispatchesAtDueTimes(t *testing.T) {
	fc := Manual(epoch)
	tl := Timeline{Start: epoch, Entries: []Entry{
		logAt(0, "a"),
		logAt(time.Second, "b"),
		{At: time.Second, Op: OpBind},
		logAt(5*time.Second, "c"),
		{At: 6 * time.Second, Op: OpExit, Code: 137},
	}}
	ch := make(chan Step, 16)
	done := make(chan error, 1)
	go func() { done <- NewPlayer(tl, fc, ChanSink(ch)).Play(context.Background()) }()

	steps := []struct {
		advance time.Duration
		want    []string
	}{
		{0, []string{"a"}},
		{999 * time.Millisecond, nil},
		{time.Millisecond, []string{"b", "bind"}},
		{4 * time.Second, []string{"c"}},
		{999 * time.Millisecond, nil},
	}
	for i, st := range steps {
		waitBlocked(t, fc)
		fc.Advance(st.advance)
		if st.want != nil {
			waitBlocked(t, fc) // the player has emitted and waits for the next entry
		}
		if got := drain(ch); !slices.Equal(got, st.want) {
			t.Fatalf("step %d (+%v): emitted %v, want %v", i, st.advance, got, st.want)
		}
	}
	fc.Advance(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("Play = %v", err)
	}
	if got := drain(ch); !slices.Equal(got, []string{"exit"}) {
		t.Fatalf("last step emitted %v, want [exit]", got)
	}
}

func TestPlayerStepFields(t *testing.T) {
	fc := Manual(epoch.Add(time.Hour)) // everything is already due
	headed := sglang.Event{Kind: sglang.KindReady, Time: time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)}
	bare := sglang.Event{Kind: sglang.KindTraceback, Text: "  File \"x.py\""}
	tl := Timeline{Start: epoch, Entries: []Entry{
		{At: time.Second, Op: OpLog, Event: headed},
		{At: 2 * time.Second, Op: OpLog, Stream: Stderr, Event: bare},
	}}
	var got []Step
	err := NewPlayer(tl, fc, SinkFunc(func(_ context.Context, s Step) error {
		got = append(got, s)
		return nil
	})).Play(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d steps", len(got))
	}
	if want := epoch.Add(time.Second); !got[0].Due.Equal(want) || !got[0].Event.Time.Equal(want) || got[0].Index != 0 {
		t.Errorf("headed step: due %v, time %v, index %d; want time %v", got[0].Due, got[0].Event.Time, got[0].Index, want)
	}
	if !got[1].Event.Time.IsZero() || got[1].Stream != Stderr || got[1].Index != 1 {
		t.Errorf("header-less step: time %v, stream %v, index %d; want zero time on stderr", got[1].Event.Time, got[1].Stream, got[1].Index)
	}
	if !tl.Entries[0].Event.Time.Equal(headed.Time) {
		t.Error("Play changed the timeline's entries")
	}
}

func TestPlayerCancel(t *testing.T) {
	fc := Manual(epoch)
	tl := Timeline{Start: epoch, Entries: []Entry{logAt(0, "a"), logAt(time.Minute, "b")}}
	ch := make(chan Step, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- NewPlayer(tl, fc, ChanSink(ch)).Play(ctx) }()
	waitBlocked(t, fc)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Play after cancel = %v, want context.Canceled", err)
	}
	if got := drain(ch); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("emitted %v, want [a]", got)
	}
}

func TestPlayerErrors(t *testing.T) {
	fc := Manual(epoch)
	bad := Timeline{Start: epoch, Entries: []Entry{logAt(time.Second, "a"), logAt(0, "b")}}
	called := false
	sink := SinkFunc(func(context.Context, Step) error { called = true; return nil })
	if err := NewPlayer(bad, fc, sink).Play(context.Background()); err == nil || !strings.Contains(err.Error(), "not playable") {
		t.Fatalf("Play(unsorted) = %v", err)
	}
	if called {
		t.Fatal("Play emitted from an invalid timeline")
	}

	boom := errors.New("disk full")
	ok := Timeline{Start: epoch, Entries: []Entry{logAt(0, "a"), logAt(0, "b")}}
	n := 0
	err := NewPlayer(ok, fc, SinkFunc(func(context.Context, Step) error {
		n++
		return boom
	})).Play(context.Background())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "entry 0") || n != 1 {
		t.Fatalf("Play with failing sink = %v after %d calls", err, n)
	}
}

func TestWriterSink(t *testing.T) {
	var out, errw bytes.Buffer
	render := func(e sglang.Event) string { return e.Kind.String() + ":" + e.Text }
	tl := Timeline{Start: epoch, Entries: []Entry{
		logAt(0, "one"),
		{Op: OpLog, Stream: Stderr, Event: sglang.Event{Kind: sglang.KindException, Text: "boom"}},
		{Op: OpBind},
		logAt(0, "two"),
		{Op: OpExit, Code: 1},
	}}
	if err := NewPlayer(tl, Manual(epoch), NewWriterSink(&out, &errw, WithRender(render))).Play(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "unknown:one\nunknown:two\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := errw.String(), "exception:boom\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}

	out.Reset()
	if err := NewPlayer(tl, Manual(epoch), NewWriterSink(&out, nil, WithRender(render))).Play(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "unknown:one\nexception:boom\nunknown:two\n"; got != want {
		t.Errorf("merged = %q, want %q", got, want)
	}
}

// The Player waits on bare runtime timers when the clock is Scaled; at a high factor this
// runs in milliseconds and checks order, never-early dispatch and cancellation on that path.
func TestPlayerOnScaledClock(t *testing.T) {
	tl := startupTimeline(time.Minute, 3)
	c := Scaled(tl.Start, fast)
	var got []int
	err := NewPlayer(tl, c, SinkFunc(func(_ context.Context, s Step) error {
		if now := c.Now(); now.Before(s.Due) {
			t.Errorf("entry %d emitted at %v, before its due time %v", s.Index, now, s.Due)
		}
		got = append(got, s.Index)
		return nil
	})).Play(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tl.Entries) || !slices.IsSorted(got) {
		t.Fatalf("emitted %d of %d entries, in order: %v", len(got), len(tl.Entries), slices.IsSorted(got))
	}

	long := Timeline{Start: epoch, Entries: []Entry{logAt(0, "a"), logAt(1000*time.Hour, "b")}}
	ctx, cancel := context.WithCancel(context.Background())
	err = NewPlayer(long, Scaled(epoch, fast), SinkFunc(func(context.Context, Step) error {
		// The second entry is 6 wall minutes away: cancel while the Player waits for it.
		go func() { time.Sleep(time.Millisecond); cancel() }()
		return nil
	})).Play(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Play after cancel = %v, want context.Canceled", err)
	}
}
