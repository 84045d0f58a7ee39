// Command fakesglang stands in for `python -m sglang.launch_server`: it takes SGLang's launch
// flags plus a scenario and replays that scenario's startup (log lines, port binding, HTTP
// behaviour, exit code) on a compressible clock.
//
//	fakesglang --model-path M --port 30000 [--scenario FILE|NAME] [--speed S] [--seed N]
//	           [--journal FILE] [--start-time RFC3339] [--log-file FILE]
//	           [--sglang-version V|--profile NAME]
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// own are fakesglang's flags; everything else is SGLang's.
type own struct {
	scenario, journal, logFile string
	speed                      float64
	seed                       int64
	startTime                  time.Time
	profile, profileFlag       string // the release to play without --scenario, and the flag that named it
	bindAfter                  time.Duration
	vclock                     string // a leader's clock socket: run on its virtual time
	holderOnVclock             bool   // the port holder's listening socket comes over vclock
}

// usageError is an argparse-style failure: exit 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return "error: " + e.msg }

func splitOwn(argv []string) (own, []string, error) {
	o := own{speed: 1, startTime: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), bindAfter: 5 * time.Second}
	var rest []string
	for i := 0; i < len(argv); i++ {
		name, val, has := strings.Cut(argv[i], "=")
		switch name {
		case "--port-holder-on-vclock":
			o.holderOnVclock = true
			continue
		case "--scenario", "--speed", "--seed", "--journal", "--start-time", "--log-file", "--profile", "--sglang-version", "--bind-after", "--vclock":
		default:
			rest = append(rest, argv[i])
			continue
		}
		if !has {
			if i+1 >= len(argv) {
				return o, nil, usageError{"argument " + name + ": expected one argument"}
			}
			i++
			val = argv[i]
		}
		var err error
		switch name {
		case "--scenario":
			o.scenario = val
		case "--journal":
			o.journal = val
		case "--log-file":
			o.logFile = val
		case "--vclock":
			o.vclock = val
		case "--profile", "--sglang-version":
			if o.profile != "" && o.profile != val {
				return o, nil, usageError{fmt.Sprintf("argument %s: not allowed with %s %s: give the release once", name, o.profileFlag, o.profile)}
			}
			o.profile, o.profileFlag = val, name
		case "--speed":
			if o.speed, err = strconv.ParseFloat(val, 64); err == nil {
				err = replay.CheckFactor(o.speed)
			}
		case "--seed":
			o.seed, err = strconv.ParseInt(val, 10, 64)
		case "--start-time":
			o.startTime, err = time.Parse(time.RFC3339, val)
		case "--bind-after":
			o.bindAfter, err = time.ParseDuration(val)
		}
		if err != nil {
			return o, nil, usageError{fmt.Sprintf("argument %s: invalid value %q: %v", name, val, err)}
		}
	}
	if o.holderOnVclock && o.vclock == "" {
		return o, nil, usageError{"argument --port-holder-on-vclock: needs --vclock"}
	}
	return o, rest, nil
}

// given reports whether flag appears on the command line (as --flag or --flag=...).
func given(argv []string, flags ...string) bool {
	return slices.ContainsFunc(argv, func(a string) bool {
		name, _, _ := strings.Cut(a, "=")
		return slices.Contains(flags, name)
	})
}

func config(o own, argv []string) (fakeserver.Config, error) {
	var cfg fakeserver.Config
	if o.scenario != "" && o.profile != "" {
		return cfg, usageError{"argument " + o.profileFlag + ": not allowed with --scenario: the scenario's profile: field picks its release"}
	}
	if o.scenario != "" {
		so := fakeserver.ScenarioOptions{Seed: o.seed, Speed: o.speed}
		if given(os.Args, "--start-time") { // re-stamp the scenario: lines are stamped Start+offset
			so.StartTime = o.startTime
		}
		var err error
		if cfg, err = fakeserver.ConfigForScenario(o.scenario, so); err != nil {
			return cfg, err
		}
		if !given(argv, "--model-path", "--model") {
			argv = append(argv, "--model-path", cfg.Args.ModelPath)
		}
		cli, err := sglang.ParseArgs(argv)
		if err != nil {
			return cfg, err
		}
		// Flags on the command line win over the scenario's launch line (a launch script's own
		// host and port, a container's 0.0.0.0).
		if given(argv, "--host") {
			cfg.Args.Host = cli.Host
		}
		// The launch's model flags name what /v1/models lists: a waiter that checks for its
		// own model id must find it. A model path without a served name serves that path.
		if given(argv, "--model-path", "--model") {
			cfg.Args.ModelPath, cfg.Args.ServedModelName = cli.ModelPath, cli.ServedModelName
		}
		if given(argv, "--served-model-name") {
			cfg.Args.ServedModelName = cli.ServedModelName
		}
		if given(argv, "--port") {
			cfg.Args.Port = cli.Port
		}
		if given(argv, "--api-key") {
			cfg.Args.APIKey = cli.APIKey
		}
		if given(argv, "--enable-metrics") {
			cfg.Args.EnableMetrics = true
		}
		if given(argv, "--skip-server-warmup") {
			cfg.Args.SkipServerWarmup = true
		}
	} else {
		a, err := sglang.ParseArgs(argv)
		if err != nil {
			return cfg, err
		}
		cfg.Args = a
		cfg.Profile = sglang.ProfileFor(sglang.EraC)
		if o.profile != "" {
			if cfg.Profile, err = sglang.LookupProfile(o.profile); err != nil {
				return cfg, usageError{err.Error()}
			}
		}
		cfg.Timeline = fakeserver.HappyPath(o.startTime, cfg.Profile, o.bindAfter, 0, 0)
		cfg.Seed = o.seed
		cfg.Clock = replay.Scaled(cfg.Timeline.Start, o.speed)
	}
	if o.vclock != "" {
		// The leader (a harness) owns time; this process's clock follows it.
		conn, err := net.Dial("unix", o.vclock)
		if err != nil {
			return cfg, fmt.Errorf("--vclock: %w", err)
		}
		if o.holderOnVclock {
			if cfg.Holder, err = vtime.ReceiveListener(conn.(*net.UnixConn)); err != nil {
				conn.Close()
				return cfg, fmt.Errorf("--port-holder-on-vclock: %w", err)
			}
		}
		cfg.Clock = vtime.Follow(conn, cfg.Timeline.Start, vtime.Options{})
	}
	cfg.InheritEnv()
	cfg.Stdout, cfg.Stderr, cfg.LogFile = os.Stdout, os.Stderr, o.logFile
	return cfg, nil
}

const usage = "usage: fakesglang [-h] --model-path MODEL_PATH [SGLang launch flags] [--scenario FILE|NAME] [--speed S] [--seed N] [--journal FILE] [--start-time RFC3339] [--log-file FILE] [--sglang-version V] [--vclock SOCKET [--port-holder-on-vclock]]"

// run runs one server until it exits. A value on term is SIGTERM, which the server handles as
// its SGLang release does (a drain, then exit 137); ctx ending is SIGINT: stop at once, 143.
func run(ctx context.Context, term <-chan os.Signal, argv []string, stdout, stderr io.Writer) int {
	if slices.Contains(argv, "-h") || slices.Contains(argv, "--help") { // argparse: usage on stdout, exit 0
		fmt.Fprintln(stdout, usage)
		fmt.Fprintln(stdout, "\nA fake SGLang server: replays a scenario's startup (log lines, port binding, HTTP behaviour,\nexit code) on a compressible clock. Flags other than the ones above are SGLang's launch flags.\n\n--sglang-version (or --profile) picks the SGLang release a launch without --scenario plays:\n"+strings.Join(profileNames(), ", ")+".")
		return 0
	}
	o, rest, err := splitOwn(argv)
	if err == nil {
		var cfg fakeserver.Config
		if cfg, err = config(o, rest); err == nil {
			if o.journal != "" {
				f, ferr := os.Create(o.journal)
				if ferr != nil {
					fmt.Fprintln(stderr, "fakesglang: --journal:", ferr)
					return 1
				}
				defer f.Close()
				cfg.Journal = f
			}
			srv, serr := fakeserver.Start(ctx, cfg)
			if serr != nil {
				fmt.Fprintln(stderr, "fakesglang:", serr)
				return 1
			}
			if vc, ok := cfg.Clock.(*vtime.Clock); ok {
				vc.Join() // the journal exists and the timeline is scheduled
			}
			defer srv.Stop(context.Background())
			for {
				select {
				case <-term:
					srv.Terminate()
				case <-srv.Done():
					code, _ := srv.ExitCode()
					return code
				case <-ctx.Done():
					return fakeserver.ExitSIGTERM
				}
			}
		}
	}
	var ae *sglang.ArgsError
	var ue usageError
	if errors.As(err, &ae) || errors.As(err, &ue) {
		fmt.Fprintln(stderr, usage)
		fmt.Fprintln(stderr, "fakesglang: "+err.Error())
		return sglang.UsageExitCode
	}
	fmt.Fprintln(stderr, "fakesglang:", err)
	return 1
}

// profileNames lists each release profile with its aliases, e.g. "0.4.6 (A, 0.4)".
func profileNames() []string {
	var out []string
	for _, p := range sglang.Profiles() {
		n := p.Name
		if len(p.Aliases) > 0 {
			n += " (" + strings.Join(p.Aliases, ", ") + ")"
		}
		out = append(out, n)
	}
	return out
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	code := run(ctx, term, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	signal.Stop(term)
	if code == 137 && os.Getpid() != 1 {
		// SGLang's launcher dies by SIGKILL (kill_process_tree); a parent shell sees exactly
		// that. PID 1 in a container cannot signal itself, so it exits 137 instead.
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Second)
	}
	os.Exit(code)
}
