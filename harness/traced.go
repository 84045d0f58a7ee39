package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
	"github.com/incident-replay/incident-replay/vtime/ptrace"
)

// runTraced runs the rendered script under bash with every process of it traced onto the
// run's virtual clock (ModePtrace): for a tool whose executable is a Go or static binary,
// which the LD_PRELOAD library cannot reach.
func (r shellRun) runTraced(ctx context.Context, script string) (Claim, error) {
	vc, ok := r.clock.(*vtime.Clock)
	if !ok {
		return Claim{}, fmt.Errorf("tool %s: tracing onto virtual time needs a virtual clock (run with --speed 0)", r.tool.Name)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		return Claim{}, fmt.Errorf("bash not found on PATH: shell tools need it")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return Claim{}, err
	}
	// The output pipe must be drained before time moves on, as for any shell tool on
	// virtual time.
	detach := vc.Attach(pipeParticipant{pr})
	defer detach()
	tr, err := ptrace.Start(vc, ptrace.Options{Argv: []string{bash, "-c", script}, Env: r.env, Out: pw, Release: r.release})
	pw.Close()
	if err != nil {
		pr.Close()
		return Claim{}, fmt.Errorf("tool %s: %w", r.tool.Name, err)
	}
	defer tr.Close()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g := toolGroup{pgid: tr.Pid(), exited: make(chan struct{}), exitCode: tr.ExitCode, recorded: tr.Recorded,
		stalls: stallCap(cctx, vc, "of CPU", groupCPU(tr.Pid())), requests: r.requests(ctx)}
	untrack := r.rundir.trackGroup(g.pgid)
	go func() {
		<-tr.Done()
		close(g.exited)
	}()
	if r.started != nil {
		r.started()
	}
	out := r.scanOutput(pr)
	limit := newLimitTimer(r.clock, r.limit)
	defer limit.Stop()
	claim, stopped, ctxErr := r.await(ctx, g, limit)
	g.kill()
	out.drain()
	untrack()
	if ctxErr != nil {
		return Claim{}, ctxErr
	}
	return r.conclude(claim, stopped, out), nil
}

// pipeParticipant keeps the clock while the tool's output pipe holds unread bytes.
type pipeParticipant struct{ f *os.File }

func (p pipeParticipant) Idle() (bool, time.Time) { return vtime.Unread(p.f) == 0, time.Time{} }
