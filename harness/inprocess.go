package harness

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/vtime"
)

// NewCase compiles a scenario into a runnable case.
func NewCase(s *scenarios.Scenario, seed int64) (Case, error) {
	comp, err := scenarios.Compile(s, seed)
	if err != nil {
		return Case{}, err
	}
	c := Case{Name: s.Name, Scenario: s, Compiled: comp, Timeline: comp.Timeline, Expect: s.Expect.Verdict}
	c.Predicted = s.Expect.Truth()
	return c, nil
}

// InProcess runs each case's fake server inside this process (fakeserver.Start): no Docker,
// one goroutine set and one loopback port per run.
type InProcess struct {
	// Dir holds each run's server log (tools may tail it); "" uses os.TempDir. Files are
	// removed when the run's target is closed.
	Dir string
}

// Name implements Launcher.
func (InProcess) Name() string { return "inprocess" }

// Published implements Launcher: the server binds the port itself.
func (InProcess) Published(float64) bool { return false }

// Overhead implements Launcher: goroutine scheduling and faketime process start-up on a
// busy 2-core machine.
func (InProcess) Overhead() time.Duration { return 250 * time.Millisecond }

// Launch implements Launcher.
func (l InProcess) Launch(ctx context.Context, c Case, speed float64) (Target, error) {
	var clock replay.Clock
	var vclock *vtime.Clock
	if speed == Virtual {
		vclock = vtime.New(c.Timeline.Start, vtime.Options{})
		clock = vclock
	} else {
		if err := replay.CheckFactor(speed); err != nil {
			return nil, err
		}
		clock = replay.Scaled(c.Timeline.Start, speed)
	}
	dir, err := os.MkdirTemp(l.Dir, "ir-"+c.Name+"-")
	if err != nil {
		vclock.Close()
		return nil, fmt.Errorf("run directory: %w", err)
	}
	t := &inprocTarget{clock: clock, vclock: vclock, start: c.Timeline.Start, dir: dir, log: filepath.Join(dir, "server.log")}
	cfg := fakeserver.Config{Timeline: c.Timeline}
	if c.Compiled != nil {
		cfg = ConfigFor(c.Compiled)
	}
	if vclock != nil {
		// Time starts once the tool runs: its start-up is work like any other.
		t.startHold = vclock.Hold()
	}
	// Port 0: the server reserves a loopback port below the kernel's ephemeral range until
	// Stop. A port from bind(0) could meanwhile become a tool's outgoing local port, and a
	// holder binding it at start died of EADDRINUSE.
	cfg.Args.Host, cfg.Args.Port = "127.0.0.1", 0
	cfg.Clock = clock
	cfg.LogFile = t.log
	cfg.Journal = &bytes.Buffer{} // fakeserver reads it back under its own lock
	srv, err := fakeserver.Start(context.WithoutCancel(ctx), cfg)
	if err != nil {
		vclock.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	t.srv = srv
	return t, nil
}

// ConfigFor is the fake server configuration of a compiled scenario, pinned to loopback on a
// port picked at start: runs go in parallel and must neither collide on the scenario's own
// --port nor listen beyond this host.
func ConfigFor(c *scenarios.Compiled) fakeserver.Config {
	cfg := fakeserver.FromCompiled(c)
	cfg.Args.Host, cfg.Args.Port = "127.0.0.1", 0
	return cfg
}

var _ Target = (*inprocTarget)(nil)

type inprocTarget struct {
	srv    *fakeserver.Server
	clock  replay.Clock
	vclock *vtime.Clock // the clock when the run is on virtual time, else nil
	// startHold keeps a virtual clock at the start until the tool is on it (ToolStarted).
	startHold func()
	start     time.Time
	dir       string
	log       string
}

func (t *inprocTarget) Clock() replay.Clock { return t.clock }

// ToolStarted implements toolStarter.
func (t *inprocTarget) ToolStarted() {
	if t.startHold != nil {
		t.startHold()
	}
}

func (t *inprocTarget) BaseURL() string       { return t.srv.BaseURL() }
func (t *inprocTarget) LogFile() string       { return t.log }
func (t *inprocTarget) Exited() (int, bool)   { return t.srv.ExitCode() }
func (t *inprocTarget) Done() <-chan struct{} { return t.srv.Done() }
func (t *inprocTarget) OnExit(f func(int))    { t.srv.OnExit(f) }
func (t *inprocTarget) CatchUp(at time.Time) {
	if !at.IsZero() {
		t.srv.CatchUp(at.Sub(t.start))
	}
}
func (t *inprocTarget) Logs(ctx context.Context) ([]byte, error) { return t.srv.Logs(ctx) }
func (t *inprocTarget) Wait(ctx context.Context) (int, error)    { return t.srv.Wait(ctx) }

// Stop ends the server and releases its port, clock and files.
func (t *inprocTarget) Stop(ctx context.Context) error {
	t.ToolStarted()
	err := t.srv.Stop(ctx)
	t.vclock.Close()
	if rerr := os.RemoveAll(t.dir); err == nil {
		err = rerr
	}
	return err
}

func (t *inprocTarget) Journal(ctx context.Context) ([]fakeserver.Record, error) {
	return t.srv.Journal(ctx)
}

// requestStats counts the requests clients sent (the server's own warmup excluded) and finds
// the slowest passing health check.
func requestStats(recs []fakeserver.Record) (n int, healthLatency time.Duration) {
	for _, r := range fakeserver.Requests(recs) {
		if r.Internal {
			continue
		}
		n++
		if r.Status == 200 && (r.Route == "/health" || r.Route == "/health_generate") {
			healthLatency = max(healthLatency, r.Latency)
		}
	}
	return n, healthLatency
}
