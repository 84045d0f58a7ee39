package gpu

import (
	"errors"
	"io/fs"
	"os"
)

// ErrNoNVML means NVML could not be used here: no libnvidia-ml.so.1 (no NVIDIA driver), or a
// binary built without cgo. Callers skip GPU work on it; errors.Is works through wrapping.
var ErrNoNVML = errors.New("no NVML on this host (libnvidia-ml.so.1 not loadable, or built without cgo)")

// Snapshot is one reading of a machine: NVML's view of the GPUs plus the host's memory facts.
type Snapshot struct {
	DriverVersion     string    `json:"driver_version"`
	CUDADriverVersion string    `json:"cuda_driver_version,omitempty"` // "12.6" from NVML's 12060
	NVMLVersion       string    `json:"nvml_version,omitempty"`
	Devices           []Device  `json:"devices"`
	Host              HostFacts `json:"host"`
	// Notes lists what could not be read (a method the driver or a mock lacks); the rest of
	// the snapshot is still valid.
	Notes []string `json:"notes,omitempty"`
}

// Device is one GPU as NVML reports it. Memory is in bytes.
type Device struct {
	Index             int               `json:"index"`
	Name              string            `json:"name"`
	UUID              string            `json:"uuid"`
	PCIBusID          string            `json:"pci_bus_id"`
	MemoryTotal       uint64            `json:"memory_total_bytes"`
	MemoryUsed        uint64            `json:"memory_used_bytes"`
	MemoryFree        uint64            `json:"memory_free_bytes"`
	ComputeCapability ComputeCapability `json:"compute_capability"`
	Architecture      Architecture      `json:"architecture"`                // from the CC
	NVMLArchitecture  Architecture      `json:"nvml_architecture,omitempty"` // what NVML says
	Processes         []Process         `json:"processes,omitempty"`
}

// Process is a process holding GPU memory.
type Process struct {
	PID        uint32 `json:"pid"`
	Name       string `json:"name,omitempty"` // /proc/<pid>/comm; empty when gone or hidden (another PID namespace)
	UsedMemory uint64 `json:"used_memory_bytes"`
	Type       string `json:"type"` // "compute" or "graphics"
}

// HeldByProcesses sums the memory the listed processes hold.
func (d Device) HeldByProcesses() uint64 {
	var n uint64
	for _, p := range d.Processes {
		n += p.UsedMemory
	}
	return n
}

// Option configures Inventory.
type Option func(*options)

type options struct {
	root        fs.FS
	libraryPath string
}

// WithRoot reads host facts (/proc, /sys, process names) from fsys instead of "/".
func WithRoot(fsys fs.FS) Option { return func(o *options) { o.root = fsys } }

// WithLibraryPath loads NVML from path instead of libnvidia-ml.so.1.
func WithLibraryPath(path string) Option { return func(o *options) { o.libraryPath = path } }

func buildOptions(opts []Option) options {
	o := options{root: os.DirFS("/")}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// HostProfile turns a snapshot into a host profile: device 0's model, memory and CC (a mixed host
// is described by its first GPU), host RAM and limits rounded to 0.01 GiB.
func (s Snapshot) HostProfile() Host {
	h := Host{
		GPUCount:       len(s.Devices),
		HostRAMGB:      round2(float64(s.Host.MemTotal) / GiB),
		MemAvailableGB: round2(float64(s.Host.MemAvailable) / GiB),
		CgroupLimitGB:  round2(float64(s.Host.CgroupLimit) / GiB),
	}
	if len(s.Devices) > 0 {
		d := s.Devices[0]
		h.GPUModel = d.Name
		// Cards are sold by whole GiB (97887 MiB reads as "96 GB"), so round to one.
		h.GPUMemoryGB = float64(int64(float64(d.MemoryTotal)/GiB + 0.5))
		h.ComputeCapability = d.ComputeCapability
	}
	return h
}

func round2(v float64) float64 { return float64(int64(v*100+0.5)) / 100 }
