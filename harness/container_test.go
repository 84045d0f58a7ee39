package harness

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
)

// A container's first records are written late (the process is still building its server),
// so a clock aligned on them runs behind the container's: a claim made just after the server
// journaled ready reads as before t_ready (the false-ready seen at S=60). ServerTime must map
// it back onto the container's clock.
func TestServerTimeMapsClaimsOntoTheContainerClock(t *testing.T) {
	const speed = 60
	origin := time.Date(2026, 11, 30, 18, 0, 0, 0, time.UTC) // wall instant the container clock read start
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	rec := func(at, late time.Duration, state string) fakeserver.Record {
		return fakeserver.Record{At: at, Type: fakeserver.RecState, State: state,
			Wall: origin.Add(time.Duration(float64(at)/speed) + late)}
	}
	early := []fakeserver.Record{rec(0, 18*time.Millisecond, "")}
	all := append(early,
		rec(5*time.Second, 300*time.Microsecond, ""),
		rec(23*time.Second, 200*time.Microsecond, fakeserver.StateBound),
		rec(24*time.Second, 400*time.Microsecond, fakeserver.StateReady))
	ready := all[len(all)-1]

	launchOrigin, ok := ClockOrigin(early, speed)
	if !ok || !launchOrigin.Equal(origin.Add(18*time.Millisecond)) {
		t.Fatalf("origin from the first record = %v, want the record's wall time", launchOrigin)
	}
	tgt := &ctrTarget{origin: launchOrigin, speed: speed}
	// The tool claims 1 ms (wall) after the ready record was written; on the launch-aligned
	// clock that instant reads:
	claimWall := ready.Wall.Add(time.Millisecond)
	onHarness := start.Add(time.Duration(float64(claimWall.Sub(launchOrigin)) * speed))
	if !onHarness.Before(start.Add(ready.At)) {
		t.Fatalf("test premise: the launch-aligned clock should read before t_ready, read %v", onHarness.Sub(start))
	}
	got := tgt.ServerTime(onHarness, all).Sub(start)
	want := time.Duration(float64(claimWall.Sub(origin)) * speed) // the container clock's reading
	if got < ready.At {
		t.Errorf("claim mapped to %v, before t_ready %v", got, ready.At)
	}
	// The tightest pair is 200 us late: 12 ms of scenario time at S=60.
	if d := want - got; d < 0 || d > 15*time.Millisecond {
		t.Errorf("claim mapped to %v, container clock read %v (off by %v)", got, want, d)
	}
	// Records the clock was aligned on alone shift nothing, and a zero claim stays zero.
	if got := tgt.ServerTime(onHarness, early); !got.Equal(onHarness) {
		t.Errorf("no better pair: claim moved from %v to %v", onHarness, got)
	}
	if got := tgt.ServerTime(time.Time{}, all); !got.IsZero() {
		t.Errorf("zero claim mapped to %v", got)
	}
}

// Containers share one Docker daemon: Launch waits for a free slot, whoever calls it, and a
// target's Stop gives its slot back once.
func TestContainerLaunchWaitsForADaemonSlot(t *testing.T) {
	var held []func()
	for range cap(daemonSlots) {
		release, err := daemonSlots.take(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	defer func() {
		for _, release := range held {
			release()
		}
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Container{Image: "incident-replay-unused", Dir: t.TempDir()}.Launch(ctx, catalogueCase(t, "s0-happy-era-a"), Virtual)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Launch with every slot taken: err %v, want it to wait until ctx ends", err)
	}

	tgt := &ctrTarget{release: held[0]}
	for range 2 {
		if err := tgt.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if free := cap(daemonSlots) - len(daemonSlots); free != 1 {
		t.Errorf("%d slots free after one target stopped twice, want 1", free)
	}
}
