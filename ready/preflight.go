package ready

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/sglang"
)

// Severity ranks a preflight finding.
type Severity int

const (
	// SeverityWarning: the launch may work but something is off (memory held, tight margins).
	SeverityWarning Severity = iota + 1
	// SeverityError: the launch will fail or take the host down; do not start it.
	SeverityError
)

func (s Severity) String() string {
	if s == SeverityError {
		return "error"
	}
	return "warning"
}

// MarshalText writes "error" or "warning".
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Check names, stable for callers that match on them.
const (
	CheckGPUCount      = "gpu-count"
	CheckGPUMemory     = "gpu-memory"
	CheckGPUMemoryHeld = "gpu-memory-held"
	CheckHiCacheRAM    = "hicache-host-ram"
	CheckCgroupLimit   = "cgroup-limit"
	CheckShm           = "shm-size"
	CheckPort          = "port"
	CheckProxy         = "proxy"
	CheckModelPath     = "model-path"
	CheckArgs          = "server-args"
	CheckHostFacts     = "host-facts"
)

// Finding is one preflight result, with the numbers in its message.
type Finding struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	Message  string   `json:"message"`
}

func (f Finding) String() string { return f.Severity.String() + ": " + f.Check + ": " + f.Message }

// PreflightInput is a launch about to happen and the host it will happen on.
type PreflightInput struct {
	// Argv is the server command (python -m sglang.launch_server ..., sglang serve ...,
	// fakesglang ...). Its flags are read with sglang.ParseArgs.
	Argv []string
	// HostCheck is the SGLang build's HiCache host check: whether an oversized pool fails fast
	// or pins the host into an OOM.
	HostCheck sglang.HostCheckRule
	// KVBytesPerToken is the model's KV bytes per token on one rank, when the caller knows the
	// model; it lets --hicache-ratio be priced (0: not known, ratio sizing is not checked).
	KVBytesPerToken int64
	// Host is a modelled host (a named profile or a profile file) to check against instead of
	// this machine: the harness replays the 449 GB founding host on a laptop.
	Host *gpu.Host
	// Root is the filesystem holding /proc and /sys for this machine's facts; default "/".
	Root fs.FS
	// Devices overrides the live GPU list (tests); nil = NVML when available.
	Devices []gpu.Device
	// Env is the environment the server will get (proxy hygiene); nil = ours.
	Env []string
	// ProcRoot is procfs for naming a port's owner; default /proc.
	ProcRoot string
	// SkipPort leaves out the port bind-test: a proxy (docker-proxy) holds the host port on
	// the server's behalf, so the port being taken says nothing.
	SkipPort bool
}

// ServerCommandArgs extracts and parses the SGLang flags of a launch command. Flags SGLang has
// that the model does not know are dropped and listed, so preflight still checks the rest.
func ServerCommandArgs(argv []string) (sglang.ServerArgs, []string, error) {
	flags := serverFlags(argv)
	if flags == nil {
		return sglang.ServerArgs{}, nil, fmt.Errorf("cannot find SGLang flags in %q: preflight needs --model-path and friends on the command line (not hidden in a script)", strings.Join(argv, " "))
	}
	var dropped []string
	for range 8 { // each round removes the tokens argparse rejected; bounded in case a value repeats
		a, err := sglang.ParseArgs(flags)
		var ae *sglang.ArgsError
		if err == nil || !errors.As(err, &ae) {
			return a, dropped, err
		}
		rest, ok := strings.CutPrefix(ae.Msg, "unrecognized arguments: ")
		if !ok {
			return a, dropped, err
		}
		unknown := strings.Fields(rest)
		kept := flags[:0:0]
		for _, f := range flags {
			if i := slices.Index(unknown, f); i >= 0 {
				unknown = slices.Delete(unknown, i, i+1)
				dropped = append(dropped, f)
				continue
			}
			kept = append(kept, f)
		}
		if len(kept) == len(flags) {
			return a, dropped, err
		}
		flags = kept
	}
	return sglang.ServerArgs{}, dropped, errors.New("cannot parse the server flags")
}

// serverFlags finds where the server's own flags start in a launch command.
func serverFlags(argv []string) []string {
	for i, a := range argv {
		switch {
		case a == "sglang.launch_server" && i > 0 && argv[i-1] == "-m":
			return argv[i+1:]
		case a == "serve" && i > 0 && filepath.Base(argv[i-1]) == "sglang":
			return argv[i+1:]
		}
	}
	for i, a := range argv {
		if i > 0 && strings.HasPrefix(a, "--") {
			return argv[i:]
		}
	}
	return nil
}

// Preflight runs every check before a launch. It never starts anything. Findings come most
// severe first; PreflightFailed says whether any is an error.
func Preflight(ctx context.Context, in PreflightInput) []Finding {
	var out []Finding
	add := func(sev Severity, check, format string, a ...any) {
		out = append(out, Finding{Severity: sev, Check: check, Message: fmt.Sprintf(format, a...)})
	}
	if in.ProcRoot == "" {
		in.ProcRoot = "/proc"
	}
	if in.Root == nil {
		in.Root = os.DirFS("/")
	}
	env := in.Env
	if env == nil {
		env = os.Environ()
	}
	args, dropped, err := ServerCommandArgs(in.Argv)
	if err != nil {
		add(SeverityError, CheckArgs, "%v", err)
		return sortFindings(out)
	}
	if len(dropped) > 0 {
		add(SeverityWarning, CheckArgs, "flags not modelled, not checked: %s", strings.Join(dropped, " "))
	}

	if !in.SkipPort {
		out = append(out, portFindings(args.Host, args.Port, in.ProcRoot)...)
	}
	if f, ok := proxyFinding(env, args.Host); ok {
		out = append(out, f)
	}
	if p := args.ModelPath; looksLocal(p) {
		if _, err := os.Stat(p); err != nil {
			add(SeverityError, CheckModelPath, "--model-path %s: %v (a local path must exist before minutes of startup are spent)", p, err)
		}
	}

	shape := sglang.NewLaunchShape(args, in.HostCheck)
	shape.KVBytesPerToken = in.KVBytesPerToken
	if in.Host != nil {
		out = append(out, hostFindings(*in.Host, shape)...)
		return sortFindings(out)
	}

	facts, err := gpu.ReadHostFacts(in.Root)
	if err != nil {
		add(SeverityWarning, CheckHostFacts, "cannot read host memory facts: %v; host RAM not checked", err)
		return sortFindings(out)
	}
	if ranks := shape.RanksPerHost(); ranks > 1 && facts.ShmSize > 0 && facts.ShmSize < gpu.GiB {
		add(SeverityWarning, CheckShm, "/dev/shm is %d MiB with %d ranks on this host: NCCL needs more (docker run --shm-size 16g or --ipc host)",
			facts.ShmSize>>20, ranks)
	}
	devs := in.Devices
	if devs == nil {
		snap, err := gpu.Inventory(ctx, gpu.WithRoot(in.Root))
		switch {
		case err == nil:
			devs = snap.Devices
		case errors.Is(err, gpu.ErrNoNVML):
			add(SeverityWarning, CheckGPUCount, "no NVML here: GPU count and free GPU memory not checked")
		default:
			add(SeverityWarning, CheckGPUCount, "GPU inventory failed: %v; GPU checks skipped", err)
		}
	}
	snap := gpu.Snapshot{Devices: devs, Host: facts}
	host := snap.HostProfile()
	if len(devs) == 0 {
		// Without an inventory only memory is checkable: assume the GPUs the launch asks for.
		host.GPUCount = shape.RanksPerHost()
	}
	out = append(out, hostFindings(host, shape)...)
	out = append(out, deviceFindings(devs, shape)...)
	return sortFindings(out)
}

// PreflightFailed reports whether any finding is an error.
func PreflightFailed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Severity == SeverityError })
}

func sortFindings(fs []Finding) []Finding {
	slices.SortStableFunc(fs, func(a, b Finding) int { return int(b.Severity) - int(a.Severity) })
	return fs
}

func looksLocal(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "~")
}
