package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
	"github.com/testcontainers/testcontainers-go"
)

// Container runs each case's fake server in a container (fakeserver.Run) from Image, built
// once with fakeserver.BuildImage. Containers carry fakeserver's run labels, so
// fakeserver.Sweep removes any that an interrupted run leaves.
type Container struct {
	Image string
	// Dir holds each run's directory, bind-mounted into its container: the server's log (tools
	// tail it) and journal. "" uses os.TempDir.
	Dir string
}

// Name implements Launcher.
func (Container) Name() string { return "container" }

// daemonSlots bounds the containers this process runs at once, every Container launcher and
// caller together: 4 per core. They share one Docker daemon, whose shims answer late when many
// start and stop beside other load. On 2 cores beside two busy-loop CPU hogs, a 264-pair
// matrix with every Go pair's container at once (up to 148) took 16 minutes and lost 47 cells
// to stops unanswered after 2.5 minutes; 16 at once took 8m48s and 8 at once 5m12s, with no
// cell lost. Idle, the bound costs nothing (2m37s at 8 against 2m47s unbounded).
var daemonSlots = make(slots, 4*runtime.NumCPU())

// slots is a counting semaphore.
type slots chan struct{}

// take waits until a slot is free or ctx ends; the release it returns gives the slot back,
// once however often it is called.
func (s slots) take(ctx context.Context) (release func(), err error) {
	select {
	case s <- struct{}{}:
		return sync.OnceFunc(func() { <-s }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Published implements Launcher: docker-proxy holds the host port from the start, except on
// virtual time, where the container shares the host's network and its server binds the port
// itself when its timeline says so.
func (Container) Published(speed float64) bool { return speed != Virtual }

// Overhead implements Launcher: Docker reports an exit and docker-proxy a new listener up to
// ~2 s late on a busy 2-core host.
func (Container) Overhead() time.Duration { return 2 * time.Second }

// Launch implements Launcher. It first waits for one of the daemon's slots (daemonSlots), which
// the target's Stop gives back. The container's clock starts when fakesglang starts, after
// Docker's start-up, on a wall instant the harness cannot see; the harness clock is aligned
// to it from the journal's (wall, at) pairs, and ServerTime maps claims onto the container's
// clock once the whole journal is in (see ClockOrigin).
func (l Container) Launch(ctx context.Context, c Case, speed float64) (Target, error) {
	if l.Image == "" {
		return nil, errors.New("container launcher: no image; build one with fakeserver.BuildImage (or run without --container)")
	}
	if c.Scenario == nil {
		return nil, fmt.Errorf("case %s has no scenario file for the container", c.Name)
	}
	release, err := daemonSlots.take(ctx)
	if err != nil {
		return nil, fmt.Errorf("container launcher: waiting for one of the %d containers this process runs at once: %w", cap(daemonSlots), err)
	}
	dir, err := os.MkdirTemp(l.Dir, "ir-"+c.Name+"-")
	if err != nil {
		release()
		return nil, err
	}
	// fakesglang writes its log and journal straight into dir (a bind mount): Docker's log
	// stream can deliver lines seconds late, minutes of scenario time at 60x.
	logPath := filepath.Join(dir, fakeserver.HostLog)
	source, err := scenarioSource(c, dir)
	if err != nil {
		os.RemoveAll(dir)
		release()
		return nil, fmt.Errorf("container launcher: %w", err)
	}
	t := &ctrTarget{dir: dir, log: logPath, speed: speed, done: make(chan struct{}), release: release}
	opts := []testcontainers.ContainerCustomizer{fakeserver.WithScenario(source), fakeserver.WithSeed(c.seed()), fakeserver.WithHostDir(dir)}
	if speed == Virtual {
		// The container's clock follows this one; time starts once the tool runs.
		t.vclock = vtime.New(c.Timeline.Start, vtime.Options{})
		t.startHold = t.vclock.Hold()
		t.clock = t.vclock
		opts = append(opts, fakeserver.WithClock(t.vclock))
	} else {
		opts = append(opts, fakeserver.WithSpeed(speed))
	}
	ctr, err := fakeserver.Run(context.WithoutCancel(ctx), l.Image, opts...)
	t.ctr = ctr
	if err != nil {
		_ = t.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	if t.vclock == nil {
		if t.clock, t.origin, err = alignClock(ctx, ctr, c.Timeline.Start, speed); err != nil {
			_ = t.Stop(context.WithoutCancel(ctx))
			return nil, err
		}
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	t.stopWatch = stop
	go t.watch(wctx)
	return t, nil
}

// scenarioSource is what fakesglang's --scenario names for c: a scenario file on this host
// (with a recorded log beside it inlined into dir/scenario.yaml, as it does not travel with
// the file), or a catalogue scenario's name, which fakesglang looks up in its own catalogue.
func scenarioSource(c Case, dir string) (string, error) {
	if c.Scenario.Path == "" {
		return c.Name, nil
	}
	if _, err := os.Stat(c.Scenario.Path); err != nil {
		return c.Name, nil // a catalogue scenario: Path names its place in the catalogue
	}
	sc, err := c.Scenario.SelfContained()
	if err != nil {
		return "", err
	}
	if sc == c.Scenario {
		return c.Scenario.Path, nil
	}
	source := filepath.Join(dir, "scenario.yaml")
	b, err := yaml.Marshal(sc)
	if err == nil {
		err = os.WriteFile(source, b, 0o644)
	}
	return source, err
}

// alignClock builds a scaled clock that reads what the container's fakesglang clock reads,
// as far as the journal written so far tells, and returns the wall origin it assumed.
func alignClock(ctx context.Context, ctr *fakeserver.Container, start time.Time, speed float64) (replay.Clock, time.Time, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := ctr.Journal(ctx)
		if origin, ok := ClockOrigin(recs, speed); err == nil && ok {
			now := start.Add(time.Duration(float64(time.Since(origin)) * speed))
			return replay.Scaled(now, speed), origin, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, time.Time{}, fmt.Errorf("container launcher: no journal record within 30s (last error: %v); is the image current?", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ClockOrigin estimates from a journal the wall instant at which the server's scenario clock
// read Timeline.Start, for a server running at speed. The server writes each record at or
// after the offset At it carries, never before, so Wall - At/speed is never earlier than the
// true origin, and the record written with the least delay bounds it most tightly. The first records are the worst: they are
// written after the process has built its server (measured up to 18 ms late on a loaded
// 2-core host, 1.1 s of scenario time at S=60), later ones are written by a timer within a
// fraction of a millisecond. Container and host read the same kernel wall clock.
func ClockOrigin(recs []fakeserver.Record, speed float64) (time.Time, bool) {
	var origin time.Time
	for _, r := range recs {
		if r.Wall.IsZero() {
			continue
		}
		if o := r.Wall.Add(-time.Duration(float64(r.At) / speed)); origin.IsZero() || o.Before(origin) {
			origin = o
		}
	}
	return origin, !origin.IsZero()
}

var _ Target = (*ctrTarget)(nil)

type ctrTarget struct {
	ctr    *fakeserver.Container
	clock  replay.Clock
	vclock *vtime.Clock // on virtual time: the clock the container's follows, else nil
	// startHold keeps a virtual clock at the start until the tool is on it (ToolStarted).
	startHold func()
	origin    time.Time // scaled: the wall instant clock read start at
	speed     float64
	dir       string
	log       string

	stopWatch context.CancelFunc
	release   func() // gives the daemon slot back

	exits exitNotice

	mu     sync.Mutex
	done   chan struct{}
	code   int
	exited bool
}

// watch waits for the container to exit. A busy daemon can fail a wait call; the exit must
// not be lost for that (a tool that watches the container would poll a dead server to its
// own timeout), so it waits again until the container has exited or is gone, or until ctx
// ends (Stop ends it).
func (t *ctrTarget) watch(ctx context.Context) {
	if link := t.ctr.Link(); link != nil {
		// On virtual time the server announces its exit at the instant it happens; the
		// clock is held until the tool's view (Done) has it.
		code, announced, err := link.WaitExit(ctx)
		switch {
		case err != nil:
			close(t.done)
			return
		case announced:
			t.mu.Lock()
			t.code, t.exited = code, true
			t.mu.Unlock()
			close(t.done)
			t.exits.fire(code)
			link.ExitSeen()
			return
		}
		// gone without a word: Docker knows the code
	}
	for {
		code, err := t.ctr.Wait(ctx)
		if err == nil {
			t.mu.Lock()
			t.code, t.exited = code, true
			t.mu.Unlock()
			close(t.done)
			t.exits.fire(code)
			return
		}
		if fakeserver.IsGone(err) {
			close(t.done)
			return
		}
		select {
		case <-ctx.Done():
			close(t.done)
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (t *ctrTarget) Clock() replay.Clock { return t.clock }

// ToolStarted implements toolStarter.
func (t *ctrTarget) ToolStarted() {
	if t.startHold != nil {
		t.startHold()
	}
}

func (t *ctrTarget) BaseURL() string       { return t.ctr.BaseURL() }
func (t *ctrTarget) LogFile() string       { return t.log }
func (t *ctrTarget) Done() <-chan struct{} { return t.done }
func (t *ctrTarget) OnExit(f func(int))    { t.exits.OnExit(f) }

func (t *ctrTarget) Exited() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code, t.exited
}

// CatchUp implements catcher. The server runs in its own process, so nothing can run its
// timeline on demand; instead the journal is read only once the server's clock, as aligned,
// is past at by catchUpGrace of wall time, for its timers to have fired (a tool that saw s5's
// traceback claims before the wedge right after it is journaled).
func (t *ctrTarget) CatchUp(at time.Time) {
	if at.IsZero() || t.vclock != nil { // on virtual time the server is never behind
		return
	}
	d := time.Duration(float64(t.clock.Until(at))/t.speed) + catchUpGrace
	if d > 0 {
		time.Sleep(min(d, time.Second))
	}
}

// catchUpGrace is the wall time a container's timer is given to fire past its due instant.
const catchUpGrace = 100 * time.Millisecond

func (t *ctrTarget) Journal(ctx context.Context) ([]fakeserver.Record, error) {
	if link := t.ctr.Link(); link != nil {
		// The server announces its exit at its instant, before its process has ended: its
		// last records reach the journal file as it ends.
		if _, exited := link.Exited(); exited {
			select {
			case <-link.Done():
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
		}
	}
	return t.ctr.Journal(ctx)
}

func (t *ctrTarget) Logs(ctx context.Context) ([]byte, error) { return t.ctr.Logs(ctx) }

// Wait returns the exit code watch saw; a container removed without one is an error.
func (t *ctrTarget) Wait(ctx context.Context) (int, error) {
	return waitExit(ctx, t.done, t.Exited, "the container was removed before it exited")
}

// waitExit waits until done is closed (or ctx ends) and returns the exit code exited then
// reports, or an error saying none was seen.
func waitExit(ctx context.Context, done <-chan struct{}, exited func() (int, bool), none string) (int, error) {
	select {
	case <-done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	if code, ok := exited(); ok {
		return code, nil
	}
	return 0, errors.New(none)
}

// ServerTime implements serverTimer: it maps at, read on t's clock, onto the container's
// clock through the whole journal's tightest (wall, at) pair. The shift is never negative
// (recs include the records the clock was aligned on), and a claim made after the server
// journaled its ready state maps to no earlier than that state's offset, as it does in-process.
func (t *ctrTarget) ServerTime(at time.Time, recs []fakeserver.Record) time.Time {
	if t.vclock != nil {
		return at // one clock
	}
	origin, ok := ClockOrigin(recs, t.speed)
	if !ok || at.IsZero() || !origin.Before(t.origin) {
		return at
	}
	return at.Add(time.Duration(float64(t.origin.Sub(origin)) * t.speed))
}

// Stop removes the container (its Wait then returns an error and watch ends; if removing
// fails, watch is told to end) and the files, and gives the daemon slot back.
func (t *ctrTarget) Stop(ctx context.Context) error {
	t.ToolStarted()
	var err error
	if t.ctr != nil {
		err = t.ctr.Stop(ctx)
		if err != nil && (errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "deadline exceeded")) {
			// A busy daemon can take longer than one stop's deadline: try once more with
			// time to spare rather than leave the container to the sweep.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			if err = t.ctr.Stop(rctx); fakeserver.IsGone(err) {
				err = nil
			}
			cancel()
		}
	}
	if t.release != nil {
		t.release()
	}
	if t.stopWatch != nil {
		t.stopWatch()
	}
	t.vclock.Close()
	if rerr := os.RemoveAll(t.dir); err == nil {
		err = rerr
	}
	return err
}

// seed is the compile seed a case was built with.
func (c Case) seed() int64 {
	if c.Compiled != nil {
		return c.Compiled.Seed
	}
	return 1
}
