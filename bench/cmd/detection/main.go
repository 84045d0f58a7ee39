// Command detection measures detection latency, ready and crash, of llmwait against the
// founding incidents' loops: each tool runs in-process against the catalogue's fake servers
// (harness.Matrix, InProcess launcher, shell tools under faketime at -speed) and the table
// shows, per scenario, how long after t_ready or t_dead (scenario time) each tool claimed,
// and each loop's latency as a multiple of llmwait's.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

// defaultScenarios is a representative subset: both founding incidents (the 11-minute cold
// start and the hicache-300 host OOM that preflight predicts), ready on each era and through
// an empty-body 200 and a 700 s load, and deaths during load, capture, init and bind.
var defaultScenarios = []string{
	"hicache-48-cold-start", "hicache-300-host-oom", "s0-happy-era-c", "s1-empty-200",
	"s7-slow-load", "s4-crash-during-load", "cuda-oom-capture", "nccl-init-error", "errno98-after-load",
}

// markerVar is set in this process's environment, which shell tools inherit (with every
// faketime, bash, curl and sleep under them), so a scan of /proc finds any that outlive us.
const markerVar = "INCIDENT_REPLAY_DETECTION_BENCH"

// The default of 4 shell pairs in flight per core (the harness's is 32) keeps the loops near
// their nominal length: every process a loop starts costs S times its real start-up time in
// scenario time, which inflates a loop's latency and so the ratio. Measured on 2 busy cores,
// founding-loop-1 (600 s nominal) gave up at ~36 min of scenario time with 66 shell pairs in
// flight (-scenario all at the harness default), at 12-14 min with 6-18.

func main() {
	var (
		scenarioFlag = flag.String("scenario", strings.Join(defaultScenarios, ","), "comma-separated scenario names, or \"all\" for every catalogue scenario with a ready or a death")
		toolsFlag    = flag.String("tools", "founding-loop-1,founding-loop-2", "comma-separated tools compared with the baseline")
		baseline     = flag.String("baseline", "llmwait", "the tool ratios divide by")
		speed        = flag.Float64("speed", 60, "time compression S: scenario seconds per wall second")
		runs         = flag.Int("runs", 1, "runs per (scenario, tool); cells show the median")
		parallel     = flag.Int("parallel", 4*runtime.NumCPU(), "shell pairs in flight")
		quiet        = flag.Bool("quiet", false, "no per-run progress on stderr")
		seed         = flag.Int64("seed", 1, "seed for compiling scenarios")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *scenarioFlag, *toolsFlag, *baseline, *speed, *runs, *parallel, *quiet, *seed)
	stop()
	// Whatever happened, nothing this run started may survive it.
	if left := killMarked(); len(left) > 0 {
		err = errors.Join(err, fmt.Errorf("killed %d process(es) the run left behind: %v", len(left), left))
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "detection:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, scenarioList, toolList, baseline string, speed float64, runs, parallel int, quiet bool, seed int64) error {
	if runs < 1 {
		return fmt.Errorf("-runs must be at least 1")
	}
	if err := os.Setenv(markerVar, strconv.Itoa(os.Getpid())); err != nil {
		return err
	}
	cases, err := loadCases(scenarioList, seed)
	if err != nil {
		return err
	}
	compared := splitList(toolList)
	tools, err := harness.SelectTools(harness.Builtins(), append([]string{baseline}, compared...))
	if err != nil {
		return err
	}
	ft, err := harness.FindFaketime()
	if err != nil && speed != 1 {
		return err
	}
	var all []harness.Case
	for range runs {
		all = append(all, cases...)
	}
	m := harness.Matrix{
		Runner:   harness.Runner{Launcher: harness.InProcess{}, Faketime: ft, Speed: speed, Expect: harness.DefaultExpect},
		Parallel: parallel,
	}
	if !quiet {
		m.Progress = os.Stderr
	}
	start := time.Now()
	results := m.Run(ctx, all, tools)
	wall := time.Since(start)
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted after %.1fs", wall.Seconds())
	}

	tab := harness.NewLatencyTable(baseline, compared...)
	var errs []error
	for _, r := range results {
		tab.Add(r)
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("detection latency, scenario time after t_ready (ready) or t_dead (death); negative = predicted before it\n")
	fmt.Printf("%d scenario(s) x %d tool(s) x %d run(s) at S=%g, in-process, %d cores, wall %.1fs, load %s\n\n",
		len(cases), len(tools), runs, speed, runtime.NumCPU(), wall.Seconds(), strings.Join(strings.Fields(string(load))[:3], " "))
	if err := tab.Write(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\nratio = tool latency / %s latency; ≥ when %s's latency is under %s (divided by that instead); never = detected nothing\n",
		baseline, baseline, harness.RatioFloor)
	return errors.Join(errs...)
}

// loadCases resolves the selection; each scenario must state a ready or a death, since
// detection latency is measured from one of them.
func loadCases(list string, seed int64) ([]harness.Case, error) {
	var picked []*scenarios.Scenario
	if list == "all" {
		all, err := scenarios.Catalogue()
		if err != nil {
			return nil, err
		}
		picked = all
	} else {
		for _, name := range splitList(list) {
			s, err := scenarios.Lookup(name)
			if err != nil {
				return nil, err
			}
			picked = append(picked, s)
		}
	}
	var cases []harness.Case
	for _, s := range picked {
		c, err := harness.NewCase(s, seed)
		if err != nil {
			return nil, err
		}
		if c.Predicted.Ready == nil && c.Predicted.Dead == nil {
			if list == "all" {
				continue
			}
			return nil, fmt.Errorf("scenario %s states neither a ready nor a death: nothing to detect", s.Name)
		}
		cases = append(cases, c)
	}
	if len(cases) == 0 {
		return nil, errors.New("no scenario selected")
	}
	return cases, nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// killMarked SIGKILLs every other process whose environment carries this run's marker and
// returns their pids: the harness kills each tool's process group, so this finds only what
// escaped one (a bug to report, not to hide).
func killMarked() []int {
	want := []byte(markerVar + "=" + strconv.Itoa(os.Getpid()) + "\x00")
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var killed []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append([]byte{0}, env...), append([]byte{0}, want...)) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed = append(killed, pid)
		}
	}
	return killed
}
