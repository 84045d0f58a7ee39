package replay

import (
	"context"
	"io"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// startupTimeline is a deterministic startup-shaped timeline: bursts of lines at the same
// offset (per-rank copies), quiet gaps (weight loading), and steady progress lines.
func startupTimeline(length time.Duration, seed uint64) Timeline {
	r := rand.New(rand.NewPCG(seed, seed))
	tl := Timeline{Start: epoch}
	for at := time.Duration(0); at < length; {
		burst := 1 + r.IntN(8)
		for range burst {
			tl.Entries = append(tl.Entries, Entry{At: at, Op: OpLog, Event: sglang.Event{
				Kind: sglang.KindCGProgress, Time: epoch, Ranks: []sglang.Rank{{Name: "TP", N: r.IntN(8)}},
				Fields: sglang.Fields{{Key: "pct", Value: "50"}},
			}})
		}
		if r.IntN(20) == 0 {
			at += time.Duration(5+r.IntN(25)) * time.Second
		} else {
			at += time.Duration(50+r.IntN(950)) * time.Millisecond
		}
	}
	tl.Append(Entry{At: length, Op: OpExit, Code: 0})
	return tl
}

// playLateness replays tl on a Scaled clock and returns each step's wall-clock lateness
// against a due time computed from the wall clock alone (not from the clock under test),
// plus the total wall time. It fails the test or benchmark if a step is ever early.
// If alongside is not nil it is started with the wall start before Play and the function
// it returns is called after Play.
func playLateness(tb testing.TB, tl Timeline, factor float64, alongside func(time.Time) func(), sinks ...Sink) ([]time.Duration, time.Duration) {
	tb.Helper()
	late := make([]time.Duration, 0, len(tl.Entries))
	var early time.Duration
	wallStart := time.Now()
	c := Scaled(tl.Start, factor)
	if alongside != nil {
		defer alongside(wallStart)()
	}
	measure := SinkFunc(func(_ context.Context, s Step) error {
		wallDue := wallStart.Add(time.Duration(float64(s.At) / factor))
		l := time.Since(wallDue)
		if l < early {
			early = l
		}
		late = append(late, l)
		return nil
	})
	if err := NewPlayer(tl, c, append(sinks, measure)...).Play(context.Background()); err != nil {
		tb.Fatal(err)
	}
	total := time.Since(wallStart)
	// wallStart is read just before the clock's own start, so a step can seem early only
	// by that gap (nanoseconds); anything beyond a microsecond is a real early dispatch.
	if early < -time.Microsecond {
		tb.Fatalf("a step was dispatched %v before its due time", -early)
	}
	return late, total
}

type latencyStats struct{ mean, p99, max time.Duration }

func stats(late []time.Duration) latencyStats {
	s := slices.Clone(late)
	slices.Sort(s)
	var sum time.Duration
	for _, l := range s {
		sum += l
	}
	return latencyStats{
		mean: sum / time.Duration(len(s)),
		p99:  s[(len(s)*99)/100],
		max:  s[len(s)-1],
	}
}

// BenchmarkReplayTenMinutesAt60x is the acceptance measurement: a 10-minute timeline
// replayed at 60x should take about 10 s with every event within 20 ms (wall) of its due time.
// A bare runtime timer waits for the same instants alongside, so a loaded host shows up in the
// baseline rather than being blamed on the Player. Run with -benchtime=1x (bench/replay.sh).
func BenchmarkReplayTenMinutesAt60x(b *testing.B) {
	tl := startupTimeline(10*time.Minute, 1)
	render := func(e sglang.Event) string { return e.Kind.String() + " " + e.Fields[0].Value }
	for b.Loop() {
		var base []time.Duration
		late, total := playLateness(b, tl, 60, func(wallStart time.Time) func() {
			done := make(chan struct{})
			go func() { base = timerLateness(tl, wallStart, 60); close(done) }()
			return func() { <-done }
		}, NewWriterSink(io.Discard, nil, WithRender(render)))
		st, bst := stats(late), stats(base)
		over := 0
		for _, l := range late {
			if l > 20*time.Millisecond {
				over++
			}
		}
		b.ReportMetric(total.Seconds(), "wall-s")
		b.ReportMetric(float64(st.max.Microseconds())/1000, "max-late-ms")
		b.ReportMetric(float64(st.p99.Microseconds())/1000, "p99-late-ms")
		b.ReportMetric(float64(bst.max.Microseconds())/1000, "timer-max-late-ms")
		b.ReportMetric(float64(over), "events-over-20ms")
		b.Logf("%d events over %v at 60x: wall %v; lateness mean %v p99 %v max %v; bare timer mean %v p99 %v max %v",
			len(late), tl.Duration(), total.Round(time.Millisecond), st.mean, st.p99, st.max, bst.mean, bst.p99, bst.max)
	}
}

// timerLateness waits for each entry's wall due time on a bare runtime timer and returns
// the lateness per entry: what the host allows at those instants.
func timerLateness(tl Timeline, wallStart time.Time, factor float64) []time.Duration {
	out := make([]time.Duration, len(tl.Entries))
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for i, e := range tl.Entries {
		due := wallStart.Add(time.Duration(float64(e.At) / factor))
		if d := time.Until(due); d > 0 {
			t.Reset(d)
			<-t.C
		}
		out[i] = time.Since(due)
	}
	return out
}

// BenchmarkPlayerPrecision100x replays one entry per 2 wall ms at 100x and reports the
// wall-clock lateness of dispatch. ns/op is dominated by the 2 ms spacing; read the
// late-*-us metrics.
func BenchmarkPlayerPrecision100x(b *testing.B) {
	const factor, spacing = 100, 200 * time.Millisecond // 2 wall ms apart
	tl := Timeline{Start: epoch, Entries: make([]Entry, b.N)}
	for i := range tl.Entries {
		tl.Entries[i] = logAt(time.Duration(i+1)*spacing, "x")
	}
	b.ResetTimer()
	late, _ := playLateness(b, tl, factor, nil)
	b.StopTimer()
	st := stats(late)
	b.ReportMetric(float64(st.mean)/1e3, "late-mean-us")
	b.ReportMetric(float64(st.p99)/1e3, "late-p99-us")
	b.ReportMetric(float64(st.max)/1e3, "late-max-us")
}

// BenchmarkPlayerDispatch measures the Player's own cost per entry when nothing waits.
func BenchmarkPlayerDispatch(b *testing.B) {
	tl := Timeline{Start: epoch, Entries: make([]Entry, b.N)}
	for i := range tl.Entries {
		tl.Entries[i] = logAt(time.Duration(i)*time.Millisecond, "x")
	}
	c := Manual(epoch.Add(time.Duration(b.N) * time.Millisecond))
	sink := NewWriterSink(io.Discard, nil)
	b.ReportAllocs()
	b.ResetTimer()
	if err := NewPlayer(tl, c, sink).Play(context.Background()); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkTimerBaseline100x is BenchmarkPlayerPrecision100x's wait pattern on a bare
// runtime timer: the floor the host's scheduler sets. Compare their late-*-us metrics.
func BenchmarkTimerBaseline100x(b *testing.B) {
	const spacing = 2 * time.Millisecond
	late := make([]time.Duration, 0, b.N)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	start := time.Now()
	for i := range b.N {
		due := start.Add(time.Duration(i+1) * spacing)
		t.Reset(time.Until(due))
		<-t.C
		late = append(late, time.Since(due))
	}
	b.StopTimer()
	st := stats(late)
	b.ReportMetric(float64(st.mean)/1e3, "late-mean-us")
	b.ReportMetric(float64(st.p99)/1e3, "late-p99-us")
	b.ReportMetric(float64(st.max)/1e3, "late-max-us")
}
