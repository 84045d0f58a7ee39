package author

import (
	"math"
	"strings"

	"github.com/incident-replay/incident-replay/sglang"
)

// maxEvidence is how many of the lines that picked the profile a report names.
const maxEvidence = 4

// countRanks counts the scheduler processes: distinct rank prefixes of headed lines.
func countRanks(lines []sglang.Line) int {
	seen := map[string]bool{}
	for _, l := range lines {
		if l.TimeForm == sglang.TimeNone || len(l.Event.Ranks) == 0 || l.Block > 0 {
			continue
		}
		var b strings.Builder
		for _, r := range l.Event.Ranks {
			b.WriteString(r.String() + " ")
		}
		seen[b.String()] = true
	}
	return max(len(seen), 1)
}

// rankMax is the highest N of a rank name in the headers, -1 when absent.
func rankMax(lines []sglang.Line, name string) int {
	m := -1
	for _, l := range lines {
		for _, r := range l.Event.Ranks {
			if r.Name == name && r.N > m {
				m = r.N
			}
		}
	}
	return m
}

// inferHost writes an inline host block from what the log shows: one GPU per rank, GPU
// memory from the first "Init torch distributed ends" usage plus "Load weight begin" free
// memory, host RAM from a HiCache host-memory error when there is one.
func inferHost(lines []sglang.Line, ranks int, rep *Report) hostDraft {
	h := hostDraft{GPUCount: ranks}
	var usage, avail float64
	for _, l := range lines {
		switch l.Event.Kind {
		case sglang.KindDistInitEnd:
			if v, ok := l.Event.Fields.Float("mem_usage"); ok && usage == 0 {
				usage = v
			}
		case sglang.KindLoadBegin:
			if v, ok := l.Event.Fields.Float("avail_mem"); ok && avail == 0 {
				avail = v
			}
		case sglang.KindHostMemError:
			if v, ok := l.Event.Fields.Float("free_gb"); ok && h.HostRAMGB == 0 && v > 0 {
				h.HostRAMGB = math.Ceil(v*1e9/(1<<30)) + 10 // the check leaves a 10 GiB reserve
			}
		}
	}
	if avail > 0 {
		h.GPUMemoryGB = math.Ceil((usage + avail) * 1e9 / (1 << 30))
	} else {
		h.GPUMemoryGB = 80
		rep.Notes = append(rep.Notes, "GPU memory is not in the log (no Load weight begin line): host.gpu_memory_gb is a placeholder 80")
	}
	if h.HostRAMGB == 0 {
		h.HostRAMGB = 1024
		rep.Notes = append(rep.Notes, "host RAM is not in the log: host.host_ram_gb is a placeholder 1024")
	}
	return h
}

type hostDraft struct {
	GPUCount    int
	GPUMemoryGB float64
	HostRAMGB   float64
}
