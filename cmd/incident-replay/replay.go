package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/harness/report"
)

func init() { register(newReplayCmd) }

type replayOptions struct {
	scenario  string
	tool      string
	toolsFile string
	svg       string
	speed     float64
	seed      int64
}

func newReplayCmd() *cobra.Command {
	var o replayOptions
	cmd := &cobra.Command{
		Use:   "replay --scenario NAME --tool NAME --svg run.svg",
		Short: "Run one tool against one scenario and draw its timeline as SVG",
		Long: `replay runs a single (scenario, tool) pair in-process on a clock compressed --speed times,
scores it like score does, and writes the run's picture: the server's phases, every request the
tool made, the ground-truth markers (bound, ready, dead) and the tool's claim, in scenario time.

--svg - writes the picture to stdout; the verdict line goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runReplay(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.scenario, "scenario", "", "scenario name in the catalogue, or a scenario file (*.yaml)")
	f.StringVar(&o.tool, "tool", "", "tool name (built-in, or from --tools-file)")
	f.StringVar(&o.toolsFile, "tools-file", "", "also look tools up in this tools.yaml")
	f.StringVar(&o.svg, "svg", "", "write the run's timeline picture to this file (- for stdout)")
	f.Float64Var(&o.speed, "speed", 0, "0: event-driven virtual time; S > 0: wall time compressed S times")
	f.Int64Var(&o.seed, "seed", 1, "seed for compiling the scenario")
	for _, name := range []string{"scenario", "tool", "svg"} {
		_ = cmd.MarkFlagRequired(name)
	}
	return cmd
}

func runReplay(ctx context.Context, stdout, stderr io.Writer, o replayOptions) error {
	cases, err := loadCases([]string{o.scenario}, o.seed)
	if err != nil {
		return err
	}
	tools, err := selectTools(scoreOptions{tools: []string{o.tool}, toolsFile: o.toolsFile})
	if err != nil {
		return err
	}
	var ft harness.Faketime
	if ft, err = harness.FindFaketime(); err != nil && o.speed != 1 && tools[0].Wait == nil {
		return err // a shell tool cannot see compressed time without faketime
	}
	runner := harness.Runner{Launcher: harness.InProcess{}, Faketime: ft, Speed: o.speed, Expect: harness.DefaultExpect}
	res := runner.Run(ctx, cases[0], tools[0])
	if ctx.Err() != nil {
		return errors.New("interrupted: the run was stopped and its server removed")
	}
	if res.Err != nil {
		return res.Err
	}
	var pic bytes.Buffer
	if err := report.WriteRun(&pic, res); err != nil {
		return err
	}
	out := stderr
	if o.svg == "-" {
		if _, err := stdout.Write(pic.Bytes()); err != nil {
			return err
		}
	} else {
		if err := os.WriteFile(o.svg, pic.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write the picture: %w", err)
		}
		out = stdout
	}
	claimed := "-"
	if !res.Claim.At.IsZero() {
		claimed = harness.FormatDuration(res.ClaimAfter())
	}
	fmt.Fprintf(out, "%s x %s: %s at %s (%s); wall %.1fs\n", res.Scenario, res.Tool, res.Verdict, claimed, res.Reason, res.Wall.Seconds())
	if o.svg != "-" {
		fmt.Fprintf(out, "picture: %s\n", o.svg)
	}
	return nil
}
