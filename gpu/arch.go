package gpu

// Architecture is a GPU generation name ("Blackwell", "Hopper", ...).
type Architecture string

// Architectures the harness distinguishes. Decisions key on the compute capability, not on
// NVML's DEVICE_ARCH value: whether RTX 50xx / RTX PRO parts report DEVICE_ARCH_BLACKWELL is
// unverified, while the CC table is NVIDIA's own.
const (
	ArchUnknown   Architecture = "Unknown"
	ArchKepler    Architecture = "Kepler"
	ArchMaxwell   Architecture = "Maxwell"
	ArchPascal    Architecture = "Pascal"
	ArchVolta     Architecture = "Volta"
	ArchTuring    Architecture = "Turing"
	ArchAmpere    Architecture = "Ampere"
	ArchAda       Architecture = "Ada Lovelace"
	ArchHopper    Architecture = "Hopper"
	ArchBlackwell Architecture = "Blackwell"
	ArchRubin     Architecture = "Rubin"
)

// Architecture maps a compute capability to its generation, per NVIDIA's CUDA GPU table
// (developer.nvidia.com/cuda-gpus): Blackwell is 10.x (B200 10.0, B300 10.3),
// 11.0 (Jetson Thor) and 12.x (RTX PRO 6000 / RTX 50xx 12.0, GB10 12.1); Hopper 9.0;
// Ada 8.9; Ampere 8.0/8.6/8.7; Turing 7.5; Volta 7.0/7.2.
func (c ComputeCapability) Architecture() Architecture {
	switch {
	case c.Major >= 10 && c.Major <= 12:
		return ArchBlackwell
	case c.Major == 9:
		return ArchHopper
	case c.Major == 8 && c.Minor == 9:
		return ArchAda
	case c.Major == 8:
		return ArchAmpere
	case c.Major == 7 && c.Minor >= 5:
		return ArchTuring
	case c.Major == 7:
		return ArchVolta
	case c.Major == 6:
		return ArchPascal
	case c.Major == 5:
		return ArchMaxwell
	case c.Major == 3:
		return ArchKepler
	}
	return ArchUnknown
}

// nvmlArchNames maps NVML's nvmlDeviceArchitecture_t values (which have no String method) to
// names; used only to report what NVML said next to the CC-derived name.
var nvmlArchNames = map[uint32]Architecture{
	2: ArchKepler, 3: ArchMaxwell, 4: ArchPascal, 5: ArchVolta, 6: ArchTuring,
	7: ArchAmpere, 8: ArchAda, 9: ArchHopper, 10: ArchBlackwell, 13: ArchRubin,
}

// NVMLArchitectureName names an NVML DEVICE_ARCH value, ArchUnknown for values it does not know.
func NVMLArchitectureName(v uint32) Architecture {
	if a, ok := nvmlArchNames[v]; ok {
		return a
	}
	return ArchUnknown
}
