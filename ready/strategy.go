package ready

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/moby/moby/api/types/container"
	tcwait "github.com/testcontainers/testcontainers-go/wait"
)

// Strategy adapts llmwait to testcontainers' wait.Strategy: it probes the container's mapped
// port with the full ladder (no 1 s HTTP timeout), follows the container's log for phases and
// fatal lines, and fails as soon as the container stops.
type Strategy struct {
	Port string // container port, e.g. "30000/tcp"
	Spec Spec   // Endpoint, Log and Process are filled from the target
}

var _ tcwait.Strategy = (*Strategy)(nil)

// ForSGLang returns a Strategy for port with spec's options.
func ForSGLang(port string, spec Spec) *Strategy { return &Strategy{Port: port, Spec: spec} }

// WaitUntilReady implements wait.Strategy.
func (s *Strategy) WaitUntilReady(ctx context.Context, target tcwait.StrategyTarget) error {
	host, err := target.Host(ctx)
	if err != nil {
		return fmt.Errorf("llmwait: container host: %w", err)
	}
	if host == "localhost" {
		host = "127.0.0.1" // the IPv6 mapping may belong to another container
	}
	mp, err := target.MappedPort(ctx, s.Port)
	if err != nil {
		return fmt.Errorf("llmwait: mapped port %s: %w", s.Port, err)
	}
	spec := s.Spec
	spec.Endpoint = "http://" + net.JoinHostPort(host, strconv.Itoa(int(mp.Num())))
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if logs, err := target.Logs(ctx); err == nil {
		defer logs.Close()
		spec.Log = logs
	}
	spec.Process = watchState(ctx, target, spec)
	_, err = Wait(ctx, spec)
	return err
}

// stateProc turns target.State polling into a Process.
type stateProc struct {
	done chan struct{}
	st   ExitStatus
}

func (p *stateProc) Done() <-chan struct{} { return p.done }
func (p *stateProc) Status() ExitStatus    { return p.st }

func watchState(ctx context.Context, target tcwait.StrategyTarget, spec Spec) *stateProc {
	p := &stateProc{done: make(chan struct{})}
	clock := spec.Clock
	if clock == nil {
		s, _, _ := spec.withDefaults()
		clock = s.Clock
	}
	go func() {
		t := clock.NewTicker(200 * 1e6)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
			}
			st, err := target.State(ctx)
			if err != nil || st.Running {
				continue
			}
			if st.OOMKilled || st.Status == container.StateExited || st.Status == container.StateDead {
				p.st = ExitStatus{Code: st.ExitCode, OOMKill: st.OOMKilled}
				close(p.done)
				return
			}
		}
	}()
	return p
}
