package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/truth"
	"github.com/incident-replay/incident-replay/vtime"
	"github.com/incident-replay/incident-replay/vtime/ptrace"
)

// Result is one (scenario, tool) run, scored.
type Result struct {
	Scenario string
	Tool     string
	Kind     string  // the tool's kind: shell or go
	Speed    float64 // the S the pair ran at (1 for unscaled tools)
	Unscaled bool    // ran at S=1: an unscaled tool, or a Go or static binary that could not be traced
	Mode     Mode    // how the tool saw time
	Exec     ExecKind
	Verdict  Verdict
	Expect   Verdict // "" when nothing is expected of this tool here
	MustPass bool
	Reason   string
	Claim    Claim
	// Start is the scenario epoch: Truth's offsets count from it, Claim.At is on its clock.
	Start time.Time
	// Truth is what the server did: the journal's, with events the run ended before taken
	// from the scenario's expect block (Predicted).
	Truth     truth.Truth
	Predicted bool
	// Requests is how many requests clients sent the server (its own warmup excluded).
	Requests int
	// HealthLatency is the slowest passing health check the journal shows (a slow_health
	// fault or a loaded server): no probe can claim ready sooner after t_ready than that.
	HealthLatency time.Duration
	Limit         time.Duration // the harness limit (scenario time)
	Wall          time.Duration
	Output        string // the tool's last output lines (shell tools)
	// Journal is the server's ground-truth record of the run (for pictures and reports).
	Journal []fakeserver.Record
	Err     error // the harness could not run the pair; Verdict is empty
	// StopErr says the server could not be stopped once the run was scored (a Docker daemon
	// that does not answer): the verdict stands. A container left so carries fakeserver's run
	// labels, and fakeserver.Sweep removes it (score does at exit).
	StopErr error
}

// Pass reports whether the run met its expectation (true when there is none).
func (r Result) Pass() bool {
	return r.Err == nil && (r.Expect == "" || r.Verdict == r.Expect)
}

// ClaimAfter is the claim time as an offset from launch.
func (r Result) ClaimAfter() time.Duration {
	if r.Claim.At.IsZero() {
		return 0
	}
	return r.Claim.At.Sub(r.Start)
}

// Limit is the harness limit for a pair: past everything the scenario scripts and past the
// tool's own budget, so only a tool that would never return is scored hung.
func Limit(c Case, t Tool) time.Duration {
	budget := t.Budget
	if t.Wait == nil {
		// Under faketime every process a shell tool spawns costs S times its real start-up
		// time in scenario time: measured ~0.25 s per process at S=60 on an idle machine and
		// ~2 s at load average 20 on 2 cores, so a count-bound loop (120 x sleep 5) stretches.
		// The limit allows half again its budget; a shell tool still starting processes at
		// the limit is given more (see MaxExtension), one blocked in a call is not.
		budget += budget / 2
	}
	base := max(c.Horizon(), budget)
	return base + max(2*time.Minute, base/5)
}

// Virtual is the Speed of runs on event-driven virtual time (vtime): the clock stands still
// while the server or the tool works and jumps to the next due instant when both are idle,
// so a verdict depends on the scenario, the seed and the tool, never on the machine.
const Virtual = 0.0

// Runner runs single pairs.
type Runner struct {
	Launcher Launcher
	Faketime Faketime
	// Speed is S: scenario seconds per wall second, or Virtual. Unscaled tools run at 1.
	Speed float64
	// Expect decides what a tool must conclude on a case; nil: the case's verdict for
	// must-pass tools, nothing for the rest.
	Expect func(c Case, t Tool) (Verdict, bool)
	// RunDir records the shell tools' process groups and /dev/shm objects, so a later run
	// can remove them if this one is killed; nil records nothing.
	RunDir *RunDir
	// BinDir holds fakesglang and llmwait (make build's bin/): shell tools find them first on
	// PATH, and a launch tool's {{.Launch}} on virtual time runs that fakesglang as its own
	// child. "" looks beside this executable.
	BinDir string
}

// binDir is where the project's binaries are: BinDir, or this executable's directory when it
// holds fakesglang.
func (r Runner) binDir() string {
	if r.BinDir != "" {
		return r.BinDir
	}
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	dir := filepath.Dir(exe)
	if _, err := os.Stat(filepath.Join(dir, "fakesglang")); err != nil {
		return ""
	}
	return dir
}

// Run launches c's server, runs t against it until t returns or the harness limit, stops the
// server and scores the claim against the journal.
func (r Runner) Run(ctx context.Context, c Case, t Tool) (res Result) {
	res = Result{Scenario: c.Name, Tool: t.Name, Kind: t.Kind(), Unscaled: t.Unscaled, MustPass: t.MustPass, Limit: Limit(c, t)}
	bin := r.binDir()
	res.Speed, res.Mode, res.Exec = pickMode(t, r.Speed, r.Launcher, toolPath(bin))
	res.Unscaled = res.Unscaled || (res.Mode == ModeReal && r.Speed != 1)
	if r.Expect != nil {
		if v, ok := r.Expect(c, t); ok {
			res.Expect = v
		}
	} else if t.MustPass {
		res.Expect = c.Expect
	}
	if res.Speed != Virtual {
		if err := replay.CheckFactor(res.Speed); err != nil {
			res.Err = err
			return res
		}
	}
	start := time.Now()
	defer func() { res.Wall = time.Since(start) }()

	launcher := r.Launcher
	if fs := filepath.Join(bin, "fakesglang"); t.usesLaunch() && res.Speed == Virtual && bin != "" {
		// A launch tool on virtual time starts the server itself, as a real process.
		launcher = childLauncher{fakesglang: fs}
	}
	tgt, err := launcher.Launch(ctx, c, res.Speed)
	if err != nil {
		res.Err = fmt.Errorf("launch %s (%s): %w", c.Name, launcher.Name(), err)
		return res
	}
	clock := tgt.Clock()
	out := &tailBuffer{max: 2048}
	claim, err := runTool(ctx, c, t, res.Mode, clock, tgt, launcher.Published(res.Speed), res.Limit, r.Faketime, r.RunDir, bin, out)
	if errors.Is(err, errUntraced) && ptrace.Supported {
		// A Go or static binary the command's first program started: the run so far was not
		// on virtual time, so it is thrown away and the pair runs again, traced.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		_ = tgt.Stop(sctx)
		cancel()
		res.Mode = ModePtrace
		if tgt, err = launcher.Launch(ctx, c, res.Speed); err != nil {
			res.Err = fmt.Errorf("launch %s (%s): %w", c.Name, launcher.Name(), err)
			return res
		}
		clock = tgt.Clock()
		out = &tailBuffer{max: 2048}
		claim, err = runTool(ctx, c, t, res.Mode, clock, tgt, launcher.Published(res.Speed), res.Limit, r.Faketime, r.RunDir, bin, out)
	}
	res.Output = out.String()
	if cu, ok := tgt.(catcher); ok && err == nil {
		cu.CatchUp(claim.At)
	}
	// Read the journal and stop with fresh contexts: an interrupted run must still score what
	// happened and remove its server.
	jctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	journal, terr := tgt.Journal(jctx)
	cancel()
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	cerr := tgt.Stop(cctx)
	cancel()
	if err != nil {
		res.Err = fmt.Errorf("run %s on %s: %w", t.Name, c.Name, err)
		return res
	}
	if terr != nil {
		res.Err = fmt.Errorf("read the journal of %s: %w", c.Name, terr)
		return res
	}
	if cerr != nil {
		// The run is over and its journal read: what is left to remove does not change
		// what the tool did, so the cell is scored.
		res.StopErr = fmt.Errorf("stop %s (%s): %w", c.Name, launcher.Name(), cerr)
	}
	if st, ok := tgt.(serverTimer); ok {
		claim.At = st.ServerTime(claim.At, journal)
	}
	res.Score(c, t, claim, journal, launcher.Overhead())
	return res
}

// Score judges claim, made by t on c's server at res.Speed, against the server's journal, and
// fills the claim, truth, request counts and verdict: events the run ended before come from
// c's prediction, and overhead is the launcher's wall-time lag (Launcher.Overhead). Run calls
// it; a test that runs a tool outside the harness (a wait strategy attached to a container)
// scores its claim the same way. claim.At is on the server's clock.
func (res *Result) Score(c Case, t Tool, claim Claim, journal []fakeserver.Record, overhead time.Duration) {
	res.Claim = claim
	res.Start = c.Timeline.Start
	if !claim.At.IsZero() {
		journal = through(journal, claim.At.Sub(res.Start))
	}
	res.Journal = journal
	part, end := scenarioPart(journal, claim.At.Sub(res.Start), c.tolerance())
	res.Truth, res.Predicted = complete(countFaults(fakeserver.GroundTruth(part), c), c.Predicted, end)
	res.Requests, res.HealthLatency = requestStats(journal)
	pol := PolicyFor(t.Interval, max(c.HealthLatency(), res.HealthLatency), res.Speed, overhead)
	pol.FatalLine = fatalLine(journal)
	res.Verdict, res.Reason = Classify(res.Truth, res.Start, claim, pol)
}

// through is the journal up to offset end, the run's claim. What the server did after it
// depends on how soon the harness read the journal once the tool had returned (a clock with
// only the server on it runs on at once), so it comes from the scenario's prediction instead.
func through(journal []fakeserver.Record, end time.Duration) []fakeserver.Record {
	return slices.DeleteFunc(slices.Clone(journal), func(r fakeserver.Record) bool { return r.At > end })
}

// scenarioPart is the journal up to the first SIGTERM, and the offset up to which it is the
// scenario's own record: the claim's, or, when a SIGTERM came first, that instant less the
// scenario's tolerance. No scenario sends a SIGTERM: it comes from a launch tool stopping the
// server it started (llmwait after a fatal line, a launcher that gives up), and what follows
// is that tool's doing. What the scenario would have done after it, a death it stated within
// its tolerance of the SIGTERM included, comes from its prediction.
func scenarioPart(journal []fakeserver.Record, claimed, tolerance time.Duration) ([]fakeserver.Record, time.Duration) {
	for i, r := range journal {
		if r.Type == fakeserver.RecState && r.State == fakeserver.StateSigterm {
			return journal[:i], min(claimed, r.At-tolerance)
		}
	}
	return journal, claimed
}

// tolerance is the scenario's stated tolerance on its event times (3 s when it states none).
func (c Case) tolerance() time.Duration {
	if c.Scenario != nil && c.Scenario.Expect.Tolerance > 0 {
		return c.Scenario.Expect.Tolerance.D()
	}
	return 3 * time.Second
}

// catcher is a Target whose server can run, on demand, what its timeline scheduled up to an
// instant: the journal then holds every event due by the claim, however late the server's
// own timer is on a loaded machine.
type catcher interface {
	CatchUp(at time.Time)
}

// serverTimer is a Target whose Clock only approximates the server's (a container's clock
// starts at a wall instant the harness does not see); ServerTime maps an instant read on
// Clock onto the server's clock, using the journal.
type serverTimer interface {
	ServerTime(at time.Time, journal []fakeserver.Record) time.Time
}

// complete fills events the run ended before (the tool returned early, at offset end) from
// the scenario's stated truth, and reports whether it filled any; events at or before the
// end come from the journal alone.
func complete(j, predicted truth.Truth, end time.Duration) (truth.Truth, bool) {
	filled := false
	fill := func(got **time.Duration, want *time.Duration) {
		if *got == nil && want != nil && *want > end {
			*got, filled = want, true
		}
	}
	fill(&j.Bound, predicted.Bound)
	fill(&j.Ready, predicted.Ready)
	fill(&j.Dead, predicted.Dead)
	if filled && j.ExitCode == nil && predicted.ExitCode != nil && predicted.Dead != nil && *predicted.Dead > end {
		j.ExitCode = predicted.ExitCode
	}
	return j, filled
}

// toolStarter is a Target whose clock waits for the tool to be on it before time moves.
type toolStarter interface {
	ToolStarted()
}

// runTool runs a shell or Go tool against tgt until it claims, gives up, or hits limit.
func runTool(ctx context.Context, c Case, t Tool, mode Mode, clock replay.Clock, tgt Target, published bool, limit time.Duration, ft Faketime, rd *RunDir, bin string, out io.Writer) (Claim, error) {
	started := func() {}
	if ts, ok := tgt.(toolStarter); ok {
		started = ts.ToolStarted
	}
	defer started()
	if t.Wait == nil {
		env := withBin(toolEnv(scenarioEnv(c)...), bin)
		return shellRun{tool: t, facts: c, clock: clock, target: tgt, limit: limit, faketime: ft, env: env, output: out, started: started, rundir: rd, mode: mode}.run(ctx)
	}
	host, port, err := splitURL(tgt.BaseURL())
	if err != nil {
		return Claim{}, err
	}
	lctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errLimit := errors.New("harness limit")
	timer := clock.AfterFunc(limit, func() { cancel(errLimit) })
	defer timer.Stop()
	// On a virtual clock the tool's goroutine is a task: busy except while it waits.
	task := vtime.NewTask(clock)
	defer task.End()
	if _, ok := clock.(*vtime.Clock); ok {
		// A tool that works without ever waiting holds the clock where it is, and the limit
		// above cannot fall due: bound its work while the clock stands still.
		done := lctx.Done()
		stalls := stallCap(lctx, clock, "outside its waits", taskWork(task))
		go func() {
			select {
			case s := <-stalls:
				cancel(s)
			case <-done:
			}
		}()
	}
	started()
	lctx = vtime.WithTask(lctx, task)
	env := Env{Clock: clock, URL: tgt.BaseURL(), Host: host, Port: port, LogFile: tgt.LogFile(), Exited: tgt.Exited, Done: tgt.Done(), OnExit: tgt.OnExit, Published: published}
	if c.Scenario != nil {
		env.Launch = launchArgv(c.Scenario.Launch.Argv(), port)
	}
	if c.Compiled != nil {
		h := c.Compiled.Host
		env.Machine = &h
		for k, v := range c.Compiled.Env {
			env.ServerEnv = append(env.ServerEnv, k+"="+v)
		}
		sort.Strings(env.ServerEnv)
	}
	werr := t.Wait(lctx, env)
	at := clock.Now()
	var stall stalled
	switch {
	case ctx.Err() != nil:
		return Claim{}, ctx.Err()
	case errors.As(context.Cause(lctx), &stall):
		if !stall.tool {
			return Claim{}, fmt.Errorf("tool %s: %w", t.Name, stall)
		}
		return Claim{Outcome: NoClaim, At: at, Detail: stall.Error()}, nil
	case context.Cause(lctx) == errLimit:
		return Claim{Outcome: NoClaim, At: at}, nil
	case werr != nil:
		fmt.Fprintln(out, werr)
		return Claim{Outcome: ClaimFailed, At: at, Detail: werr.Error(), Preflight: errors.Is(werr, ErrPreflight)}, nil
	}
	return Claim{Outcome: ClaimReady, At: at, Detail: "ready"}, nil
}

// launchArgv is the command the scenario's server was launched with, moved to the run's port
// so a preflight bind test looks at the port the run really uses.
func launchArgv(flags []string, port int) []string {
	argv := []string{"python3", "-m", "sglang.launch_server"}
	for i := 0; i < len(flags); i++ {
		f := flags[i]
		switch {
		case f == "--port" && i+1 < len(flags):
			i++
			continue
		case strings.HasPrefix(f, "--port="):
			continue
		}
		argv = append(argv, f)
	}
	return append(argv, "--port", strconv.Itoa(port))
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if len(t.b) > t.max {
		return string(t.b[len(t.b)-t.max:])
	}
	return string(t.b)
}
