package ready

import (
	"fmt"
	"strings"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/sglang"
)

// hostFindings compares a launch with a host (a profile, a scenario's host block or a
// snapshot's HostProfile) and returns what will go wrong, most severe first.
func hostFindings(host gpu.Host, shape sglang.LaunchShape) []Finding {
	var errs, warns []Finding
	add := func(sev Severity, check, format string, a ...any) {
		f := Finding{Severity: sev, Check: check, Message: fmt.Sprintf(format, a...)}
		if sev == SeverityError {
			errs = append(errs, f)
		} else {
			warns = append(warns, f)
		}
	}
	a := shape.Args
	ranks := shape.RanksPerHost()
	if ranks > host.GPUCount {
		add(SeverityError, CheckGPUCount, "--tp %d x --dp %d x --pp %d over %d node(s) needs %d GPUs per node; the host has %d",
			max(a.TPSize, 1), max(a.DPSize, 1), max(a.PPSize, 1), max(a.NNodes, 1), ranks, host.GPUCount)
	}
	if mfs := shape.MemFractionStatic(); mfs <= 0 || mfs >= 1 {
		add(SeverityError, CheckGPUMemory, "--mem-fraction-static %g must be between 0 and 1", mfs)
	} else if shape.WeightsBytesPerRank > 0 && host.GPUMemoryGB > 0 {
		_, err := sglang.KVPoolSize(sglang.KVPoolInput{
			GPUFreeBytes: host.GPUMemoryBytes(), WeightsBytes: shape.WeightsBytesPerRank,
			MemFractionStatic: mfs, BytesPerToken: max(shape.KVBytesPerToken, 1),
		})
		if err != nil {
			add(SeverityError, CheckGPUMemory, "%v", err)
		}
	}
	if a.EnableHierarchicalCache {
		hicacheFindings(host, shape, add)
	}
	return append(errs, warns...)
}

func hicacheFindings(host gpu.Host, shape sglang.LaunchShape, add func(Severity, string, string, ...any)) {
	pool, res, err := shape.HiCache(host.MemAvailableBytes(), host.CgroupLimitBytes())
	if err != nil {
		add(SeverityWarning, CheckHiCacheRAM, "%v", err)
		return
	}
	ranks := shape.RanksPerHost()
	gb := func(b int64) float64 { return float64(b) / float64(sglang.GB) }
	what := shape.HiCacheRequest(pool)
	budget := host.MemAvailableBytes() - sglang.HiCacheReserve
	if res.TotalRequested > budget {
		outcome := "SGLang's per-rank check passes every rank, so the ranks pin it all and the host OOMs (GPUs may stay held until a host-level reset)"
		if res.FailFast() {
			outcome = "SGLang refuses at startup: " + res.Ranks[0].Message
		}
		// Host RAM is quoted in GiB (as free(1) and the incident report give it), flags in GB.
		add(SeverityError, CheckHiCacheRAM, "%s x %d ranks = %.0f GB (%.0f GiB) > %.0f GiB available (%.0f GiB MemAvailable - 10 GiB reserve); %s. Use --hicache-size %d or less",
			what, ranks, gb(res.TotalRequested), float64(res.TotalRequested)/gpu.GiB, float64(budget)/gpu.GiB,
			float64(host.MemAvailableBytes())/gpu.GiB, outcome, max(budget/int64(ranks)/sglang.GB, 0))
	} else if res.HostOOM {
		add(SeverityError, CheckCgroupLimit, "%s x %d ranks = %.2f GB fits MemAvailable but not the %.2f GiB container limit: SGLang's check ignores cgroups, so the container is OOMKilled (exit 137)",
			what, ranks, gb(res.TotalRequested), float64(res.Limit)/gpu.GiB)
	}
	if pool.SmallerThanDevice {
		add(SeverityWarning, CheckHiCacheRAM, "HiCache host pool (%d tokens) is not larger than the device pool (%d tokens): older SGLang asserts, newer warns that L2 is ineffective",
			pool.Tokens, shape.DevicePool())
	}
}

// idleUsed is the memory an idle GPU shows as used with no process (driver reservations are
// a few hundred MiB); more than this with no process means a context outlived its owner.
const idleUsed = 1 * gpu.GiB

// deviceFindings checks the live GPUs a launch will use (the first RanksPerHost of them):
// free memory against the mem-fraction-static share, and memory held by other processes or
// by contexts whose process is gone (the state a host OOM leaves behind).
func deviceFindings(devs []gpu.Device, shape sglang.LaunchShape) []Finding {
	var errs, warns []Finding
	mfs := shape.MemFractionStatic()
	n := min(shape.RanksPerHost(), len(devs))
	for _, d := range devs[:n] {
		gib := func(b uint64) float64 { return float64(b) / gpu.GiB }
		share := uint64(float64(d.MemoryTotal) * mfs)
		held := d.HeldByProcesses()
		switch {
		case d.MemoryFree < share:
			who := fmt.Sprintf("%d process(es) hold %.2f GiB", len(d.Processes), gib(held))
			if len(d.Processes) == 0 {
				who = "no process is listed: a dead context still holds it (reset the GPU or the host)"
			}
			errs = append(errs, Finding{SeverityError, CheckGPUMemoryHeld, fmt.Sprintf(
				"GPU %d (%s): %.2f GiB free < --mem-fraction-static %.2f x %.2f GiB = %.2f GiB; %.2f GiB used, %s%s",
				d.Index, d.UUID, gib(d.MemoryFree), mfs, gib(d.MemoryTotal), gib(share), gib(d.MemoryUsed), who, procList(d.Processes))})
		case held > 0:
			warns = append(warns, Finding{SeverityWarning, CheckGPUMemoryHeld, fmt.Sprintf(
				"GPU %d (%s): %d other process(es) hold %.2f GiB%s; the KV pool shrinks by that much",
				d.Index, d.UUID, len(d.Processes), gib(held), procList(d.Processes))})
		case d.MemoryUsed > idleUsed:
			warns = append(warns, Finding{SeverityWarning, CheckGPUMemoryHeld, fmt.Sprintf(
				"GPU %d (%s): %.2f GiB used with no process listed (a dead context, or a process in another PID namespace)",
				d.Index, d.UUID, gib(d.MemoryUsed))})
		}
	}
	return append(errs, warns...)
}

func procList(ps []gpu.Process) string {
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
		parts = append(parts, fmt.Sprintf("pid %d %s %.2f GiB", p.PID, name, float64(p.UsedMemory)/gpu.GiB))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
