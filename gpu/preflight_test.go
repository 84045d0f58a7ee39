package gpu

import (
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/sglang"
)

func TestPreflightHost(t *testing.T) {
	founding, err := LookupHost(FoundingHost)
	if err != nil {
		t.Fatal(err)
	}
	inContainer := founding
	inContainer.CgroupLimitGB = 256
	kimi := int64(70272) // MLA bytes per token, see sglang/memory_test.go
	tests := []struct {
		name  string
		host  Host
		shape LaunchShape
		want  []string // "severity check substring", in order; nil: no findings
	}{
		{"incident 1: 300 x 8, old check OOMs the host", founding,
			LaunchShape{TP: 8, HiCache: true, HiCacheSizeGB: 300},
			[]string{"error " + CheckHiCacheRAM + " --hicache-size 300 GB x 8 ranks = 2400 GB (2235 GiB) > 439 GiB available (449 GiB MemAvailable - 10 GiB reserve); SGLang's per-rank check passes every rank, so the ranks pin it all and the host OOMs"}},
		{"300 x 8, divided check fails fast with SGLang's numbers", founding,
			LaunchShape{TP: 8, HiCache: true, HiCacheSizeGB: 300, KVBytesPerToken: kimi, HostCheck: sglang.CheckDividedPerHost},
			[]string{"error " + CheckHiCacheRAM + " SGLang refuses at startup: Not enough host memory available. Requesting 300.00 GB but only have 58.92 GB free."}},
		{"the suggested size is the per-rank budget", founding,
			LaunchShape{TP: 8, HiCache: true, HiCacheSizeGB: 300},
			[]string{"error " + CheckHiCacheRAM + " Use --hicache-size 58 or less"}},
		{"relaunch: 48 x 8 fits", founding, LaunchShape{TP: 8, HiCache: true, HiCacheSizeGB: 48}, nil},
		{"48 x 8 in a 256 GiB container is OOMKilled", inContainer,
			LaunchShape{TP: 8, HiCache: true, HiCacheSizeGB: 48},
			[]string{"error " + CheckCgroupLimit + " 384.00 GB fits MemAvailable but not the 256.00 GiB container limit"}},
		{"tp8 x dp2 needs 16 GPUs", founding, LaunchShape{TP: 8, DP: 2},
			[]string{"error " + CheckGPUCount + " needs 16 GPUs per node; the host has 8"}},
		{"dp attention stays inside tp", founding, LaunchShape{TP: 8, DP: 8, DPAttention: true}, nil},
		{"two nodes halve the GPUs per node", founding, LaunchShape{TP: 16, NNodes: 2}, nil},
		{"weights over the static share", founding, LaunchShape{TP: 8, WeightsGBPerRank: 95, MemFractionStatic: 0.85},
			[]string{"error " + CheckGPUMemory + " Not enough memory. Please try to increase --mem-fraction-static."}},
		{"bad mem fraction", founding, LaunchShape{TP: 1, MemFractionStatic: 1.5},
			[]string{"error " + CheckGPUMemory + " --mem-fraction-static 1.5 must be between 0 and 1"}},
		{"ratio smaller than the device pool warns", founding,
			LaunchShape{TP: 8, HiCache: true, HiCacheRatio: 0.5, DevicePoolTokens: 116000, KVBytesPerToken: kimi},
			[]string{"warning " + CheckHiCacheRAM + " HiCache host pool (58001 tokens) is not larger than the device pool (116000 tokens)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Preflight(tc.host, tc.shape)
			assertFindings(t, got, tc.want)
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

func TestPreflightDevicesMemoryStillHeld(t *testing.T) {
	const total = 97887 << 20 // RTX PRO 6000 Blackwell: 97887 MiB
	idle := func(i int) Device {
		return Device{Index: i, UUID: "GPU-" + string(rune('a'+i)), MemoryTotal: total, MemoryUsed: 512 << 20, MemoryFree: total - 512<<20}
	}
	devs := make([]Device, 8)
	for i := range devs {
		devs[i] = idle(i)
	}
	// GPU 2: a leftover scheduler from the OOMed launch still holds 88 GiB.
	devs[2].MemoryUsed, devs[2].MemoryFree = 88*GiB, total-88*GiB
	devs[2].Processes = []Process{{PID: 4242, Name: "python3", UsedMemory: 88 * GiB, Type: "compute"}}
	// GPU 5: memory held, no process: the context outlived its process (incident 1's after-effect).
	devs[5].MemoryUsed, devs[5].MemoryFree = 80*GiB, total-80*GiB
	// GPU 6: a small process that leaves room for the static share.
	devs[6].MemoryUsed, devs[6].MemoryFree = 2*GiB, total-2*GiB
	devs[6].Processes = []Process{{PID: 77, Name: "nvtop", UsedMemory: 1536 << 20, Type: "graphics"}}
	// GPU 7: 3 GiB used, nothing listed.
	devs[7].MemoryUsed, devs[7].MemoryFree = 3*GiB, total-3*GiB

	got := PreflightDevices(devs, LaunchShape{TP: 8, MemFractionStatic: 0.88})
	assertFindings(t, got, []string{
		"error " + CheckGPUMemoryHeld + " GPU 2 (GPU-c): 7.59 GiB free < --mem-fraction-static 0.88 x 95.59 GiB = 84.12 GiB; 88.00 GiB used, 1 process(es) hold 88.00 GiB (pid 4242 python3 88.00 GiB)",
		"error " + CheckGPUMemoryHeld + " GPU 5 (GPU-f): 15.59 GiB free < --mem-fraction-static 0.88 x 95.59 GiB = 84.12 GiB; 80.00 GiB used, no process is listed: a dead context",
		"warning " + CheckGPUMemoryHeld + " GPU 6 (GPU-g): 1 other process(es) hold 1.50 GiB (pid 77 nvtop 1.50 GiB)",
		"warning " + CheckGPUMemoryHeld + " GPU 7 (GPU-h): 3.00 GiB used with no process listed",
	})
	// A TP2 launch uses GPUs 0 and 1 only, which are idle.
	if got := PreflightDevices(devs, LaunchShape{TP: 2}); len(got) != 0 {
		t.Errorf("tp2 on idle GPUs 0-1: %v", got)
	}
}

func TestShapeFromArgs(t *testing.T) {
	mfs := 0.88
	a := sglang.ServerArgs{TPSize: 8, DPSize: 1, PPSize: 1, NNodes: 1, MemFractionStatic: &mfs,
		EnableHierarchicalCache: true, HiCacheSize: 300, HiCacheRatio: 2}
	s := ShapeFromArgs(a, sglang.CheckPerRank)
	if s.GPUsPerHost() != 8 || !s.HiCache || s.HiCacheSizeGB != 300 || s.MemFractionStatic != 0.88 {
		t.Fatalf("shape %+v", s)
	}
	founding, _ := LookupHost(FoundingHost)
	if got := Preflight(founding, s); len(got) != 1 || got[0].Check != CheckHiCacheRAM {
		t.Errorf("founding launch: %v", got)
	}
}
