// Package gpu reads GPU hosts (the NVML inventory and /proc, /sys host facts) and models them
// (named host profiles). What a launch asks of a host is SGLang's business (sglang.LaunchShape)
// and whether a host can give it is llmwait's preflight (ready.Preflight).
//
// Units: every *GB field in this package is GiB (2^30 bytes), the unit `free -g`, nvidia-smi
// (MiB) and the incident notes use ("449 GB of RAM", "96 GB" cards). SGLang's own flags and
// messages use decimal GB (1e9); convert with the Bytes methods, never by hand.
package gpu

import (
	"fmt"
	"strconv"
	"strings"
)

// GiB is 2^30 bytes, the unit of every *GB field in this package.
const GiB = 1 << 30

// Host is what a launch's cost depends on: the scenario `host:` block, a named profile, or a
// capture of the real machine (`incident-replay gpu profile`).
type Host struct {
	GPUModel    string  `yaml:"gpu_model" json:"gpu_model"`
	GPUCount    int     `yaml:"gpu_count" json:"gpu_count"`
	GPUMemoryGB float64 `yaml:"gpu_memory_gb" json:"gpu_memory_gb"` // per GPU, GiB
	HostRAMGB   float64 `yaml:"host_ram_gb" json:"host_ram_gb"`     // MemTotal, GiB
	// MemAvailableGB is /proc/meminfo MemAvailable, what SGLang's HiCache check reads
	// (psutil.virtual_memory().available). 0 means "same as host_ram_gb" (an idle host).
	MemAvailableGB float64 `yaml:"mem_available_gb,omitempty" json:"mem_available_gb,omitempty"`
	// CgroupLimitGB is the container's memory limit; 0 means none. SGLang's check ignores it,
	// but the kernel does not: a pool that passes the check can still be OOMKilled (exit 137).
	CgroupLimitGB     float64           `yaml:"cgroup_limit_gb,omitempty" json:"cgroup_limit_gb,omitempty"`
	ComputeCapability ComputeCapability `yaml:"compute_capability" json:"compute_capability"`
}

// GPUMemoryBytes is one GPU's memory in bytes.
func (h Host) GPUMemoryBytes() int64 { return gibToBytes(h.GPUMemoryGB) }

// HostRAMBytes is MemTotal in bytes.
func (h Host) HostRAMBytes() int64 { return gibToBytes(h.HostRAMGB) }

// MemAvailableBytes is MemAvailable in bytes, defaulting to MemTotal for an idle host.
func (h Host) MemAvailableBytes() int64 {
	if h.MemAvailableGB > 0 {
		return gibToBytes(h.MemAvailableGB)
	}
	return h.HostRAMBytes()
}

// CgroupLimitBytes is the container memory limit in bytes, 0 when there is none.
func (h Host) CgroupLimitBytes() int64 { return gibToBytes(h.CgroupLimitGB) }

// Architecture names the GPU generation from the compute capability.
func (h Host) Architecture() Architecture { return h.ComputeCapability.Architecture() }

// Validate reports the first field that makes the host unusable for modelling.
func (h Host) Validate() error {
	switch {
	case h.GPUCount < 0:
		return fmt.Errorf("host: gpu_count %d is negative", h.GPUCount)
	case h.GPUCount > 0 && h.GPUMemoryGB <= 0:
		return fmt.Errorf("host: gpu_memory_gb must be > 0 when gpu_count is %d", h.GPUCount)
	case h.HostRAMGB <= 0:
		return fmt.Errorf("host: host_ram_gb must be > 0 (GiB of MemTotal, e.g. 449)")
	case h.MemAvailableGB > h.HostRAMGB:
		return fmt.Errorf("host: mem_available_gb %g exceeds host_ram_gb %g", h.MemAvailableGB, h.HostRAMGB)
	case h.MemAvailableGB < 0 || h.CgroupLimitGB < 0:
		return fmt.Errorf("host: mem_available_gb and cgroup_limit_gb must not be negative")
	}
	return nil
}

func gibToBytes(g float64) int64 { return int64(g * GiB) }

// ComputeCapability is a CUDA compute capability such as 12.0. It encodes as the string
// "12.0" so YAML and JSON keep the minor digit (a bare 12.0 float would lose it).
type ComputeCapability struct {
	Major, Minor int
}

func (c ComputeCapability) String() string { return fmt.Sprintf("%d.%d", c.Major, c.Minor) }

// IsZero reports an unknown capability.
func (c ComputeCapability) IsZero() bool { return c.Major == 0 && c.Minor == 0 }

// MarshalText writes "major.minor".
func (c ComputeCapability) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText accepts "12.0", "12", "sm_120" and "sm120".
func (c *ComputeCapability) UnmarshalText(b []byte) error {
	cc, err := ParseComputeCapability(string(b))
	if err != nil {
		return err
	}
	*c = cc
	return nil
}

// UnmarshalJSON also accepts a bare number (12.0), since hand-written JSON often has one.
func (c *ComputeCapability) UnmarshalJSON(b []byte) error {
	return c.UnmarshalText([]byte(strings.Trim(string(b), `"`)))
}

// ParseComputeCapability parses "12.0", "9", "sm_90" or "sm120" (the last digit is the minor).
func ParseComputeCapability(s string) (ComputeCapability, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if rest, ok := strings.CutPrefix(t, "sm"); ok {
		rest = strings.TrimPrefix(rest, "_")
		if len(rest) < 2 {
			return ComputeCapability{}, fmt.Errorf("compute capability %q: want sm_<major><minor>, e.g. sm_120", s)
		}
		t = rest[:len(rest)-1] + "." + rest[len(rest)-1:]
	}
	maj, min, found := strings.Cut(t, ".")
	if !found {
		min = "0"
	}
	ma, err1 := strconv.Atoi(maj)
	mi, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || ma < 0 || mi < 0 {
		return ComputeCapability{}, fmt.Errorf("compute capability %q: want major.minor, e.g. 12.0", s)
	}
	return ComputeCapability{Major: ma, Minor: mi}, nil
}
