// Command llmwait launches or attaches to an LLM server (SGLang) and waits until it is really
// ready, failing fast and with the cause when it will not be. Exit codes: 0 ready, 2 process
// exited, 3 fatal log line, 4 preflight failed, 5 stalled, 6 identity mismatch, 7 HTTP
// configuration error, 124 timeout, 1 internal error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/spf13/cobra"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/ready"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitError carries an exit code through cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return "exit " + strconv.Itoa(e.code) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	default:
		fmt.Fprintln(stderr, "llmwait:", err)
		return int(ready.CodeInternal)
	}
}

// common are the flags every waiting mode shares.
type common struct {
	timeout, stall, interval, reqTimeout, genTimeout, confirm time.Duration
	phaseStall                                                []string
	successes                                                 int
	generate, apiKey                                          string
	json, quiet                                               bool
	speed                                                     float64
}

func (c *common) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&c.timeout, "timeout", 30*time.Minute, "overall hard deadline, whatever the phase")
	f.DurationVar(&c.stall, "stall", 5*time.Minute, "fail with exit 5 after this long without progress in a phase")
	f.StringSliceVar(&c.phaseStall, "phase-stall", nil, "per-phase stall budget, PHASE=DURATION (phases: starting, dist_init, loading, kv_pool, cuda_graph, hicache, http, warmup)")
	f.DurationVar(&c.interval, "interval", time.Second, "time between probe rounds")
	f.IntVar(&c.successes, "successes", 2, "consecutive healthy rounds required (1 once the log printed the ready line)")
	f.DurationVar(&c.reqTimeout, "request-timeout", 30*time.Second, "per-request timeout floor (>= 5s; adapts to 3x p95 latency)")
	f.StringVar(&c.generate, "generate", "auto", "generation probe after /health: auto, native (/generate), openai (/v1/completions) or off")
	f.DurationVar(&c.genTimeout, "generate-timeout", 120*time.Second, "timeout of the first generation probe (JIT warmup)")
	f.DurationVar(&c.confirm, "fatal-confirm", time.Second, "confirmation window after a fatal log line")
	f.StringVar(&c.apiKey, "api-key", "", "Bearer token for the server (default: the launch command's --api-key)")
	f.BoolVar(&c.json, "json", false, "print a JSON event stream instead of human progress")
	f.BoolVar(&c.quiet, "quiet", false, "do not echo the server's output")
	f.Float64Var(&c.speed, "speed", 1, "test-harness option: run llmwait's clock S times faster than wall time, to match a replayed scenario")
}

// Flag bounds: a duration past maxFlagDuration or a speed past maxSpeed overflows the
// clock arithmetic (a deadline that never comes).
const (
	maxFlagDuration = 30 * 24 * time.Hour
	maxSpeed        = 10000
)

// validate checks every flag before anything starts; the error names the flag and what to give.
func (c *common) validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
		min  time.Duration
	}{{"--timeout", c.timeout, 1}, {"--stall", c.stall, 1}, {"--interval", c.interval, 1},
		{"--request-timeout", c.reqTimeout, ready.MinRequestTimeout}, {"--generate-timeout", c.genTimeout, 1}, {"--fatal-confirm", c.confirm, 1}} {
		switch {
		case d.v < d.min && d.min == 1:
			errs = append(errs, fmt.Errorf("%s %s: give a duration > 0, e.g. %s 30s", d.name, d.v, d.name))
		case d.v < d.min:
			errs = append(errs, fmt.Errorf("%s %s: give at least %s", d.name, d.v, d.min))
		case d.v > maxFlagDuration:
			errs = append(errs, fmt.Errorf("%s %s: give at most %s", d.name, d.v, maxFlagDuration))
		}
	}
	if c.successes < 1 {
		errs = append(errs, fmt.Errorf("--successes %d: give a count >= 1", c.successes))
	}
	if err := replay.CheckFactor(c.speed); err != nil || c.speed > maxSpeed {
		errs = append(errs, fmt.Errorf("--speed %g: give a factor > 0 and <= %d (1 = real time)", c.speed, maxSpeed))
	}
	if _, err := ready.ParseGenerateProbe(c.generate); err != nil {
		errs = append(errs, fmt.Errorf("--generate: %w", err))
	}
	if _, err := c.phaseStalls(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c *common) phaseStalls() (map[ready.Phase]time.Duration, error) {
	ps := map[ready.Phase]time.Duration{}
	for _, kv := range c.phaseStall {
		name, dur, ok := strings.Cut(kv, "=")
		p, known := ready.ParsePhase(name)
		d, derr := time.ParseDuration(dur)
		if !ok || !known || derr != nil || d <= 0 || d > maxFlagDuration {
			return nil, fmt.Errorf("--phase-stall %q: want PHASE=DURATION with 0 < DURATION <= %s, e.g. cuda_graph=10m", kv, maxFlagDuration)
		}
		ps[p] = d
	}
	return ps, nil
}

func (c *common) spec(stderr io.Writer) (ready.Spec, *ready.Printer, error) {
	var s ready.Spec
	if err := c.validate(); err != nil {
		return s, nil, err
	}
	gen, err := ready.ParseGenerateProbe(c.generate)
	if err != nil {
		return s, nil, err
	}
	ps, err := c.phaseStalls()
	if err != nil {
		return s, nil, err
	}
	mode := ready.PrintPlain
	if c.json {
		mode = ready.PrintJSON
	} else if isTerminal(stderr) {
		mode = ready.PrintTTY
	}
	pr := ready.NewPrinter(stderr, mode)
	s = ready.Spec{
		Timeout: c.timeout, Stall: c.stall, PhaseStall: ps, Interval: c.interval, Successes: c.successes,
		RequestTimeout: c.reqTimeout, Generate: gen, GenerateTimeout: c.genTimeout, FatalConfirm: c.confirm,
		APIKey: c.apiKey, Observe: pr.Observe,
	}
	if c.speed != 1 {
		s.Clock = replay.Scaled(time.Now(), c.speed)
	}
	return s, pr, nil
}

// pollWall is the wall-time poll of a followed log: 10 ms at real speed, shorter when the
// clock is compressed so a line's detection lag stays under 0.1 s of scenario time.
func (c *common) pollWall() time.Duration {
	return max(time.Millisecond, min(10*time.Millisecond, time.Duration(float64(100*time.Millisecond)/c.speed)))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "llmwait",
		Short:         "Launch or attach to an LLM server and wait until it is really ready",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(launchCmd(stdout, stderr), attachCmd(stdout, stderr), preflightCmd(stdout, stderr))
	return root
}

// finish prints the failure detail and turns the outcome into an exit code.
func finish(rep ready.Report, err error, stderr io.Writer, json bool) error {
	if err == nil {
		return nil
	}
	if !json && len(rep.Lines) > 0 {
		fmt.Fprintln(stderr, "llmwait: last server lines:")
		for _, l := range rep.Lines {
			fmt.Fprintln(stderr, "  | "+l)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stderr, "llmwait: note: "+n)
	}
	return exitError{ready.ExitCode(err)}
}

// loadHost reads --host-profile: a profile name (gpu.HostNames) or a YAML file of gpu.Host.
func loadHost(arg string) (*gpu.Host, error) {
	if arg == "" {
		return nil, nil
	}
	if h, err := gpu.LookupHost(arg); err == nil {
		return &h, nil
	}
	b, err := os.ReadFile(arg)
	if err != nil {
		return nil, fmt.Errorf("--host-profile %q is neither a profile (%s) nor a readable file: %v", arg, strings.Join(gpu.HostNames(), ", "), err)
	}
	var h gpu.Host
	if err := yaml.UnmarshalWithOptions(b, &h, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("--host-profile %s: %w", arg, err)
	}
	if err := h.Validate(); err != nil {
		return nil, fmt.Errorf("--host-profile %s: %w", arg, err)
	}
	return &h, nil
}

func printFindings(w io.Writer, fs []ready.Finding, json bool) {
	for _, f := range fs {
		if json {
			b, _ := jsonMarshal(map[string]any{"event": "preflight", "severity": f.Severity, "check": f.Check, "msg": f.Message})
			fmt.Fprintln(w, string(b))
			continue
		}
		fmt.Fprintln(w, "llmwait: preflight "+f.String())
	}
}

// preflightFlags are the flags preflight and launch share: the host to check against and the
// SGLang build's HiCache host check.
type preflightFlags struct{ hostProfile, hostCheck string }

func (p *preflightFlags) register(cmd *cobra.Command, hostProfileUsage string) {
	f := cmd.Flags()
	f.StringVar(&p.hostProfile, "host-profile", "", hostProfileUsage)
	f.StringVar(&p.hostCheck, "host-check", "per-rank", "the SGLang build's HiCache host check: per-rank (each rank against all of MemAvailable; an oversized --hicache-size OOMs the host) or divided-per-host (builds with sglang PR #35540; it fails fast)")
}

// run runs the preflight on in, prints its findings, and returns exit code 4 as an error
// when one of them is an error.
func (p *preflightFlags) run(ctx context.Context, stderr io.Writer, in ready.PreflightInput, json bool) ([]ready.Finding, error) {
	host, err := loadHost(p.hostProfile)
	if err != nil {
		return nil, err
	}
	if in.HostCheck, err = sglang.ParseHostCheckRule(p.hostCheck); err != nil {
		return nil, fmt.Errorf("--host-check: %w", err)
	}
	in.Host = host
	fs := ready.Preflight(ctx, in)
	printFindings(stderr, fs, json)
	if ready.PreflightFailed(fs) {
		fmt.Fprintln(stderr, "llmwait: FAILED [4 preflight failed]: not launching")
		return fs, exitError{int(ready.CodePreflight)}
	}
	return fs, nil
}

func preflightCmd(stdout, stderr io.Writer) *cobra.Command {
	var pf preflightFlags
	var json bool
	cmd := &cobra.Command{
		Use:   "preflight [--host-profile NAME|FILE] [--host-check RULE] -- SERVER COMMAND...",
		Short: "Check a launch against the host without starting it (exit 4 on an error finding)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			fs, err := pf.run(cmd.Context(), stderr, ready.PreflightInput{Argv: args}, json)
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "llmwait: preflight passed (%d warning(s))\n", len(fs))
			return nil
		},
	}
	pf.register(cmd, "check against a modelled host (profile name or YAML file) instead of this machine")
	cmd.Flags().BoolVar(&json, "json", false, "print findings as JSON lines")
	return cmd
}

func launchCmd(stdout, stderr io.Writer) *cobra.Command {
	var c common
	var url, logFile string
	var pf preflightFlags
	var skipPreflight, keepProxy bool
	cmd := &cobra.Command{
		Use:   "launch [flags] -- SERVER COMMAND...",
		Short: "Preflight, start the server in its own session, and wait for it (on failure every process it started is killed)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, argv []string) error {
			spec, pr, err := c.spec(stderr)
			if err != nil {
				return err
			}
			args, _, argErr := ready.ServerCommandArgs(argv)
			if url == "" {
				if argErr != nil {
					return fmt.Errorf("pass --url: %w", argErr)
				}
				host := args.Host
				if host == "" || host == "0.0.0.0" || host == "localhost" {
					host = "127.0.0.1"
				} else if host == "::" {
					host = "::1"
				}
				url = "http://" + joinHostPort(host, args.Port)
			}
			if spec.APIKey == "" && argErr == nil {
				spec.APIKey = args.APIKey
			}
			env := os.Environ()
			if !skipPreflight {
				if _, err := pf.run(cmd.Context(), stderr, ready.PreflightInput{Argv: argv, Env: env}, c.json); err != nil {
					return err
				}
			}
			if !keepProxy {
				env = ready.FixNoProxy(env, args.Host)
			}
			env = append(env, "PYTHONUNBUFFERED=1")
			if logFile == "" {
				logFile = filepath.Join(os.TempDir(), fmt.Sprintf("llmwait-%d.log", os.Getpid()))
			}
			l, err := ready.Launch(ready.LaunchOptions{Argv: argv, Env: env, LogFile: logFile})
			if err != nil {
				return err
			}
			fmt.Fprintf(stderr, "llmwait: launched PID %d (its own session and process group), output in %s\n", l.PID(), logFile)
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			var log io.Reader = ready.FollowFile(ctx, logFile, c.pollWall())
			if !c.quiet && !c.json {
				log = io.TeeReader(log, stdout)
			}
			spec.Endpoint, spec.Log, spec.Process = url, log, l
			spec.Identity = ready.Identity{PID: l.PID()}
			rep, err := ready.Wait(ctx, spec)
			_ = pr
			return finish(rep, err, stderr, c.json)
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "server base URL (default http://127.0.0.1:PORT from the command's --port)")
	f.StringVar(&logFile, "log-file", "", "file receiving the server's stdout and stderr (default $TMPDIR/llmwait-PID.log)")
	pf.register(cmd, "preflight against a modelled host (profile name or YAML file) instead of this machine")
	f.BoolVar(&skipPreflight, "skip-preflight", false, "start without the preflight checks")
	f.BoolVar(&keepProxy, "keep-proxy-env", false, "do not add loopback names to the server's no_proxy")
	return cmd
}

func attachCmd(stdout, stderr io.Writer) *cobra.Command {
	var c common
	var url, logFile, container string
	var pid int
	var identity bool
	cmd := &cobra.Command{
		Use:   "attach --url URL [--pid PID] [--log FILE | --container ID]",
		Short: "Wait for a server that is already starting",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if url == "" {
				return errors.New("attach needs --url, e.g. --url http://127.0.0.1:30000")
			}
			if logFile != "" && container != "" {
				return errors.New("give --log or --container, not both")
			}
			spec, _, err := c.spec(stderr)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			spec.Endpoint = url
			if pid != 0 {
				p, err := ready.AttachPID(ctx, clockOr(spec), "/proc", pid, 100*time.Millisecond)
				if err != nil {
					return err
				}
				spec.Process = p
				if identity {
					spec.Identity = ready.Identity{PID: pid}
				}
			}
			switch {
			case logFile != "":
				spec.Log = ready.FollowFile(ctx, logFile, c.pollWall())
			case container != "":
				ct, logs, err := ready.AttachContainer(ctx, container)
				if err != nil {
					return err
				}
				defer logs.Close()
				spec.Log, spec.Process = logs, ct
			}
			if spec.Log != nil && !c.quiet && !c.json {
				spec.Log = io.TeeReader(spec.Log, stdout)
			}
			rep, err := ready.Wait(ctx, spec)
			return finish(rep, err, stderr, c.json)
		},
	}
	c.register(cmd)
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "server base URL, e.g. http://127.0.0.1:30000")
	f.IntVar(&pid, "pid", 0, "server PID: fail when it exits, and require the port's listener to be it or its child")
	f.StringVar(&logFile, "log", "", "server log file to follow")
	f.StringVar(&container, "container", "", "container ID whose logs and exit to watch (docker CLI)")
	f.BoolVar(&identity, "identity", true, "with --pid: require the port's listener to be that process or its child (disable for a stand-in PID)")
	return cmd
}
