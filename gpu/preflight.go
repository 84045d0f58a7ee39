package gpu

import (
	"fmt"
	"strings"

	"github.com/incident-replay/incident-replay/sglang"
)

// Severity ranks a preflight finding.
type Severity int

const (
	// Warning: the launch may work but something is off (memory held, tight margins).
	Warning Severity = iota + 1
	// Error: the launch will fail or take the host down; do not start it.
	Error
)

func (s Severity) String() string {
	if s == Error {
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
)

// Finding is one preflight result, with the numbers in its message.
type Finding struct {
	Severity Severity `json:"severity"`
	Check    string   `json:"check"`
	Message  string   `json:"message"`
}

func (f Finding) String() string { return f.Severity.String() + ": " + f.Check + ": " + f.Message }

// LaunchShape is what a launch's flags ask of a host. Zero values mean SGLang's defaults.
type LaunchShape struct {
	TP, DP, PP int // --tp, --dp, --pp-size
	NNodes     int // --nnodes
	// DPAttention (--enable-dp-attention) runs DP inside the TP group: tp × pp GPUs, not dp × tp × pp.
	DPAttention       bool
	MemFractionStatic float64 // --mem-fraction-static; 0: sglang.DefaultMemFractionStatic
	HiCache           bool    // --enable-hierarchical-cache
	HiCacheSizeGB     int     // --hicache-size, decimal GB per rank
	HiCacheRatio      float64 // --hicache-ratio, used when HiCacheSizeGB is 0
	// KVBytesPerToken and DevicePoolTokens refine HiCache sizing (page rounding, ratio); both
	// optional with --hicache-size.
	KVBytesPerToken  int64
	DevicePoolTokens int64
	// WeightsGBPerRank (decimal GB), when known, lets preflight check the KV pool fits.
	WeightsGBPerRank float64
	// HostCheck is the SGLang build's HiCache check; it decides fail-fast vs host OOM.
	HostCheck sglang.HostCheckRule
}

func orOne(n int) int { return max(n, 1) }

// GPUsPerHost is how many GPUs (and scheduler ranks, one per GPU) the launch puts on one node.
func (s LaunchShape) GPUsPerHost() int {
	n := orOne(s.TP) * orOne(s.PP)
	if !s.DPAttention {
		n *= orOne(s.DP)
	}
	return max(n/orOne(s.NNodes), 1)
}

func (s LaunchShape) memFraction() float64 {
	if s.MemFractionStatic == 0 {
		return sglang.DefaultMemFractionStatic
	}
	return s.MemFractionStatic
}

// Preflight compares a launch with a host (a profile, a scenario's host block or a
// snapshot's HostProfile) and returns what will go wrong, most severe first.
func Preflight(host Host, shape LaunchShape) []Finding {
	var errs, warns []Finding
	add := func(sev Severity, check, format string, a ...any) {
		f := Finding{Severity: sev, Check: check, Message: fmt.Sprintf(format, a...)}
		if sev == Error {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	ranks := shape.GPUsPerHost()
	if ranks > host.GPUCount {
		add(Error, CheckGPUCount, "--tp %d x --dp %d x --pp %d over %d node(s) needs %d GPUs per node; the host has %d",
			orOne(shape.TP), orOne(shape.DP), orOne(shape.PP), orOne(shape.NNodes), ranks, host.GPUCount)
	}
	if mfs := shape.memFraction(); mfs <= 0 || mfs >= 1 {
		add(Error, CheckGPUMemory, "--mem-fraction-static %g must be between 0 and 1", mfs)
	} else if shape.WeightsGBPerRank > 0 && host.GPUMemoryGB > 0 {
		_, err := sglang.KVPoolSize(sglang.KVPoolInput{
			GPUFreeBytes: host.GPUMemoryBytes(), WeightsBytes: int64(shape.WeightsGBPerRank * float64(sglang.GB)),
			MemFractionStatic: mfs, BytesPerToken: max(shape.KVBytesPerToken, 1),
		})
		if err != nil {
			add(Error, CheckGPUMemory, "%v", err)
		}
	}
	if shape.HiCache {
		hicacheFindings(host, shape, ranks, add)
	}
	return append(errs, warns...)
}

func hicacheFindings(host Host, shape LaunchShape, ranks int, add func(Severity, string, string, ...any)) {
	pool, err := sglang.HiCacheBytesPerRank(sglang.HiCacheSizing{
		SizeGB: shape.HiCacheSizeGB, Ratio: shape.HiCacheRatio,
		DevicePoolTokens: shape.DevicePoolTokens, BytesPerToken: shape.KVBytesPerToken,
	})
	if err != nil {
		add(Warning, CheckHiCacheRAM, "cannot size the HiCache host pool: %v", err)
		return
	}
	res, err := sglang.CheckHostMemory(sglang.HostCheckInput{
		Rule: shape.HostCheck, RanksPerHost: ranks, RequestedPerRank: pool.Bytes,
		MemAvailable: host.MemAvailableBytes(), CgroupLimit: host.CgroupLimitBytes(),
	})
	if err != nil {
		add(Warning, CheckHiCacheRAM, "cannot check host memory: %v", err)
		return
	}
	gb := func(b int64) float64 { return float64(b) / float64(sglang.GB) }
	what := fmt.Sprintf("--hicache-size %d GB", shape.HiCacheSizeGB)
	if shape.HiCacheSizeGB == 0 {
		what = fmt.Sprintf("--hicache-ratio %g (%.2f GB)", orRatio(shape.HiCacheRatio), gb(pool.Bytes))
	}
	budget := host.MemAvailableBytes() - sglang.HiCacheReserve
	if res.TotalRequested > budget {
		outcome := "SGLang's per-rank check passes every rank, so the ranks pin it all and the host OOMs (GPUs may stay held until a host-level reset)"
		if res.FailFast() {
			outcome = "SGLang refuses at startup: " + res.Ranks[0].Message
		}
		// Host RAM is quoted in GiB (as free(1) and the incident report give it), flags in GB.
		add(Error, CheckHiCacheRAM, "%s x %d ranks = %.0f GB (%.0f GiB) > %.0f GiB available (%.0f GiB MemAvailable - 10 GiB reserve); %s. Use --hicache-size %d or less",
			what, ranks, gb(res.TotalRequested), float64(res.TotalRequested)/GiB, float64(budget)/GiB,
			float64(host.MemAvailableBytes())/GiB, outcome, max(budget/int64(ranks)/sglang.GB, 0))
	} else if res.HostOOM {
		add(Error, CheckCgroupLimit, "%s x %d ranks = %.2f GB fits MemAvailable but not the %.2f GiB container limit: SGLang's check ignores cgroups, so the container is OOMKilled (exit 137)",
			what, ranks, gb(res.TotalRequested), float64(res.Limit)/GiB)
	}
	if pool.SmallerThanDevice {
		add(Warning, CheckHiCacheRAM, "HiCache host pool (%d tokens) is not larger than the device pool (%d tokens): older SGLang asserts, newer warns that L2 is ineffective",
			pool.Tokens, shape.DevicePoolTokens)
	}
}

func orRatio(r float64) float64 {
	if r == 0 {
		return sglang.DefaultHiCacheRatio
	}
	return r
}

// idleUsed is the memory an idle GPU shows as used with no process (driver reservations are
// a few hundred MiB); more than this with no process means a context outlived its owner.
const idleUsed = 1 * GiB

// PreflightDevices checks the live GPUs a launch will use (the first GPUsPerHost of them):
// free memory against the mem-fraction-static share, and memory held by other processes or
// by contexts whose process is gone (the state a host OOM leaves behind).
func PreflightDevices(devs []Device, shape LaunchShape) []Finding {
	var errs, warns []Finding
	mfs := shape.memFraction()
	n := min(shape.GPUsPerHost(), len(devs))
	for _, d := range devs[:n] {
		gib := func(b uint64) float64 { return float64(b) / GiB }
		share := uint64(float64(d.MemoryTotal) * mfs)
		held := d.HeldByProcesses()
		switch {
		case d.MemoryFree < share:
			who := fmt.Sprintf("%d process(es) hold %.2f GiB", len(d.Processes), gib(held))
			if len(d.Processes) == 0 {
				who = "no process is listed: a dead context still holds it (reset the GPU or the host)"
			}
			errs = append(errs, Finding{Error, CheckGPUMemoryHeld, fmt.Sprintf(
				"GPU %d (%s): %.2f GiB free < --mem-fraction-static %.2f x %.2f GiB = %.2f GiB; %.2f GiB used, %s%s",
				d.Index, d.UUID, gib(d.MemoryFree), mfs, gib(d.MemoryTotal), gib(share), gib(d.MemoryUsed), who, procList(d.Processes))})
		case held > 0:
			warns = append(warns, Finding{Warning, CheckGPUMemoryHeld, fmt.Sprintf(
				"GPU %d (%s): %d other process(es) hold %.2f GiB%s; the KV pool shrinks by that much",
				d.Index, d.UUID, len(d.Processes), gib(held), procList(d.Processes))})
		case d.MemoryUsed > idleUsed:
			warns = append(warns, Finding{Warning, CheckGPUMemoryHeld, fmt.Sprintf(
				"GPU %d (%s): %.2f GiB used with no process listed (a dead context, or a process in another PID namespace)",
				d.Index, d.UUID, gib(d.MemoryUsed))})
		}
	}
	return append(errs, warns...)
}

func procList(ps []Process) string {
	parts := make([]string, 0, 4)
	for i, p := range ps {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("+%d more", len(ps)-3))
			break
		}
		name := p.Name
		if name == "" {
			name = "?"
		}
		parts = append(parts, fmt.Sprintf("pid %d %s %.2f GiB", p.PID, name, float64(p.UsedMemory)/GiB))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// Preflight runs the host checks on the snapshot's profile and the device checks on its GPUs.
func (s Snapshot) Preflight(shape LaunchShape) []Finding {
	fs := append(Preflight(s.HostProfile(), shape), PreflightDevices(s.Devices, shape)...)
	// Errors first across both lists.
	out := make([]Finding, 0, len(fs))
	for _, sev := range []Severity{Error, Warning} {
		for _, f := range fs {
			if f.Severity == sev {
				out = append(out, f)
			}
		}
	}
	return out
}

// ShapeFromArgs reads a launch shape from parsed SGLang flags. KV sizes and weights are not
// flags; set them on the result when the model is known.
func ShapeFromArgs(a sglang.ServerArgs, rule sglang.HostCheckRule) LaunchShape {
	s := LaunchShape{
		TP: a.TPSize, DP: a.DPSize, PP: a.PPSize, NNodes: a.NNodes,
		DPAttention:   a.EnableDPAttention,
		HiCache:       a.EnableHierarchicalCache,
		HiCacheSizeGB: a.HiCacheSize,
		HiCacheRatio:  a.HiCacheRatio,
		HostCheck:     rule,
	}
	if a.MemFractionStatic != nil {
		s.MemFractionStatic = *a.MemFractionStatic
	}
	if a.MaxTotalTokens != nil {
		s.DevicePoolTokens = int64(*a.MaxTotalTokens)
	}
	return s
}
