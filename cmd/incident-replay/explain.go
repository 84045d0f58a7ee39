package main

import (
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

func init() { register(newExplainCmd) }

type explainOptions struct {
	score scoreOptions
	svg   string
}

func newExplainCmd() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain SCENARIO TOOL",
		Short: "Run one scorecard cell and say why it has its verdict",
		Long: `explain runs one (scenario, tool) pair as score does, with the same flags, and prints the
ground truth (bound, ready, dead, exit), the tool's claim (outcome and time), the rule that
decided the verdict, the tool's exit code and its last 20 lines of output, and writes the
run's timeline picture (--svg, default SCENARIO--TOOL.svg in the working directory).

  incident-replay explain s9-proxy-env sglang-popen --speed 0
  incident-replay explain s4-crash-during-load mine --tool 'mine=curl -fsS {{.URL}}/health'

Exit status: 0 when the cell met its expectation (or has none), 3 when it missed, 1 when it
could not run.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runExplain(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], args[1], o)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&o.score.userTools, "tool", nil, "add a tool: 'name=bash command template' or 'name=..;budget=..;command=..' (repeatable)")
	f.StringVar(&o.score.toolsFile, "tools-file", "", "add the tools of a tools.yaml file")
	f.Float64Var(&o.score.speed, "speed", 0, "0: event-driven virtual time (a verdict depends on the scenario, seed and tool only); S > 0: wall time compressed S times (faketime for shell tools; load-sensitive)")
	f.BoolVar(&o.score.container, "container", false, "run the fake server in a container instead of in-process")
	f.StringVar(&o.score.image, "image", "", "fakesglang image for --container (default: build it from the source tree)")
	f.Int64Var(&o.score.seed, "seed", 1, "seed for compiling the scenario")
	f.StringVar(&o.svg, "svg", "", "write the run's timeline picture here (default SCENARIO--TOOL.svg; '-' for none)")
	return cmd
}

func runExplain(ctx context.Context, stdout, stderr io.Writer, scenario, tool string, o explainOptions) error {
	res, err := explainRun(ctx, stderr, scenario, tool, o.score)
	if err != nil {
		return err
	}
	picture := o.svg
	if picture == "" {
		picture = res.Scenario + "--" + res.Tool + ".svg"
	}
	if picture == "-" || res.Err != nil {
		picture = ""
	}
	if picture != "" {
		if err := harness.WriteFile(picture, func(w io.Writer) error { return report.WriteRun(w, res) }); err != nil {
			return err
		}
	}
	if err := harness.Explain(res).WriteText(stdout, picture); err != nil {
		return err
	}
	switch {
	case res.Err != nil:
		return errors.New("the pair could not run")
	case !res.Pass():
		return mustPassError{1}
	}
	return nil
}

// explainRun runs the one pair as score would.
func explainRun(ctx context.Context, stderr io.Writer, scenario, tool string, o scoreOptions) (harness.Result, error) {
	cases, err := loadCases([]string{scenario}, o.seed)
	if err != nil {
		return harness.Result{}, err
	}
	o.tools, o.allTools = []string{tool}, false
	tools, err := selectTools(o)
	if err != nil {
		return harness.Result{}, err
	}
	var t harness.Tool // --tool entries are selected too; explain runs the one named
	for _, c := range tools {
		if c.Name == tool {
			t = c
		}
	}
	if t.Name == "" {
		return harness.Result{}, fmt.Errorf("unknown tool %q", tool)
	}
	rundir, err := openRunDir(ctx, stderr)
	if err != nil {
		return harness.Result{}, err
	}
	defer rundir.Close()
	launcher, cleanup, err := launcherFor(ctx, o, stderr, rundir)
	if err != nil {
		return harness.Result{}, err
	}
	defer cleanup()
	ft, err := faketimeFor(o.speed)
	if err != nil {
		return harness.Result{}, err
	}
	r := harness.Runner{Launcher: launcher, Faketime: ft, Speed: o.speed, Expect: harness.DefaultExpect, RunDir: rundir}
	res := r.Run(ctx, cases[0], t)
	if ctx.Err() != nil {
		return res, errors.New("interrupted: the run was stopped and its server removed")
	}
	return res, nil
}
