package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
)

// Container runs each case's fake server in a container (fakeserver.Run) from Image, built
// once with fakeserver.BuildImage. Containers carry fakeserver's run labels, so
// fakeserver.Sweep removes any that an interrupted run leaves.
type Container struct {
	Image string
	// Dir holds each run's copy of the container log (tools may tail it); "" uses os.TempDir.
	Dir string
}

// Name implements Launcher.
func (Container) Name() string { return "container" }

// Published implements Launcher: docker-proxy holds the host port from the start.
func (Container) Published() bool { return true }

// Overhead implements Launcher: Docker reports an exit and docker-proxy a new listener up to
// ~2 s late on a busy 2-core host.
func (Container) Overhead() time.Duration { return 2 * time.Second }

// Launch implements Launcher. The container's clock starts when fakesglang starts, after
// Docker's start-up; the harness clock is aligned to it from the journal's first record
// (its wall time and scenario offset), so claims and the journal share one time line.
func (l Container) Launch(ctx context.Context, c Case, speed float64) (Target, error) {
	if l.Image == "" {
		return nil, errors.New("container launcher: no image; build one with fakeserver.BuildImage (or run without --container)")
	}
	if c.Scenario == nil {
		return nil, fmt.Errorf("case %s has no scenario file for the container", c.Name)
	}
	dir, err := os.MkdirTemp(l.Dir, "ir-"+c.Name+"-")
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, "server.log")
	logf, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	// A scenario file on this host is copied in; a catalogue scenario (whose Path names its
	// place inside the embedded catalogue) is looked up by name in the image.
	source := c.Name
	if c.Scenario.Path != "" {
		if _, err := os.Stat(c.Scenario.Path); err == nil {
			source = c.Scenario.Path
		}
	}
	t := &ctrTarget{dir: dir, log: logPath, logf: logf, start: c.Timeline.Start, done: make(chan struct{})}
	ctr, err := fakeserver.Run(context.WithoutCancel(ctx), l.Image,
		fakeserver.WithScenario(source), fakeserver.WithSpeed(speed),
		fakeserver.WithSeed(c.seed()),
		testcontainers.WithLogConsumers(fileConsumer{f: logf, mu: &t.mu}),
	)
	t.ctr = ctr
	if err != nil {
		_ = t.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	if t.clock, err = alignClock(ctx, ctr, c.Timeline.Start, speed); err != nil {
		_ = t.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	go t.watch()
	return t, nil
}

// alignClock builds a scaled clock that reads what the container's fakesglang clock reads.
func alignClock(ctx context.Context, ctr *fakeserver.Container, start time.Time, speed float64) (replay.Clock, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		recs, err := ctr.Journal(ctx)
		if err == nil && len(recs) > 0 {
			r := recs[0]
			// The container's clock read start+r.At at wall r.Wall.
			now := start.Add(r.At + time.Duration(float64(time.Since(r.Wall))*speed))
			return replay.Scaled(now, speed), nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("container launcher: no journal record within 30s (last error: %v); is the image current?", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

type fileConsumer struct {
	f  *os.File
	mu *sync.Mutex
}

func (c fileConsumer) Accept(l testcontainers.Log) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _ = c.f.Write(l.Content)
}

type ctrTarget struct {
	ctr   *fakeserver.Container
	clock replay.Clock
	start time.Time
	dir   string
	log   string
	logf  *os.File

	mu     sync.Mutex
	done   chan struct{}
	code   int
	exited bool
}

// watch waits for the container to exit. Docker's wait API answers the moment the process
// ends (polling the state lags by a second or more on a busy daemon, which is a minute of
// scenario time at S=60); the state poll is the fallback.
func (t *ctrTarget) watch() {
	defer close(t.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if cli, err := testcontainers.NewDockerClientWithOpts(ctx); err == nil {
		defer cli.Close()
		w := cli.ContainerWait(ctx, t.ctr.GetContainerID(), client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case r := <-w.Result:
			t.mu.Lock()
			t.code, t.exited = int(r.StatusCode), true
			t.mu.Unlock()
			return
		case <-w.Error: // fall back to polling
		}
	}
	for fails := 0; fails < 20; fails++ {
		code, err := t.ctr.Wait(ctx)
		if err == nil {
			t.mu.Lock()
			t.code, t.exited = code, true
			t.mu.Unlock()
			return
		}
		if strings.Contains(err.Error(), "No such container") {
			return
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (t *ctrTarget) Clock() replay.Clock   { return t.clock }
func (t *ctrTarget) URL() string           { return t.ctr.BaseURL() }
func (t *ctrTarget) LogFile() string       { return t.log }
func (t *ctrTarget) PID() int              { return 0 }
func (t *ctrTarget) Done() <-chan struct{} { return t.done }

func (t *ctrTarget) Exited() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code, t.exited
}

func (t *ctrTarget) Journal() ([]fakeserver.Record, error) {
	return t.ctr.Journal(context.Background())
}

// Close removes the container (its Wait then returns an error and watch ends) and the files.
func (t *ctrTarget) Close(ctx context.Context) error {
	var err error
	if t.ctr != nil {
		err = t.ctr.Stop(ctx)
	}
	t.mu.Lock()
	cerr := t.logf.Close()
	t.mu.Unlock()
	if err == nil && cerr != nil && !errors.Is(cerr, os.ErrClosed) {
		err = cerr
	}
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
