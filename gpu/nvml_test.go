//go:build cgo && linux

package gpu

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxb200"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// rtxPro6000 is the founding host's card. 97887 MiB is what nvidia-smi shows for the
// RTX PRO 6000 Blackwell (sold as 96 GB); CC 12.0 per NVIDIA's table.
var rtxPro6000 = gpus.Config{
	Name:         "NVIDIA RTX PRO 6000 Blackwell Server Edition",
	Architecture: nvml.DEVICE_ARCH_BLACKWELL,
	Brand:        nvml.BRAND_NVIDIA_RTX,
	MemoryMB:     97887,
	CudaMajor:    12,
	CudaMinor:    0,
}

// newRTXPro6000Host builds the 8-GPU founding host. Unlike the dgx mocks it reports idle
// memory (500 MiB used) and PCI bus ids, as a real driver does.
func newRTXPro6000Host() *server.Server {
	s := server.NewServerWithGPUs("580.95.05", "13.580.95.05", 13000, gpus.Multiple(8, rtxPro6000)...)
	for _, d := range s.Devices {
		d := d.(*server.Device)
		d.MemoryInfo = nvml.Memory{Total: d.MemoryInfo.Total, Used: 500 << 20, Free: d.MemoryInfo.Total - 500<<20}
		d.PciBusID = strings.Replace(d.PciBusID, "0000:", "00000000:", 1)
		d.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
			var p nvml.PciInfo
			for i, c := range d.PciBusID {
				p.BusId[i] = int8(c)
			}
			return p, nvml.SUCCESS
		}
	}
	return s
}

var hostFS = fstest.MapFS{
	"proc/meminfo":     file(foundingMeminfo),
	"proc/4242/comm":   file("python3\n"),
	"proc/self/cgroup": file("0::/\n"),
}

func TestInventoryFromMocks(t *testing.T) {
	tests := []struct {
		name                     string
		lib                      nvml.Interface
		model, driver, cuda, bus string
		cc                       ComputeCapability
		arch                     Architecture
		totalMiB                 uint64
	}{
		{"dgx b200", dgxb200.New(), "NVIDIA B200 180GB HBM3e", "560.28.03", "12.6", "", ComputeCapability{10, 0}, ArchBlackwell, 184320},
		{"dgx h100", dgxh100.New(), "NVIDIA H100 80GB HBM3", "550.54.15", "12.4", "", ComputeCapability{9, 0}, ArchHopper, 81920},
		{"rtx pro 6000 x8", newRTXPro6000Host(), rtxPro6000.Name, "580.95.05", "13.0", "00000000:03:00.0", ComputeCapability{12, 0}, ArchBlackwell, 97887},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := InventoryFrom(t.Context(), tc.lib, WithRoot(hostFS))
			if err != nil {
				t.Fatal(err)
			}
			if s.DriverVersion != tc.driver || s.CUDADriverVersion != tc.cuda || len(s.Devices) != 8 {
				t.Fatalf("driver %q cuda %q devices %d; want %q %q 8", s.DriverVersion, s.CUDADriverVersion, len(s.Devices), tc.driver, tc.cuda)
			}
			for i, d := range s.Devices {
				if d.Index != i || d.Name != tc.model || d.ComputeCapability != tc.cc || d.Architecture != tc.arch ||
					d.NVMLArchitecture != tc.arch || d.MemoryTotal != tc.totalMiB<<20 || !strings.HasPrefix(d.UUID, "GPU-") {
					t.Errorf("device %d: %+v", i, d)
				}
			}
			if tc.bus != "" && s.Devices[3].PCIBusID != tc.bus {
				t.Errorf("device 3 bus id %q, want %q", s.Devices[3].PCIBusID, tc.bus)
			}
			// The stock mocks lack the process queries; they become notes, not panics.
			if !strings.Contains(strings.Join(s.Notes, "\n"), "GetComputeRunningProcesses: not implemented") {
				t.Errorf("notes %q: want the missing process query recorded", s.Notes)
			}
			if s.Host.MemTotal != 449*GiB {
				t.Errorf("host MemTotal %d, want 449 GiB from the fixture", s.Host.MemTotal)
			}
		})
	}
}

func TestInventoryProfileMatchesFoundingHost(t *testing.T) {
	s, err := InventoryFrom(t.Context(), newRTXPro6000Host(), WithRoot(hostFS))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := LookupHost(FoundingHost)
	want.MemAvailableGB = 438.69 // 460000000 kB in the fixture
	if got := s.HostProfile(); got != want {
		t.Errorf("profile of the mock:\n got  %+v\n want %+v", got, want)
	}
}

func TestInventoryMemoryStillHeld(t *testing.T) {
	lib := newRTXPro6000Host()
	// After the host OOM: GPU 1 is held by a scheduler that survived, GPU 4 by a dead context.
	held := lib.Devices[1].(*server.Device)
	held.MemoryInfo.Used, held.MemoryInfo.Free = 90*GiB, held.MemoryInfo.Total-90*GiB
	for _, d := range lib.Devices {
		d := d.(*server.Device)
		procs := []nvml.ProcessInfo(nil)
		if d == held {
			procs = []nvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 90 * GiB}}
		}
		d.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return procs, nvml.SUCCESS }
		d.GetGraphicsRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED }
	}
	dead := lib.Devices[4].(*server.Device)
	dead.MemoryInfo.Used, dead.MemoryInfo.Free = 85*GiB, dead.MemoryInfo.Total-85*GiB

	s, err := InventoryFrom(t.Context(), lib, WithRoot(hostFS))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Notes) != 0 {
		t.Errorf("notes %q: every method is implemented here", s.Notes)
	}
	if p := s.Devices[1].Processes; len(p) != 1 || p[0] != (Process{PID: 4242, Name: "python3", UsedMemory: 90 * GiB, Type: "compute"}) {
		t.Errorf("GPU 1 processes %+v", p)
	}
	// What llmwait's preflight reads to name GPU 1's holder and GPU 4's dead context.
	for i, d := range s.Devices {
		used, procs := uint64(500<<20), 0
		switch i {
		case 1:
			used, procs = 90*GiB, 1
		case 4:
			used = 85 * GiB
		}
		if d.MemoryUsed != used || d.MemoryFree != d.MemoryTotal-used || len(d.Processes) != procs || d.HeldByProcesses() != uint64(procs)*90*GiB {
			t.Errorf("GPU %d: used %d free %d of %d, processes %+v; want used %d and %d process(es)", i, d.MemoryUsed, d.MemoryFree, d.MemoryTotal, d.Processes, used, procs)
		}
	}
}

func TestInventoryWithoutNVML(t *testing.T) {
	_, err := Inventory(t.Context(), WithLibraryPath("/nonexistent/libnvidia-ml.so.1"), WithRoot(hostFS))
	if !errors.Is(err, ErrNoNVML) || !strings.Contains(err.Error(), "no NVML on this host") {
		t.Fatalf("err = %v, want ErrNoNVML", err)
	}
}

func TestInventoryHonoursContext(t *testing.T) {
	lib := dgxh100.New()
	release := make(chan struct{})
	defer close(release)
	lib.InitFunc = func() nvml.Return { <-release; return nvml.SUCCESS } // a wedged driver
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := InventoryFrom(ctx, lib, WithRoot(hostFS))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v, want DeadlineExceeded promptly", err, time.Since(start))
	}
}
