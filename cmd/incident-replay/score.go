package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/harness/report"
	"github.com/incident-replay/incident-replay/scenarios"
)

func init() { register(newScoreCmd) }

type scoreOptions struct {
	scenarios  []string
	cpuProfile string
	tools      []string
	userTools  []string
	toolsFile  string
	speed      float64
	container  bool
	image      string
	parallel   int
	markdown   string
	junit      string
	report     string
	seed       int64
	quiet      bool
	allTools   bool
	shard      string
	shardIdx   string
	results    string
	repro      bool
}

func newScoreCmd() *cobra.Command {
	var o scoreOptions
	cmd := &cobra.Command{
		Use:   "score",
		Short: "Run readiness tools against scenarios and print the scorecard",
		Long: `score runs every selected tool against every selected scenario (default: the embedded
catalogue and the built-in tools), in parallel, and scores each tool's claim against the fake
server's ground truth.

Tools: built-ins (see the scorecard's tool list), tools from --tools-file (tools.yaml), and
--tool 'name=command' (exit 0 claims ready) or --tool with the keys of tools.yaml separated
by ';' ('name=mine;budget=20m;interval=5s;claim=line:^UP;scaled=false;command=...'). A
command is a bash template with {{.URL}} {{.Host}} {{.Port}} {{.LogFile}} {{.PID}}
{{.Timeout}} {{.Scenario}} {{.APIKey}}, {{.Launch}} (the scenario's server as a command a
launch tool starts: on virtual time a real fakesglang process, the tool's child) and
{{.HostProfile}} (the scenario's host, as llmwait --host-profile reads it). Shell tools get
the scenario's environment (its proxy variables too).

By default (--speed 0) every pair runs on event-driven virtual time: the clock stands still
while the server or the tool works and jumps to the next due instant when both are idle. Go
tools take the clock; shell tools load an LD_PRELOAD library (built with the system C
compiler on first use) that serves their time and sleeps from a page that follows it; a tool
whose command starts a Go or static binary (LD_PRELOAD cannot reach those) is traced onto
the clock with ptrace. A pair's verdict then depends on the scenario, the seed and the tool
alone, not on the machine's load. With --container the server's clock in the container
follows the run's over a socket in the run directory, and the container shares the host
network (listening on 127.0.0.1). The scorecard says which mode each pair ran in.

--speed S > 0 runs on wall time compressed S times instead (shell tools under faketime, Go
tools on a scaled clock): every scheduling delay d of the machine becomes S x d of scenario
time, so a loaded machine changes claim times and some verdicts.

--shard i/n runs slice i of n of the matrix (pair k, in scenario x tool order, goes to
shard k mod n + 1, whatever the timing) and needs --results FILE; 'incident-replay merge'
joins the shards' files into the scorecard and reports of the whole matrix. --reproducible
leaves out what depends on the machine (wall times, the loopback port each run got), so runs
at --speed 0 compare byte for byte.

Each run keeps its files in a directory under $TMPDIR/incident-replay, locked while it runs,
with a record of its tools' process groups, /dev/shm objects and containers. A run killed
before it could clean up (SIGKILL) leaves them there; the next score removes them first and
prints one line saying what it removed.

Exit status: 0 when every must-pass tool (llmwait) reached each scenario's expected verdict,
3 when one missed, 1 on other errors.

` + verdictHelp() + `
'incident-replay explain SCENARIO TOOL' runs one cell and prints why it has its verdict.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			if o.cpuProfile != "" {
				f, err := os.Create(o.cpuProfile)
				if err != nil {
					return err
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return err
				}
				defer pprof.StopCPUProfile()
			}
			return runScore(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.scenarios, "scenario", nil, "scenario names or scenario files (*.yaml); default the whole catalogue")
	f.StringSliceVar(&o.tools, "tool-name", nil, "run only these tools (by name; default the core set plus your own)")
	f.StringArrayVar(&o.userTools, "tool", nil, "add a tool: 'name=bash command template' or 'name=..;budget=..;interval=..;claim=..;command=..' (repeatable)")
	f.StringVar(&o.toolsFile, "tools-file", "", "add the tools of a tools.yaml file")
	f.Float64Var(&o.speed, "speed", 0, "0: event-driven virtual time (a verdict depends on the scenario, seed and tool only); S > 0: wall time compressed S times (faketime for shell tools; load-sensitive)")
	f.BoolVar(&o.container, "container", false, "run each fake server in a container instead of in-process")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write this process's CPU profile to FILE (go tool pprof), for the benchmarks")
	_ = f.MarkHidden("cpuprofile")
	f.StringVar(&o.image, "image", "", "fakesglang image for --container (default: build it from the source tree)")
	f.IntVar(&o.parallel, "parallel", 0, "shell-tool pairs in flight (default 8 per core on virtual time, 16 per core at --speed S; Go-tool pairs all run at once; with --container, at most 4 containers per core run at once, whatever --parallel says)")
	f.StringVar(&o.markdown, "markdown", "", "also write the scorecard as Markdown to this file")
	f.StringVar(&o.junit, "junit", "", "also write a JUnit XML report to this file")
	f.StringVar(&o.report, "report", "", "also write an HTML report with a timeline picture per run (index.html, report.md, runs/*.svg) into this directory")
	f.Int64Var(&o.seed, "seed", 1, "seed for compiling scenarios")
	f.BoolVar(&o.quiet, "quiet", false, "no per-run progress on stderr")
	f.BoolVar(&o.allTools, "all-tools", false, "run every built-in tool (default: the core set, one tool per family)")
	f.StringVar(&o.shard, "shard", "", "run only slice i/n of the matrix (e.g. 2/3); needs --results")
	f.StringVar(&o.shardIdx, "shard-index", "", "--shard counted from 0 (k/n is shard k+1 of n), for an Indexed Job's $(JOB_COMPLETION_INDEX)/N")
	f.StringVar(&o.results, "results", "", "also write the results as JSON to this file (the input of 'incident-replay merge')")
	f.BoolVar(&o.repro, "reproducible", false, "leave out what depends on the machine (wall times, the runs' loopback ports), so runs at --speed 0 compare byte for byte")
	return cmd
}

// verdictHelp lists the verdict classes as the scorecard writes them, with their rules.
func verdictHelp() string {
	var b strings.Builder
	b.WriteString("Verdicts (scorecard cell: class: rule; times are scenario time from launch):\n")
	for _, d := range harness.Definitions() {
		fmt.Fprintf(&b, "  %-9s %s: %s\n", d.Cell, d.Verdict, d.Meaning)
	}
	return b.String()
}

// mustPassError makes `score` exit 3 when a must-pass tool missed.
type mustPassError struct{ n int }

func (e mustPassError) Error() string {
	return fmt.Sprintf("%d must-pass run(s) missed the expected verdict (see \"Expected vs got\")", e.n)
}
func (e mustPassError) ExitCode() int { return 3 }

func runScore(ctx context.Context, stdout, stderr io.Writer, o scoreOptions) error {
	shard, err := shardOf(o)
	if err != nil {
		return err
	}
	cases, err := loadCases(o.scenarios, o.seed)
	if err != nil {
		return err
	}
	tools, err := selectTools(o)
	if err != nil {
		return err
	}
	rundir, err := openRunDir(ctx, stderr)
	if err != nil {
		return err
	}
	defer rundir.Close()
	launcher, cleanup, err := launcherFor(ctx, o, stderr, rundir)
	if err != nil {
		return err
	}
	defer cleanup()
	ft, err := faketimeFor(o.speed)
	if err != nil {
		return err
	}
	m := harness.Matrix{
		Runner:   harness.Runner{Launcher: launcher, Faketime: ft, Speed: o.speed, Expect: harness.DefaultExpect, RunDir: rundir},
		Parallel: o.parallel,
	}
	if !o.quiet {
		m.Progress = stderr
	}
	pairs := harness.Pairs(cases, tools, shard)
	slice := ""
	if !shard.Whole() {
		slice = fmt.Sprintf(", shard %s: %d runs", shard, len(pairs))
	}
	fmt.Fprintf(stderr, "score: %d scenarios x %d tools at %gx (%s)%s\n", len(cases), len(tools), o.speed, launcher.Name(), slice)
	start := time.Now()
	results := m.RunPairs(ctx, pairs)
	card := harness.Scorecard{Results: results, Speed: o.speed, Wall: time.Since(start), Where: launcher.Name(), Tools: tools}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %.1fs: runs in flight were stopped and their servers removed", card.Wall.Seconds())
	}
	if o.repro {
		card = card.Reproducible()
	}
	if o.results != "" {
		f, err := harness.NewResults(shard, o.seed, card, pairs, cases, tools)
		if err == nil {
			err = harness.WriteResults(o.results, f)
		}
		if err != nil {
			return err
		}
	}
	return writeCard(stdout, stderr, card, o.markdown, o.junit, o.report)
}

// writeCard prints the scorecard, writes the files asked for and fails (exit 3) when a
// must-pass tool missed.
func writeCard(stdout, stderr io.Writer, card harness.Scorecard, markdown, junit, reportDir string) error {
	if err := card.WriteTable(stdout); err != nil {
		return err
	}
	if markdown != "" {
		if err := harness.WriteFile(markdown, card.WriteMarkdown); err != nil {
			return err
		}
	}
	if junit != "" {
		if err := harness.WriteFile(junit, card.WriteJUnit); err != nil {
			return err
		}
	}
	if reportDir != "" {
		sum, err := report.Write(reportDir, card)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "score: report %s (%d pictures, %d bytes)\n", sum.Index, sum.Pictures, sum.Bytes)
	}
	if n := len(card.MustPassFailures()); n > 0 {
		return mustPassError{n}
	}
	return nil
}

// faketimeFor finds faketime, which every speed but 1 and virtual time needs; S=1 still
// uses it when present, for the scenario epoch.
func faketimeFor(speed float64) (harness.Faketime, error) {
	ft, err := harness.FindFaketime()
	if err != nil && speed != 1 && speed != harness.Virtual {
		return ft, err
	}
	return ft, nil
}

// shardOf reads --shard or --shard-index (neither: the whole matrix); a shard needs --results.
func shardOf(o scoreOptions) (harness.Shard, error) {
	var (
		sh  harness.Shard
		err error
	)
	switch {
	case o.shard != "" && o.shardIdx != "":
		return sh, errors.New("--shard and --shard-index say the same thing: pass one")
	case o.shard != "":
		if sh, err = harness.ParseShard(o.shard); err != nil {
			return sh, fmt.Errorf("--shard: %w", err)
		}
	case o.shardIdx != "":
		if sh, err = harness.ParseShardIndex(o.shardIdx); err != nil {
			return sh, fmt.Errorf("--shard-index: %w", err)
		}
	default:
		return sh, nil
	}
	if o.results == "" {
		return sh, errors.New("--shard needs --results FILE: a shard's results are read back by 'incident-replay merge'")
	}
	return sh, nil
}

func selectTools(o scoreOptions) ([]harness.Tool, error) {
	all := harness.Builtins()
	if o.toolsFile != "" {
		ts, err := harness.LoadTools(o.toolsFile)
		if err != nil {
			return nil, err
		}
		all = append(all, ts...)
	}
	var user []harness.Tool
	for _, v := range o.userTools {
		t, err := harness.ParseToolFlag(v)
		if err != nil {
			return nil, err
		}
		user = append(user, t)
	}
	all = append(all, user...)
	if err := uniqueNames(all, len(harness.Builtins())); err != nil {
		return nil, err
	}
	names := o.tools
	if len(names) == 0 && !o.allTools {
		names = slices.Clone(harness.CoreTools)
		for _, t := range all[len(harness.Builtins()):] { // tools-file and --tool entries
			names = append(names, t.Name)
		}
	} else if len(names) > 0 {
		for _, t := range user { // --tool adds to an explicit selection
			if !slices.Contains(names, t.Name) {
				names = append(names, t.Name)
			}
		}
	}
	return harness.SelectTools(all, names)
}

// uniqueNames fails on two tools with one name; the first nBuiltin of all are built-ins.
func uniqueNames(all []harness.Tool, nBuiltin int) error {
	first := map[string]int{}
	for i, t := range all {
		j, dup := first[t.Name]
		if !dup {
			first[t.Name] = i
			continue
		}
		if j < nBuiltin {
			return fmt.Errorf("tool %q clashes with the built-in tool %s (%s): pick another name", t.Name, t.Name, all[j].Description)
		}
		return fmt.Errorf("two tools are named %q: rename one (names must be unique)", t.Name)
	}
	return nil
}

// loadCases resolves names in the catalogue and paths as files; none means the catalogue.
func loadCases(names []string, seed int64) ([]harness.Case, error) {
	var list []*scenarios.Scenario
	if len(names) == 0 {
		all, err := scenarios.Catalogue()
		if err != nil {
			return nil, err
		}
		list = all
	}
	for _, n := range names {
		s, err := scenarios.Resolve(n)
		if err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	var cases []harness.Case
	var errs []error
	for _, s := range list {
		c, err := harness.NewCase(s, seed)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cases = append(cases, c)
	}
	return cases, errors.Join(errs...)
}

// openRunDir first removes what runs killed before they could clean up left behind (their
// processes, /dev/shm objects, containers and directories), then claims a run directory
// for this run. A failed sweep is reported and does not stop the run.
func openRunDir(ctx context.Context, stderr io.Writer) (*harness.RunDir, error) {
	swept, err := harness.SweepRuns(ctx, "")
	if line := swept.String(); line != "" {
		fmt.Fprintln(stderr, "score:", line)
	}
	if err != nil {
		fmt.Fprintln(stderr, "score: cleaning up after killed runs:", err)
	}
	return harness.NewRunDir("")
}

// launcherFor picks where fake servers run, with each run's files in rundir. Containers need
// the fakesglang image: --image, or built from the module source around the working
// directory. cleanup sweeps this run's containers, including any an interrupt left behind.
func launcherFor(ctx context.Context, o scoreOptions, stderr io.Writer, rundir *harness.RunDir) (harness.Launcher, func(), error) {
	if !o.container {
		return harness.InProcess{Dir: rundir.Path()}, func() {}, nil
	}
	if err := rundir.TrackContainers(fakeserver.RunID); err != nil {
		return nil, nil, err
	}
	for k, v := range map[string]string{"TESTCONTAINERS_RYUK_DISABLED": "true", "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1"} {
		if os.Getenv(k) == "" {
			os.Setenv(k, v)
		}
	}
	image := o.image
	if image == "" {
		root, err := moduleRoot()
		if err != nil {
			return nil, nil, fmt.Errorf("--container needs the fakesglang image: pass --image TAG, or run inside the incident-replay source tree (%v)", err)
		}
		fmt.Fprintln(stderr, "score: building the fakesglang image from", root)
		bctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		if image, err = fakeserver.BuildImage(bctx, root); err != nil {
			return nil, nil, fmt.Errorf("build the fakesglang image: %w", err)
		}
		// Every change to fakesglang is a new image: drop this checkout's older ones.
		if _, err := fakeserver.PruneImages(bctx, image); err != nil {
			fmt.Fprintln(stderr, "score: removing older fakesglang images:", err)
		}
	}
	cleanup := func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if n, err := fakeserver.Sweep(sctx, fakeserver.RunID); err != nil {
			fmt.Fprintln(stderr, "score: sweeping containers:", err)
		} else if n > 0 {
			fmt.Fprintf(stderr, "score: removed %d leftover container(s)\n", n)
		}
	}
	return harness.Container{Image: image, Dir: rundir.Path()}, cleanup, nil
}

// moduleRoot finds the directory holding this project's go.mod above the working directory.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/incident-replay/incident-replay") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no incident-replay go.mod above the working directory")
		}
		dir = parent
	}
}
