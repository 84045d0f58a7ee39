package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/ready"
	"github.com/incident-replay/incident-replay/vtime"
)

// llmwaitTool is our own tool, run as the library on the run's clock (so it is compressed
// like everything else) and marked must-pass: it has to reach each scenario's expected verdict.
func llmwaitTool() Tool {
	return Tool{Name: "llmwait", Description: "llmwait library: preflight, process + log watch, probe ladder",
		Wait: LLMWait, Interval: time.Second, Budget: 30 * time.Minute, MustPass: true}
}

// ErrPreflight is what a Go tool's error wraps when it refuses a launch in preflight (a
// predicted failure): scored as detecting the failure, however early.
var ErrPreflight = errors.New("preflight")

// LLMWait runs llmwait's preflight on the case's launch and host, then ready.Wait against
// the server with its log and process.
func LLMWait(ctx context.Context, env Env) error {
	// As `llmwait launch` does: whoever launches with --api-key knows the key, so probes
	// carry it from the first request instead of waiting for the server_args log line.
	var key string
	if len(env.Launch) > 0 {
		fs := ready.Preflight(ctx, ready.PreflightInput{Argv: env.Launch, Host: env.Machine, Env: env.ServerEnv, SkipPort: env.Published})
		if ready.PreflightFailed(fs) {
			var msgs []string
			for _, f := range fs {
				if f.Severity == ready.SeverityError {
					msgs = append(msgs, f.String())
				}
			}
			return fmt.Errorf("%w: %s", ErrPreflight, strings.Join(msgs, "; "))
		}
		if args, _, err := ready.ServerCommandArgs(env.Launch); err == nil {
			key = args.APIKey
		}
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	log := ready.FollowFilePolling(lctx, env.LogFile, 5*time.Millisecond)
	defer log.Close()
	if vc, ok := env.Clock.(*vtime.Clock); ok {
		// A line the server wrote and the follower has not read yet is already in the past.
		defer vc.Attach(unreadLog{log.(interface{ Unread() bool })})()
	}
	_, err := ready.Wait(ctx, ready.Spec{
		Endpoint: env.URL,
		APIKey:   key,
		Clock:    env.Clock,
		Log:      log,
		Process:  procOf(ctx, env),
		Generate: ready.GenerateAuto,
	})
	return err
}

// unreadLog is a log follower as a participant of a virtual clock.
type unreadLog struct{ f interface{ Unread() bool } }

func (u unreadLog) Idle() (bool, time.Time) { return !u.f.Unread(), time.Time{} }

// envProcess lets ready.Wait supervise a server through the harness's view of it.
type envProcess struct {
	env  Env
	done <-chan struct{}
}

// procOf is env's server as a ready.Process. Its Done is closed at the exit after the task
// ctx carries (ready.Wait's loop) is woken, so on virtual time the loop sees the exit at its
// instant (see exitWatch).
func procOf(ctx context.Context, env Env) ready.Process {
	if env.Done == nil || env.Exited == nil {
		return nil
	}
	p := envProcess{env: env, done: env.Done}
	if env.OnExit != nil {
		done := make(chan struct{})
		task := vtime.TaskFrom(ctx)
		env.OnExit(func(int) {
			task.Wake()
			close(done)
		})
		p.done = done
	}
	return p
}

func (p envProcess) Done() <-chan struct{} { return p.done }
func (p envProcess) Status() ready.ExitStatus {
	code, _ := p.env.Exited()
	st := ready.ExitStatus{Code: code}
	if code == 137 {
		st.Signal = "killed"
	}
	return st
}
