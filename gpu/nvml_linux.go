//go:build cgo && linux

package gpu

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Inventory reads the GPUs through the host's NVML library and the host facts from /proc and
// /sys. Without libnvidia-ml it returns an error wrapping ErrNoNVML.
func Inventory(ctx context.Context, opts ...Option) (Snapshot, error) {
	o := buildOptions(opts)
	var libOpts []nvml.LibraryOption
	if o.libraryPath != "" {
		libOpts = append(libOpts, nvml.WithLibraryPath(o.libraryPath))
	}
	return InventoryFrom(ctx, nvml.New(libOpts...), opts...)
}

// InventoryFrom reads the GPUs through lib (a real library or a go-nvml mock). NVML calls
// cannot be interrupted, so they run on their own goroutine and a done ctx returns at once;
// a wedged driver then leaves that goroutine behind rather than hanging the caller.
func InventoryFrom(ctx context.Context, lib nvml.Interface, opts ...Option) (Snapshot, error) {
	o := buildOptions(opts)
	type result struct {
		s   Snapshot
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := readNVML(ctx, lib, o.root)
		done <- result{s, err}
	}()
	select {
	case <-ctx.Done():
		return Snapshot{}, fmt.Errorf("gpu inventory: %w (NVML did not answer; is the driver wedged?)", ctx.Err())
	case r := <-done:
		if r.err != nil {
			return r.s, r.err
		}
		host, err := ReadHostFacts(o.root)
		if err != nil {
			r.s.Notes = append(r.s.Notes, err.Error())
		}
		r.s.Host = host
		return r.s, nil
	}
}

// noLibrary are the Init results that mean "NVML is not usable here" rather than a fault.
var noLibrary = []nvml.Return{nvml.ERROR_LIBRARY_NOT_FOUND, nvml.ERROR_DRIVER_NOT_LOADED, nvml.ERROR_FUNCTION_NOT_FOUND}

func readNVML(ctx context.Context, lib nvml.Interface, root fs.FS) (s Snapshot, err error) {
	r := reader{notes: &s.Notes}
	ret := r.call("Init", func() nvml.Return { return lib.Init() })
	for _, nl := range noLibrary {
		if ret == nl {
			return s, fmt.Errorf("%w: nvmlInit: %s", ErrNoNVML, ret.Error())
		}
	}
	if ret != nvml.SUCCESS {
		return s, fmt.Errorf("gpu inventory: nvmlInit: %s (check the driver with nvidia-smi)", ret.Error())
	}
	defer r.call("Shutdown", func() nvml.Return { return lib.Shutdown() })

	r.call("SystemGetDriverVersion", func() (ret nvml.Return) { s.DriverVersion, ret = lib.SystemGetDriverVersion(); return })
	r.call("SystemGetNVMLVersion", func() (ret nvml.Return) { s.NVMLVersion, ret = lib.SystemGetNVMLVersion(); return })
	var cuda int
	if r.call("SystemGetCudaDriverVersion", func() (ret nvml.Return) { cuda, ret = lib.SystemGetCudaDriverVersion(); return }) == nvml.SUCCESS && cuda > 0 {
		s.CUDADriverVersion = fmt.Sprintf("%d.%d", cuda/1000, cuda%1000/10) // 12060 -> 12.6
	}
	var n int
	if ret := r.call("DeviceGetCount", func() (ret nvml.Return) { n, ret = lib.DeviceGetCount(); return }); ret != nvml.SUCCESS {
		return s, fmt.Errorf("gpu inventory: nvmlDeviceGetCount: %s", ret.Error())
	}
	for i := range n {
		if err := ctx.Err(); err != nil {
			return s, err
		}
		var dev nvml.Device
		if ret := r.call("DeviceGetHandleByIndex", func() (ret nvml.Return) { dev, ret = lib.DeviceGetHandleByIndex(i); return }); ret != nvml.SUCCESS {
			r.note(fmt.Sprintf("device %d: handle: %s", i, ret.Error()))
			continue
		}
		s.Devices = append(s.Devices, r.device(i, dev, root))
	}
	return s, nil
}

// reader calls NVML and turns what fails into notes. The go-nvml mocks panic on methods they
// do not implement (e.g. GetComputeRunningProcesses); that counts as NOT_SUPPORTED here.
type reader struct{ notes *[]string }

func (r reader) note(s string) { *r.notes = append(*r.notes, s) }

func (r reader) call(name string, f func() nvml.Return) (ret nvml.Return) {
	defer func() {
		if p := recover(); p != nil {
			r.note(name + ": not implemented by this NVML")
			ret = nvml.ERROR_NOT_SUPPORTED
		}
	}()
	return f()
}

func (r reader) device(i int, d nvml.Device, root fs.FS) Device {
	out := Device{Index: i}
	ok := func(what string, ret nvml.Return) bool {
		if ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
			r.note(fmt.Sprintf("device %d: %s: %s", i, what, ret.Error()))
		}
		return ret == nvml.SUCCESS
	}
	ok("name", r.call("GetName", func() (ret nvml.Return) { out.Name, ret = d.GetName(); return }))
	ok("uuid", r.call("GetUUID", func() (ret nvml.Return) { out.UUID, ret = d.GetUUID(); return }))
	var pci nvml.PciInfo
	if ok("pci info", r.call("GetPciInfo", func() (ret nvml.Return) { pci, ret = d.GetPciInfo(); return })) {
		out.PCIBusID = cString(pci.BusId[:])
	}
	var mem nvml.Memory
	if ok("memory", r.call("GetMemoryInfo", func() (ret nvml.Return) { mem, ret = d.GetMemoryInfo(); return })) {
		out.MemoryTotal, out.MemoryUsed, out.MemoryFree = mem.Total, mem.Used, mem.Free
	}
	var major, minor int
	if ok("compute capability", r.call("GetCudaComputeCapability", func() (ret nvml.Return) { major, minor, ret = d.GetCudaComputeCapability(); return })) {
		out.ComputeCapability = ComputeCapability{Major: major, Minor: minor}
	}
	out.Architecture = out.ComputeCapability.Architecture()
	var arch nvml.DeviceArchitecture
	if ok("architecture", r.call("GetArchitecture", func() (ret nvml.Return) { arch, ret = d.GetArchitecture(); return })) {
		out.NVMLArchitecture = NVMLArchitectureName(uint32(arch))
	}
	for _, kind := range []struct {
		typ, method string
		get         func() ([]nvml.ProcessInfo, nvml.Return)
	}{
		{"compute", "GetComputeRunningProcesses", d.GetComputeRunningProcesses},
		{"graphics", "GetGraphicsRunningProcesses", d.GetGraphicsRunningProcesses},
	} {
		var ps []nvml.ProcessInfo
		if !ok(kind.typ+" processes", r.call(kind.method, func() (ret nvml.Return) { ps, ret = kind.get(); return })) {
			continue
		}
		for _, p := range ps {
			used := p.UsedGpuMemory
			if used == ^uint64(0) { // NVML_VALUE_NOT_AVAILABLE (no per-process accounting, e.g. in a container)
				used = 0
			}
			out.Processes = append(out.Processes, Process{PID: p.Pid, Name: processName(root, p.Pid), UsedMemory: used, Type: kind.typ})
		}
	}
	return out
}

func processName(root fs.FS, pid uint32) string {
	b, err := fs.ReadFile(root, "proc/"+strconv.FormatUint(uint64(pid), 10)+"/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
