package ready

import (
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/sglang"
)

// shape parses launch_server flags into a launch shape, as Preflight does.
func shape(t *testing.T, rule sglang.HostCheckRule, flags ...string) sglang.LaunchShape {
	t.Helper()
	a, err := sglang.ParseArgs(append([]string{"--model-path", "org/model"}, flags...))
	if err != nil {
		t.Fatal(err)
	}
	return sglang.NewLaunchShape(a, rule)
}

func TestHostFindings(t *testing.T) {
	found := *founding(t)
	inContainer := found
	inContainer.CgroupLimitGB = 256
	kimi := int64(70272) // MLA bytes per token, see sglang/memory_test.go
	withKV := func(s sglang.LaunchShape, kv int64) sglang.LaunchShape { s.KVBytesPerToken = kv; return s }
	withWeights := func(s sglang.LaunchShape, gb float64) sglang.LaunchShape {
		s.WeightsBytesPerRank = int64(gb * float64(sglang.GB))
		return s
	}
	perRank, divided := sglang.CheckPerRank, sglang.CheckDividedPerHost
	tests := []struct {
		name  string
		host  gpu.Host
		shape sglang.LaunchShape
		want  []string // "severity check substring", in order; nil: no findings
	}{
		{"incident 1: 300 x 8, old check OOMs the host", found,
			shape(t, perRank, "--tp", "8", "--enable-hierarchical-cache", "--hicache-size", "300"),
			[]string{"error " + CheckHiCacheRAM + " --hicache-size 300 GB x 8 ranks = 2400 GB (2235 GiB) > 439 GiB available (449 GiB MemAvailable - 10 GiB reserve); SGLang's per-rank check passes every rank, so the ranks pin it all and the host OOMs"}},
		{"300 x 8, divided check fails fast with SGLang's numbers", found,
			withKV(shape(t, divided, "--tp", "8", "--enable-hierarchical-cache", "--hicache-size", "300"), kimi),
			[]string{"error " + CheckHiCacheRAM + " SGLang refuses at startup: Not enough host memory available. Requesting 300.00 GB but only have 58.92 GB free."}},
		{"the suggested size is the per-rank budget", found,
			shape(t, perRank, "--tp", "8", "--enable-hierarchical-cache", "--hicache-size", "300"),
			[]string{"error " + CheckHiCacheRAM + " Use --hicache-size 58 or less"}},
		{"relaunch: 48 x 8 fits", found, shape(t, perRank, "--tp", "8", "--enable-hierarchical-cache", "--hicache-size", "48"), nil},
		{"48 x 8 in a 256 GiB container is OOMKilled", inContainer,
			shape(t, perRank, "--tp", "8", "--enable-hierarchical-cache", "--hicache-size", "48"),
			[]string{"error " + CheckCgroupLimit + " 384.00 GB fits MemAvailable but not the 256.00 GiB container limit"}},
		{"tp8 x dp2 needs 16 GPUs", found, shape(t, perRank, "--tp", "8", "--dp", "2"),
			[]string{"error " + CheckGPUCount + " needs 16 GPUs per node; the host has 8"}},
		{"dp attention stays inside tp", found, shape(t, perRank, "--tp", "8", "--dp", "8", "--enable-dp-attention"), nil},
		{"two nodes halve the GPUs per node", found, shape(t, perRank, "--tp", "16", "--nnodes", "2"), nil},
		{"weights over the static share", found, withWeights(shape(t, perRank, "--tp", "8", "--mem-fraction-static", "0.85"), 95),
			[]string{"error " + CheckGPUMemory + " Not enough memory. Please try to increase --mem-fraction-static."}},
		{"bad mem fraction", found, shape(t, perRank, "--mem-fraction-static", "1.5"),
			[]string{"error " + CheckGPUMemory + " --mem-fraction-static 1.5 must be between 0 and 1"}},
		{"ratio smaller than the device pool (--max-total-tokens) warns", found,
			withKV(shape(t, perRank, "--tp", "8", "--enable-hierarchical-cache", "--hicache-ratio", "0.5", "--max-total-tokens", "116000"), kimi),
			[]string{"warning " + CheckHiCacheRAM + " HiCache host pool (58001 tokens) is not larger than the device pool (116000 tokens)"}},
		{"ratio sizing without a device pool cannot be priced", found,
			withKV(shape(t, perRank, "--tp", "8", "--enable-hierarchical-cache", "--hicache-ratio", "0.5"), kimi),
			[]string{"warning " + CheckHiCacheRAM + " cannot size the HiCache host pool: hicache: --hicache-ratio sizing needs the device pool tokens"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertFindings(t, hostFindings(tc.host, tc.shape), tc.want)
		})
	}
}

func assertFindings(t *testing.T, got []Finding, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d findings, want %d:\n%v", len(got), len(want), got)
	}
	for i, w := range want {
		sev, rest, _ := strings.Cut(w, " ")
		check, sub, _ := strings.Cut(rest, " ")
		f := got[i]
		if f.Severity.String() != sev || f.Check != check || !strings.Contains(f.Message, sub) {
			t.Errorf("finding %d:\n got  %s\n want %s %s containing %q", i, f, sev, check, sub)
		}
	}
}

func TestDeviceFindingsMemoryStillHeld(t *testing.T) {
	const total = 97887 << 20 // RTX PRO 6000 Blackwell: 97887 MiB
	idle := func(i int) gpu.Device {
		return gpu.Device{Index: i, UUID: "GPU-" + string(rune('a'+i)), MemoryTotal: total, MemoryUsed: 512 << 20, MemoryFree: total - 512<<20}
	}
	devs := make([]gpu.Device, 8)
	for i := range devs {
		devs[i] = idle(i)
	}
	// GPU 2: a leftover scheduler from the OOMed launch still holds 88 GiB.
	devs[2].MemoryUsed, devs[2].MemoryFree = 88*gpu.GiB, total-88*gpu.GiB
	devs[2].Processes = []gpu.Process{{PID: 4242, Name: "python3", UsedMemory: 88 * gpu.GiB, Type: "compute"}}
	// GPU 5: memory held, no process: the context outlived its process (incident 1's after-effect).
	devs[5].MemoryUsed, devs[5].MemoryFree = 80*gpu.GiB, total-80*gpu.GiB
	// GPU 6: a small process that leaves room for the static share.
	devs[6].MemoryUsed, devs[6].MemoryFree = 2*gpu.GiB, total-2*gpu.GiB
	devs[6].Processes = []gpu.Process{{PID: 77, Name: "nvtop", UsedMemory: 1536 << 20, Type: "graphics"}}
	// GPU 7: 3 GiB used, nothing listed.
	devs[7].MemoryUsed, devs[7].MemoryFree = 3*gpu.GiB, total-3*gpu.GiB

	got := deviceFindings(devs, shape(t, sglang.CheckPerRank, "--tp", "8", "--mem-fraction-static", "0.88"))
	assertFindings(t, got, []string{
		"error " + CheckGPUMemoryHeld + " GPU 2 (GPU-c): 7.59 GiB free < --mem-fraction-static 0.88 x 95.59 GiB = 84.12 GiB; 88.00 GiB used, 1 process(es) hold 88.00 GiB (pid 4242 python3 88.00 GiB)",
		"error " + CheckGPUMemoryHeld + " GPU 5 (GPU-f): 15.59 GiB free < --mem-fraction-static 0.88 x 95.59 GiB = 84.12 GiB; 80.00 GiB used, no process is listed: a dead context",
		"warning " + CheckGPUMemoryHeld + " GPU 6 (GPU-g): 1 other process(es) hold 1.50 GiB (pid 77 nvtop 1.50 GiB)",
		"warning " + CheckGPUMemoryHeld + " GPU 7 (GPU-h): 3.00 GiB used with no process listed",
	})
	// A TP2 launch uses GPUs 0 and 1 only, which are idle.
	if got := deviceFindings(devs, shape(t, sglang.CheckPerRank, "--tp", "2")); len(got) != 0 {
		t.Errorf("tp2 on idle GPUs 0-1: %v", got)
	}
}
