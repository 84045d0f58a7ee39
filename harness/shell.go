package harness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/internal/proc"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
)

// Faketime is how shell tools are put on the run's clock: `faketime -f '<offset> x<S>'` with
// the offset that makes their wall clock read scenario time (the log timestamps' epoch).
// libfaketime shares its start time with child processes (FAKETIME_SHARED), so sleep, curl
// and date in one loop agree. Measured cost: a spawned process takes ~4 ms of real time, so
// ~0.25 s of fake time at S=60; DefaultGrace covers it.
type Faketime struct {
	Path string // the faketime binary; "" disables compression (only S=1 runs are allowed)
}

// FindFaketime looks faketime up on PATH.
func FindFaketime() (Faketime, error) {
	p, err := exec.LookPath("faketime")
	if err != nil {
		return Faketime{}, fmt.Errorf("faketime not found on PATH: install the Debian package `faketime` (apt-get install faketime) or run with --speed 1")
	}
	sweepFaketimeObjects()
	return Faketime{Path: p}, nil
}

// sweepFaketimeObjects removes the semaphores and shared memory of faketime wrappers that no
// longer run (a harness killed before it could release them), so their pids can be reused.
func sweepFaketimeObjects() {
	ents, err := os.ReadDir(shmDir)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		pid, ok := strings.CutPrefix(name, "faketime_shm_")
		if !ok {
			pid, ok = strings.CutPrefix(name, "sem.faketime_sem_")
		}
		n, err := strconv.Atoi(pid)
		if !ok || err != nil {
			continue
		}
		if syscall.Kill(n, 0) == syscall.ESRCH {
			_ = os.Remove(filepath.Join(shmDir, name))
		}
	}
}

// wrap returns argv that runs bash -c script with its time set to clock.
func (f Faketime) wrap(clock replay.Clock, bash, script string) ([]string, error) {
	speed := replay.Factor(clock)
	if f.Path == "" {
		if speed != 1 {
			return nil, fmt.Errorf("shell tools at speed %g need faketime: install the Debian package `faketime` or run with --speed 1", speed)
		}
		return []string{bash, "-c", script}, nil
	}
	if speed <= 0 {
		return nil, fmt.Errorf("shell tools need a clock that follows wall time (got a manual clock)")
	}
	offset := clock.Now().Sub(time.Now()).Seconds()
	spec := fmt.Sprintf("%+.3f x%g", offset, speed)
	return []string{f.Path, "-f", spec, bash, "-c", script}, nil
}

// sleepPrelude makes `sleep N` a bash builtin when bash's loadable sleep is installed
// (Debian: bash-builtins). Under faketime every process a tool starts costs S times its
// start-up time in scenario time; an external sleep is one fork and exec per iteration of a
// probe loop, which stretched the founding loops' nominal 600 s by minutes at S=60. Anything
// but one plain number still runs the disk sleep. The prelude ends on the script's first line,
// so bash's line numbers in the tool's own errors stay right.
func sleepPrelude() string {
	loadableOnce.Do(func() {
		for _, dir := range []string{"/usr/lib/bash", "/usr/lib64/bash", "/usr/local/lib/bash"} {
			if p := filepath.Join(dir, "sleep"); fileExists(p) {
				loadable = `if enable -f ` + p + ` sleep 2>/dev/null; then sleep() { if [[ $# == 1 && $1 =~ ^[0-9]+(\.[0-9]+)?$ ]]; then builtin sleep "$1"; else "$(type -P sleep)" "$@"; fi; }; fi; `
				return
			}
		}
	})
	return loadable
}

var (
	loadableOnce sync.Once
	loadable     string
)

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// pipeGrace is how long (wall time) the tool's output is still read after its process group
// is gone: enough to drain what it wrote.
const pipeGrace = 2 * time.Second

// shellNice is the niceness shell tools run at on a compressed clock: the lowest priority,
// since dozens of them share the cores with the harness's few threads.
const shellNice = 19

// release removes the semaphore and shared memory the faketime wrapper with this pid created
// (/dev/shm/sem.faketime_sem_PID, /dev/shm/faketime_shm_PID). The wrapper unlinks them when
// it exits normally, but a tool killed with its process group leaves them behind, and a later
// wrapper that gets the same pid then fails with "sem_open: File exists".
func (f Faketime) release(pid int) {
	if f.Path == "" {
		return
	}
	removeFaketimeObjects(pid)
}

// removeFaketimeObjects removes the faketime wrapper pid's semaphore and shared memory and
// returns how many of the two there were.
func removeFaketimeObjects(pid int) int {
	p := strconv.Itoa(pid)
	n := 0
	for _, name := range []string{"sem.faketime_sem_" + p, "faketime_shm_" + p} {
		if os.Remove(filepath.Join(shmDir, name)) == nil {
			n++
		}
	}
	return n
}

// shmDir is where POSIX semaphores and shared memory live on Linux.
const shmDir = "/dev/shm"

// shellRun is one shell tool invocation.
type shellRun struct {
	tool     Tool
	facts    Case // the scenario: its name, API key and launch line for the template
	clock    replay.Clock
	target   Target
	limit    time.Duration // scenario time
	faketime Faketime
	env      []string
	output   io.Writer // the tool's combined output, for the report; may be nil
	started  func()    // called once the tool's processes are on the run's clock; may be nil
	rundir   *RunDir   // records the tool's process group and /dev/shm objects; may be nil
	mode     Mode      // ModePtrace: traced onto the virtual clock instead of LD_PRELOAD
	release  []string  // executables that keep their own time (a launched fakesglang on the clock)
}

// proxyVars are dropped from a tool's environment: curl and Python route loopback through a
// proxy, which would make verdicts depend on the operator's shell.
var proxyVars = []string{"http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"}

// toolEnv is the environment shell tools run with: the harness's own minus proxy variables,
// with the real Python interpreter first on PATH (pyenv shims cost ~1 s of fake time each),
// then extra (the scenario's own variables, proxies included).
func toolEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		drop := k == "PATH"
		for _, p := range proxyVars {
			drop = drop || k == p
		}
		if !drop {
			env = append(env, kv)
		}
	}
	path := os.Getenv("PATH")
	if py := realPython(); py != "" {
		path = filepath.Dir(py) + string(os.PathListSeparator) + path
	}
	return append(append(env, "PATH="+path), extra...)
}

var (
	pythonOnce sync.Once
	pythonPath string
)

// realPython resolves python3 through any pyenv-style shim once.
func realPython() string {
	pythonOnce.Do(func() {
		p, err := exec.LookPath("python3")
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, p, "-c", "import sys; print(sys.executable)").Output()
		if err == nil && strings.TrimSpace(string(out)) != "" {
			pythonPath = strings.TrimSpace(string(out))
		}
	})
	return pythonPath
}

// run executes the tool and returns its claim. It kills the tool's whole process group when
// the tool returns, at the harness limit, and when ctx ends.
func (r shellRun) run(ctx context.Context) (Claim, error) {
	host, port, err := splitURL(r.target.BaseURL())
	if err != nil {
		return Claim{}, err
	}
	// No server runs as a process of this host (in-process, or inside a container): a tool
	// that watches {{.PID}} gets a stand-in process that lives exactly as long as the server.
	var pid int
	var launch, hostProfile string
	if ct, ok := r.target.(*childTarget); ok {
		// The tool starts the server itself: {{.Launch}} is the real process.
		launch = ct.Command()
		if hostProfile, err = ct.HostProfile(); err != nil {
			return Claim{}, fmt.Errorf("tool %s: {{.HostProfile}}: %w", r.tool.Name, err)
		}
		r.release = []string{ct.fakesglang}
	} else if r.tool.usesPID() {
		var codeFile string
		onExit := func(int) {}
		if r.tool.usesLaunch() {
			dir, err := os.MkdirTemp(r.rundir.Path(), "launch-")
			if err != nil {
				return Claim{}, fmt.Errorf("tool %s: {{.Launch}}: %w", r.tool.Name, err)
			}
			defer os.RemoveAll(dir)
			codeFile = filepath.Join(dir, "exit-code")
			onExit = func(code int) { _ = writeExitCode(codeFile, code) }
		}
		stop, spid, err := standIn(r.target, r.rundir, onExit)
		if err != nil {
			return Claim{}, err
		}
		defer stop()
		pid = spid
		if codeFile != "" {
			prog, err := launchStandIn(filepath.Dir(codeFile), pid, r.target.LogFile(), codeFile)
			if err != nil {
				return Claim{}, err
			}
			launch = launchLine(prog, r.facts, port)
		}
	}
	script, err := r.tool.render(TemplateData{
		URL: r.target.BaseURL(), Host: host, Port: port, LogFile: r.target.LogFile(), PID: pid,
		Timeout: int(r.limit / time.Second), Scenario: r.facts.Name, APIKey: apiKey(r.facts), Launch: launch,
		HostProfile: hostProfile,
	})
	if err != nil {
		return Claim{}, err
	}
	return r.runScript(ctx, script)
}

// runScript runs the rendered script under bash (and faketime) in its own process group.
func (r shellRun) runScript(ctx context.Context, script string) (Claim, error) {
	if r.mode == ModePtrace {
		return r.runTraced(ctx, script)
	}
	argv, env, vs, err := r.command(ctx, script)
	if err != nil {
		return Claim{}, err
	}
	if vs != nil {
		defer r.rundir.trackShm(vs.page.Path())()
		defer vs.close()
	}
	// Under faketime the tool's bash reports its own exit: the faketime wrapper waits for
	// every descendant, so a launch tool whose server runs on (`{{.Launch}} &`, as every
	// launcher leaves it) would otherwise never return.
	var report *os.File
	var bashExit <-chan int
	if vs == nil && r.faketime.Path != "" {
		rr, w, err := os.Pipe()
		if err != nil {
			return Claim{}, err
		}
		defer rr.Close()
		report = w
		argv[len(argv)-1] = exitReport + argv[len(argv)-1]
		bashExit = readExitReport(rr)
	}
	cmd, pr, err := r.start(argv, env, report)
	if report != nil {
		report.Close()
	}
	if err != nil {
		return Claim{}, err
	}
	g := toolGroup{pgid: cmd.Process.Pid, recorded: func() {}, requests: r.requests(ctx), bashExit: bashExit}
	untrack := r.rundir.trackGroup(g.pgid)
	if vs != nil {
		detach, done, untraced := vs.attach(g.pgid, pr, r.release)
		defer detach()
		g.recorded, g.untraced = done, untraced
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		g.stalls = stallCap(cctx, r.clock, "of CPU", groupCPU(g.pgid))
	}
	if r.started != nil {
		r.started()
	}
	out := r.scanOutput(pr)
	g.exited = make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(g.exited)
	}()
	g.exitCode = func() int { return cmd.ProcessState.ExitCode() }
	limit := newLimitTimer(r.clock, r.limit)
	defer limit.Stop()
	claim, hung, ctxErr := r.await(ctx, g, limit)
	// Background children (a `sleep`, a curl) must not outlive the tool or hold the pipe.
	g.kill()
	out.drain()
	r.faketime.release(g.pgid)
	untrack()
	if ctxErr != nil {
		return Claim{}, ctxErr
	}
	return r.conclude(claim, hung, out), nil
}

// conclude completes a claim from the tool's output (its last line is the detail) and, unless
// the run was stopped (hung, the harness limit), judges it by the tool's claim rule.
func (r shellRun) conclude(claim Claim, stopped bool, out *toolOutput) Claim {
	lastLine, lineAt := out.result()
	if claim.Detail == "" {
		claim.Detail = lastLine
	}
	if stopped {
		return claim
	}
	claim = r.tool.Claim.judge(claim, lineAt)
	claim.Preflight = claim.Outcome == ClaimFailed && r.tool.PreflightExit != 0 && claim.ExitCode == r.tool.PreflightExit
	return claim
}

// command is the argv and environment the script runs with, and the virtual shell that puts
// it on a virtual clock (nil on any other clock; the caller closes it).
func (r shellRun) command(ctx context.Context, script string) (argv, env []string, vs *virtualShell, err error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return nil, nil, nil, fmt.Errorf("bash not found on PATH: shell tools need it")
	}
	vs, err = newVirtualShell(ctx, r.clock)
	if err != nil {
		return nil, nil, nil, err
	}
	if vs != nil {
		// On virtual time every process of the tool reads the clock from the page: no
		// faketime. A sleep's wait costs nothing there, but its fork and exec cost a probe
		// loop about a tenth of its CPU, so it is the builtin here too.
		argv = []string{bash, "-c", sleepPrelude() + script}
		env = append(append([]string(nil), r.env...), vs.env()...)
		return argv, env, vs, nil
	}
	if argv, err = r.faketime.wrap(r.clock, bash, sleepPrelude()+script); err != nil {
		return nil, nil, nil, err
	}
	// On a compressed wall clock shell tools are niced: their process start-ups are what
	// saturates the cores, and the fake servers and Go tools in this process must keep their
	// timing. They start under nice(1), niced from the first instruction: a renice after the
	// start raced the tool's first fork, whose child kept the harness's priority. At S=1 a
	// tool runs at its own priority, as it would for real: niced beside two busy-loop CPU
	// hogs, a python3 waiter claimed ready 34 s late.
	if replay.Factor(r.clock) > 1 {
		nice, err := exec.LookPath("nice")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("nice not found on PATH: shell tools above --speed 1 run under coreutils' nice(1)")
		}
		argv = append([]string{nice, "-n", strconv.Itoa(shellNice)}, argv...)
	}
	return argv, r.env, nil, nil
}

// exitReport starts a tool's script: its bash writes its exit status to fd 9 (moved from
// fd 3, the report pipe) as it exits; subshells and the processes it starts do not.
const exitReport = `exec 9>&3 3>&-; trap 'printf "%d\n" "$?" >&9' EXIT; `

// readExitReport delivers the status the tool's bash reported, if it reports one.
func readExitReport(rr *os.File) <-chan int {
	ch := make(chan int, 1)
	go func() {
		line, err := bufio.NewReader(rr).ReadString('\n')
		if code, cerr := strconv.Atoi(strings.TrimSpace(line)); err == nil && cerr == nil {
			ch <- code
		}
	}()
	return ch
}

// start starts argv as the leader of a new process group whose combined output is pr; extra,
// when not nil, is its fd 3.
func (r shellRun) start(argv, env []string, extra *os.File) (cmd *exec.Cmd, pr *os.File, err error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	cmd = exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if extra != nil {
		cmd.ExtraFiles = []*os.File{extra}
	}
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return nil, nil, fmt.Errorf("tool %s: start: %w", r.tool.Name, err)
	}
	pw.Close()
	return cmd, pr, nil
}

// toolGroup is a started tool's process group and what the harness waits on.
type toolGroup struct {
	pgid     int
	exited   chan struct{}   // closed once the leader is reaped
	exitCode func() int      // the leader's exit status, once exited is closed
	recorded func()          // the harness has recorded when the tool ended
	stalls   <-chan stalled  // on virtual time: the clock stood still (see stallCap); nil otherwise
	requests func() int      // requests the server has had from clients so far; -1 unknown
	untraced <-chan struct{} // on the library: a Go or static binary runs in the group; nil otherwise
	bashExit <-chan int      // under faketime: the status the tool's bash reported; nil otherwise
}

func (g toolGroup) kill() { _ = syscall.Kill(-g.pgid, syscall.SIGKILL) }

// await waits until the tool exits, hangs, or ctx ends, and returns what it claimed so far
// (the exit status and when), whether it was stopped by the harness (the claim is then
// final), and ctx's error if ctx ended.
func (r shellRun) await(ctx context.Context, g toolGroup, limit *limitTimer) (claim Claim, stopped bool, ctxErr error) {
	// At the limit, a tool that still makes progress gets more time, up to MaxExtension
	// times the limit: its process group starts or ends processes (a count-bound loop slowed
	// down by faketime's per-process cost on a busy machine), or its requests still reach the
	// server (a single-process poller such as a Go waiter or a Python loop). One blocked in a
	// single call (curl without --max-time on a wedged server) is hung. One still asking at
	// the end of the extension has not concluded, which is not hanging: it is stopped and
	// scored as giving up then.
	var (
		seen  *groupScan
		still int // consecutive scans that saw the group do nothing
		asked = -1
	)
	start := r.clock.Now()
	deadline := start.Add(time.Duration(MaxExtension * float64(r.limit)))
	// stopHung kills a tool that will not return and records when.
	stopHung := func() Claim {
		g.kill()
		<-g.exited
		g.recorded()
		return Claim{Outcome: NoClaim, At: r.clock.Now(), ExitCode: -1}
	}
	for {
		select {
		case <-g.exited:
			claim.At = r.clock.Now()
			g.recorded()
			claim.ExitCode = g.exitCode()
			return claim, false, nil
		case code := <-g.bashExit: // the tool returned; what it left running is killed below
			claim.At = r.clock.Now()
			g.recorded()
			claim.ExitCode = code
			return claim, false, nil
		case s := <-g.stalls:
			if !s.tool {
				g.kill()
				<-g.exited
				g.recorded()
				return claim, false, fmt.Errorf("tool %s: %w", r.tool.Name, s)
			}
			// Busy without ever waiting: the limit cannot fall due.
			c := stopHung()
			c.Detail = s.Error()
			return c, true, nil
		case <-g.untraced:
			g.kill()
			<-g.exited
			g.recorded()
			return claim, false, errUntraced
		case release := <-limit.C:
			// The clock stands at the instant the limit fell due until release: the look at
			// the group and the next limit are taken then, however late this runs.
			now := scanGroup(g.pgid)
			n := g.requests()
			probing := n >= 0 && asked >= 0 && n > asked
			if seen != nil && !now.progressed(*seen) && !probing {
				still++
			} else {
				still = 0
			}
			seen, asked = &now, n
			// A starved loop can look idle for one scan on a loaded machine; three scans in
			// a row without progress are a tool that is blocked.
			if still < 3 && limit.Due().Before(deadline) {
				limit.Reset(min(max(r.tool.Interval*4, 30*time.Second), r.limit/4))
				release()
				continue
			}
			c := stopHung()
			c.At = limit.Due()
			release()
			if probing {
				c.Outcome = ClaimFailed
				c.Detail = fmt.Sprintf("still probing the server at %s, %gx the harness limit: stopped", FormatDuration(c.At.Sub(start)), MaxExtension)
			}
			return c, true, nil
		case <-ctx.Done():
			g.kill()
			<-g.exited
			g.recorded()
			return claim, false, ctx.Err()
		}
	}
}

// limitTimer is the harness limit of a tool's run. On virtual time its fire holds the clock
// until the harness has looked at the tool and set the next limit (the release sent on C), so
// that look sees the tool as it was at the instant the limit fell due: a goroutine that ran
// only after the clock had moved on would see a later state and set every later limit late
// (a 42-minute run stopped 6 s apart on an idle and a loaded machine).
type limitTimer struct {
	C     chan func()
	clock replay.Clock
	t     clockwork.Timer
	due   time.Time
}

func newLimitTimer(clock replay.Clock, d time.Duration) *limitTimer {
	l := &limitTimer{C: make(chan func(), 1), clock: clock, due: clock.Now().Add(d)}
	l.t = clock.AfterFunc(d, l.fire)
	return l
}

func (l *limitTimer) fire() {
	release := func() {}
	if vc, ok := l.clock.(*vtime.Clock); ok {
		release = vc.Hold()
	}
	l.C <- release
}

// Due is the instant the limit falls (or fell) due.
func (l *limitTimer) Due() time.Time { return l.due }

// Reset sets the next limit d after the last one fell due (not after now).
func (l *limitTimer) Reset(d time.Duration) {
	l.due = l.due.Add(d)
	l.t.Reset(max(l.clock.Until(l.due), 0))
}

// Stop stops the timer and ends a hold its fire took and nobody received.
func (l *limitTimer) Stop() {
	l.t.Stop()
	select {
	case release := <-l.C:
		release()
	default:
	}
}

// toolOutput follows a tool's combined output; lines are stamped on the run's clock as they
// arrive.
type toolOutput struct {
	pr      *os.File
	scanned chan struct{}

	mu       sync.Mutex
	readyAt  time.Time
	lastLine string
}

// scanOutput reads pr until it ends, copying to r.output and noting the last non-blank line
// and when the first ReadyLine match came.
func (r shellRun) scanOutput(pr *os.File) *toolOutput {
	type line struct {
		text string
		at   time.Time
	}
	o := &toolOutput{pr: pr, scanned: make(chan struct{})}
	var (
		src   io.Reader = pr
		stamp           = r.clock.Now
	)
	if vc, ok := r.clock.(*vtime.Clock); ok {
		// A line is stamped with the instant it left the pipe, however late this goroutine
		// runs after that: the bytes the scanner holds are the last read's.
		if sr, err := vtime.NewStampedReader(pr, vc); err == nil {
			src, stamp = sr, sr.At
		}
	}
	go func() {
		defer close(o.scanned)
		sc := bufio.NewScanner(src)
		sc.Buffer(make([]byte, 0, 4096), 1<<20)
		for sc.Scan() {
			l := line{text: sc.Text(), at: stamp()}
			if r.output != nil {
				fmt.Fprintln(r.output, l.text)
			}
			o.mu.Lock()
			if strings.TrimSpace(l.text) != "" {
				o.lastLine = l.text
			}
			if r.tool.ReadyLine != nil && o.readyAt.IsZero() && r.tool.ReadyLine.MatchString(l.text) {
				o.readyAt = l.at
			}
			o.mu.Unlock()
		}
		pr.Close()
	}()
	return o
}

// drain waits for the reader to finish once the tool's group is killed.
func (o *toolOutput) drain() {
	// A process that left the group (setsid) can still hold the pipe's write end; stop
	// reading after a grace period instead of waiting for it.
	select {
	case <-o.scanned:
	case <-time.After(pipeGrace):
		o.pr.Close()
		<-o.scanned
	}
}

// result is the last non-blank line and when ReadyLine first matched (zero if never).
func (o *toolOutput) result() (lastLine string, readyAt time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastLine, o.readyAt
}

// judge turns a tool that returned by itself (claim holds its exit code) into its claim
// under rule; lineAt is when its ready line came (zero if never).
func (rule ClaimRule) judge(claim Claim, lineAt time.Time) Claim {
	ok := claim.ExitCode == 0
	switch rule {
	case ByExit:
		claim.Outcome = outcomeOf(ok)
	case ByLine:
		claim.Outcome = outcomeOf(!lineAt.IsZero())
		if !lineAt.IsZero() {
			claim.At = lineAt
		}
	case ByBoth:
		claim.Outcome = outcomeOf(ok && !lineAt.IsZero())
	}
	return claim
}

func outcomeOf(ready bool) Outcome {
	if ready {
		return ClaimReady
	}
	return ClaimFailed
}

// errUntraced ends a run on the LD_PRELOAD library in which a Go or static binary started:
// the pair is run again traced (ModePtrace).
var errUntraced = errors.New("a Go or static binary runs in the tool's process group, out of the library's reach")

// MaxExtension bounds how far past its limit a shell tool that keeps starting processes may
// run. The limit already allows 1.8 times the tool's budget; a loop still going at twice
// that is slowed by its server (a 25 s /health answered per probe), not by faketime, and is
// scored hung.
const MaxExtension = 2.0

// groupScan is one look at a process group: each live process with what its reaped children
// used (CPU ticks and minor faults), and the CPU ticks of the whole group.
type groupScan struct {
	reaped map[int]uint64
	ticks  uint64
}

// cpu is the CPU time the group's processes have used, their reaped children's included (a
// loop's short-lived curls).
func (g groupScan) cpu() time.Duration {
	return time.Duration(g.ticks) * time.Second / clockTicks
}

// scanGroup reads process group pgid from /proc.
func scanGroup(pgid int) groupScan {
	g := groupScan{reaped: map[int]uint64{}}
	pids, err := proc.PIDs("")
	if err != nil {
		return g
	}
	for _, pid := range pids {
		st, err := proc.Read("", pid)
		if err != nil || st.PGRP != pgid {
			continue
		}
		// Reaped children's CPU ticks and minor faults: a curl can use under one tick of CPU
		// (on virtual time a loop's scans are seconds of its own apart, not of wall time),
		// but it never exits without having faulted pages in.
		g.reaped[pid] = st.CMinFlt + st.CUTime + st.CSTime
		g.ticks += st.UTime + st.STime + st.CUTime + st.CSTime
	}
	return g
}

// progressed reports whether the group started or ended a process between two scans: the
// set of live processes changed, or one of them reaped a child that ran (a loop whose sleep
// is a bash builtin is seen only this way). A tool blocked in one call (curl with no
// --max-time on a server that never answers) shows neither, however often that call wakes.
func (g groupScan) progressed(prev groupScan) bool {
	if len(g.reaped) != len(prev.reaped) {
		return true
	}
	for pid, t := range g.reaped {
		if p, ok := prev.reaped[pid]; !ok || p != t {
			return true
		}
	}
	return false
}

// exitSource is what standIn needs of a Target.
type exitSource interface {
	Clock() replay.Clock
	Done() <-chan struct{}
	Exited() (code int, ok bool)
	OnExit(f func(code int))
}

// standIn starts a process that lives exactly as long as the target's server, so a tool that
// watches {{.PID}} sees the in-process server die; onExit runs with the exit code when the
// server has exited, before the stand-in ends. It is killed and reaped by stop. The exit is
// an instant: on virtual time the clock stays at it until the stand-in is reaped, so a tool
// that checks {{.PID}} right after finds it gone.
func standIn(t exitSource, rd *RunDir, onExit func(code int)) (stop func(), pid int, err error) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return nil, 0, fmt.Errorf("sleep not found on PATH: needed for the {{.PID}} stand-in")
	}
	cmd := exec.Command(sleep, "infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, 0, fmt.Errorf("start the {{.PID}} stand-in: %w", err)
	}
	untrack := rd.trackGroup(cmd.Process.Pid)
	done := make(chan struct{})
	reaped := make(chan struct{})
	exited := make(chan int, 1)
	t.OnExit(func(code int) { // in the exit's clock step
		if vc, ok := t.Clock().(*vtime.Clock); ok {
			release := vc.Hold()
			go func() {
				<-reaped
				release()
			}()
		}
		exited <- code
	})
	go func() {
		select {
		case code := <-exited:
			onExit(code)
		case <-t.Done():
			code, _ := t.Exited()
			onExit(code)
		case <-done:
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait() // reap at once: a zombie still answers kill(pid, 0)
		untrack()
		close(reaped)
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); <-reaped }) }, cmd.Process.Pid, nil
}
