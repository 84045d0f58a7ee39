package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/spf13/cobra"
)

func init() { register(newServeCmd) }

type serveOptions struct {
	scenario         string
	speed            float64
	seed             int64
	port             int
	journal, logFile string
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve --scenario NAME|FILE",
		Short: "Run a scenario's fake SGLang server in-process on 127.0.0.1",
		Long: `Run a scenario's fake SGLang server (what fakesglang runs in a container) in this process.
The URL goes to stderr; stdout carries the server's log exactly as it prints it. The command
exits with the server's exit code (137 for an OOM-killed launch), or 130/143 when stopped by
SIGINT/SIGTERM. The server listens on 127.0.0.1 only, whatever the scenario's --host says.`,
		Example: `  incident-replay serve --scenario s0-happy-era-c --speed 10
  incident-replay serve --scenario ./incident.yaml --port 30000 --journal run.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sigs := make(chan os.Signal, 1)
			signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
			defer signal.Stop(sigs)
			ctx, cancel := context.WithCancelCause(cmd.Context())
			defer cancel(nil)
			go func() {
				select {
				case sig := <-sigs:
					cancel(stopSignal{sig.(syscall.Signal)})
				case <-ctx.Done():
				}
			}()
			code, err := serve(ctx, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if code != 0 {
				return serveExit{code: code, cause: context.Cause(ctx)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "catalogue name (see: incident-replay scenarios list) or scenario file")
	f.Float64Var(&o.speed, "speed", 1, "scenario seconds per wall second (60: a minute of startup per second)")
	f.Int64Var(&o.seed, "seed", 1, "seed for every random choice (same seed, same log and journal)")
	f.IntVar(&o.port, "port", 0, "TCP port on 127.0.0.1 (0: a free one, printed at start)")
	f.StringVar(&o.journal, "journal", "", "write the ground-truth journal (JSON lines) to this file")
	f.StringVar(&o.logFile, "log-file", "", "also write the log to this file (SGLang's --log-file)")
	_ = cmd.MarkFlagRequired("scenario")
	return cmd
}

// stopSignal is the cancellation cause when SIGINT or SIGTERM stops the server.
type stopSignal struct{ sig syscall.Signal }

func (s stopSignal) Error() string { return "stopped by " + s.sig.String() }

// serveExit carries a non-zero exit code to main (exitCoder).
type serveExit struct {
	code  int
	cause error
}

func (e serveExit) ExitCode() int { return e.code }

func (e serveExit) Error() string {
	var sig stopSignal
	if errors.As(e.cause, &sig) {
		return sig.Error()
	}
	return fmt.Sprintf("the fake server exited with code %d (the scenario's ending)", e.code)
}

// serve runs the scenario until the server exits or ctx ends, and returns the exit code:
// the server's own, or 128+signal when a stopSignal cancelled ctx. Everything it started
// (listener, port holder, timers, log file, journal) is released before it returns.
func serve(ctx context.Context, o serveOptions, stdout, stderr io.Writer) (int, error) {
	cfg, err := fakeserver.ConfigForScenario(o.scenario, fakeserver.ScenarioOptions{Seed: o.seed, Speed: o.speed})
	if err != nil {
		return 0, err
	}
	if o.port < 0 || o.port > 65535 {
		return 0, fmt.Errorf("--port %d: use 0 (a free port) or 1..65535", o.port)
	}
	cfg.InheritEnv()
	// A developer's replay stays on loopback even when the captured launch said 0.0.0.0.
	cfg.Args.Host, cfg.Args.Port = "127.0.0.1", o.port
	cfg.Stdout, cfg.Stderr, cfg.LogFile = stdout, stdout, o.logFile
	if o.journal != "" {
		f, err := os.Create(o.journal)
		if err != nil {
			return 0, fmt.Errorf("--journal: %w", err)
		}
		defer f.Close()
		cfg.Journal = f
	}
	srv, err := fakeserver.Start(ctx, cfg)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(stderr, "incident-replay: scenario %s on %s (speed %g, seed %d); the port opens when the scenario binds it\n",
		o.scenario, srv.BaseURL(), o.speed, o.seed)
	code, _ := srv.Wait(ctx) // an ended ctx also stops the server, so Wait returns either way
	if err := srv.Stop(context.Background()); err != nil {
		return 0, err
	}
	if sig, ok := context.Cause(ctx).(stopSignal); ok {
		return 128 + int(sig.sig), nil
	}
	if ctx.Err() != nil {
		code, _ = srv.ExitCode()
	}
	return code, nil
}
