package ready

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/sglang"
)

// Preflight check names added to gpu's (gpu.CheckHiCacheRAM, gpu.CheckGPUCount, ...).
const (
	CheckPort      = "port"
	CheckProxy     = "proxy"
	CheckModelPath = "model-path"
	CheckArgs      = "server-args"
	CheckHostFacts = "host-facts"
)

// PreflightInput is a launch about to happen and the host it will happen on.
type PreflightInput struct {
	// Argv is the server command (python -m sglang.launch_server ..., sglang serve ...,
	// fakesglang ...). Its flags are read with sglang.ParseArgs.
	Argv []string
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
func Preflight(ctx context.Context, in PreflightInput) []gpu.Finding {
	var out []gpu.Finding
	add := func(sev gpu.Severity, check, format string, a ...any) {
		out = append(out, gpu.Finding{Severity: sev, Check: check, Message: fmt.Sprintf(format, a...)})
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
		add(gpu.Error, CheckArgs, "%v", err)
		return sortFindings(out)
	}
	if len(dropped) > 0 {
		add(gpu.Warning, CheckArgs, "flags not modelled, not checked: %s", strings.Join(dropped, " "))
	}

	if !in.SkipPort {
		out = append(out, portFindings(args.Host, args.Port, in.ProcRoot)...)
	}
	if f, ok := proxyFinding(env, args.Host); ok {
		out = append(out, f)
	}
	if p := args.ModelPath; looksLocal(p) {
		if _, err := os.Stat(p); err != nil {
			add(gpu.Error, CheckModelPath, "--model-path %s: %v (a local path must exist before minutes of startup are spent)", p, err)
		}
	}

	shape := gpu.LaunchShape{
		TP: args.TPSize, DP: args.DPSize, PP: args.PPSize, NNodes: args.NNodes, DPAttention: args.EnableDPAttention,
		HiCache: args.EnableHierarchicalCache, HiCacheSizeGB: args.HiCacheSize, HiCacheRatio: args.HiCacheRatio,
	}
	if args.MemFractionStatic != nil {
		shape.MemFractionStatic = *args.MemFractionStatic
	}
	if in.Host != nil {
		out = append(out, gpu.Preflight(*in.Host, shape)...)
		return sortFindings(out)
	}

	facts, err := gpu.ReadHostFacts(in.Root)
	if err != nil {
		add(gpu.Warning, CheckHostFacts, "cannot read host memory facts: %v; host RAM not checked", err)
		return sortFindings(out)
	}
	if ranks := shape.GPUsPerHost(); ranks > 1 && facts.ShmSize > 0 && facts.ShmSize < gpu.GiB {
		add(gpu.Warning, gpu.CheckShm, "/dev/shm is %d MiB with %d ranks on this host: NCCL needs more (docker run --shm-size 16g or --ipc host)",
			facts.ShmSize>>20, ranks)
	}
	devs := in.Devices
	if devs == nil {
		snap, err := gpu.Inventory(ctx, gpu.WithRoot(in.Root))
		switch {
		case err == nil:
			devs = snap.Devices
		case errors.Is(err, gpu.ErrNoNVML):
			add(gpu.Warning, gpu.CheckGPUCount, "no NVML here: GPU count and free GPU memory not checked")
		default:
			add(gpu.Warning, gpu.CheckGPUCount, "GPU inventory failed: %v; GPU checks skipped", err)
		}
	}
	snap := gpu.Snapshot{Devices: devs, Host: facts}
	host := snap.HostProfile()
	if len(devs) == 0 {
		// Without an inventory only memory is checkable: assume the GPUs the launch asks for.
		host.GPUCount = shape.GPUsPerHost()
	}
	if len(devs) > 0 {
		out = append(out, snap.Preflight(shape)...)
	} else {
		out = append(out, gpu.Preflight(host, shape)...)
	}
	return sortFindings(out)
}

// PreflightFailed reports whether any finding is an error.
func PreflightFailed(fs []gpu.Finding) bool {
	return slices.ContainsFunc(fs, func(f gpu.Finding) bool { return f.Severity == gpu.Error })
}

func sortFindings(fs []gpu.Finding) []gpu.Finding {
	slices.SortStableFunc(fs, func(a, b gpu.Finding) int { return int(b.Severity) - int(a.Severity) })
	return fs
}

func looksLocal(p string) bool {
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "~")
}

// portFindings bind-tests the port on both loopbacks (and the server's own bind address): a
// port held by an old server makes the new one die with Errno 98 after minutes of loading,
// while the old one answers every probe (P14).
func portFindings(host string, port int, procRoot string) []gpu.Finding {
	addrs := []string{"127.0.0.1", "::1"}
	if host != "" && !slices.Contains(addrs, host) && net.ParseIP(host) != nil {
		addrs = append(addrs, host)
	}
	var out []gpu.Finding
	for _, a := range addrs {
		hp := net.JoinHostPort(a, strconv.Itoa(port))
		l, err := net.Listen("tcp", hp)
		if err == nil {
			l.Close()
			continue
		}
		if errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) {
			continue // no IPv6 here: nothing can be listening on ::1 either
		}
		owners, foreign, _ := ListenerOwners(procRoot, port)
		who := "owner unknown"
		if len(owners) > 0 {
			parts := make([]string, len(owners))
			for i, o := range owners {
				parts[i] = fmt.Sprintf("PID %d (%s)", o, procComm(procRoot, o))
			}
			who = "held by " + strings.Join(parts, ", ")
		} else if foreign > 0 {
			who = "held by a process we cannot inspect (another user, or a container proxy)"
		}
		out = append(out, gpu.Finding{Severity: gpu.Error, Check: CheckPort, Message: fmt.Sprintf(
			"port %d is in use on %s, %s: SGLang binds only after loading, so it would die with Errno 98 while the old listener answers probes. Stop it or pick another --port",
			port, a, who)})
		break // one finding names the owner; more addresses add nothing
	}
	return out
}

// mustBypass are the names SGLang's own warmup and clients use for a local server (the warmup
// targets 0.0.0.0 when bound there, which no_proxy=localhost,127.0.0.1 misses: sglang #9814).
var mustBypass = []string{"127.0.0.1", "localhost", "::1", "0.0.0.0"}

// proxyFinding warns when a proxy variable would catch the server's loopback warmup request:
// SGLang's warmup uses Python requests, gets a 502/403 from the proxy, and kills itself (P11).
func proxyFinding(env []string, host string) (gpu.Finding, bool) {
	proxy, missing := proxyGaps(env, host)
	if proxy == "" || len(missing) == 0 {
		return gpu.Finding{}, false
	}
	return gpu.Finding{Severity: gpu.Warning, Check: CheckProxy, Message: fmt.Sprintf(
		"%s is set and no_proxy does not cover %s: SGLang's warmup request would go to the proxy and the server would kill itself. llmwait launch adds them to the server's no_proxy (disable with --keep-proxy-env)",
		proxy, strings.Join(missing, ","))}, true
}

func proxyGaps(env []string, host string) (proxyVar string, missing []string) {
	vals := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[k] = v
		}
	}
	for _, k := range []string{"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"} {
		if vals[k] != "" {
			proxyVar = k + "=" + vals[k]
			break
		}
	}
	if proxyVar == "" {
		return "", nil
	}
	var entries []string
	for _, k := range []string{"no_proxy", "NO_PROXY"} {
		for e := range strings.SplitSeq(vals[k], ",") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	if slices.Contains(entries, "*") {
		return proxyVar, nil
	}
	want := slices.Clone(mustBypass)
	if host != "" && !slices.Contains(want, host) {
		want = append(want, host)
	}
	for _, w := range want {
		if !slices.Contains(entries, w) && !slices.Contains(entries, "["+w+"]") {
			missing = append(missing, w)
		}
	}
	return proxyVar, missing
}

// FixNoProxy returns env with no_proxy and NO_PROXY extended to cover the loopback names and
// host, so the server's own warmup bypasses any proxy.
func FixNoProxy(env []string, host string) []string {
	_, missing := proxyGaps(env, host)
	if len(missing) == 0 {
		return env
	}
	out := slices.Clone(env)
	for _, k := range []string{"no_proxy", "NO_PROXY"} {
		i := slices.IndexFunc(out, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		if i < 0 {
			out = append(out, k+"="+strings.Join(missing, ","))
			continue
		}
		cur := strings.TrimPrefix(out[i], k+"=")
		if cur != "" {
			cur += ","
		}
		out[i] = k + "=" + cur + strings.Join(missing, ",")
	}
	return out
}
