package gpu

import (
	"encoding/json"
	"testing"

	"github.com/goccy/go-yaml"
)

func TestProfilesLoadAndName(t *testing.T) {
	tests := []struct {
		name     string
		count    int
		memGB    float64
		ramGB    float64
		cc       string
		wantArch Architecture
	}{
		{FoundingHost, 8, 96, 449, "12.0", ArchBlackwell},
		{"h100-x8", 8, 80, 2048, "9.0", ArchHopper},
		{"h200-x8", 8, 141, 2048, "9.0", ArchHopper},
		{"b200-x8", 8, 180, 2048, "10.0", ArchBlackwell},
		{"rtx-5090-x1", 1, 32, 128, "12.0", ArchBlackwell},
	}
	if got := len(HostNames()); got != len(tests) {
		t.Fatalf("HostNames() has %d profiles, the table %d: %v", got, len(tests), HostNames())
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := LookupHost(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if h.GPUCount != tc.count || h.GPUMemoryGB != tc.memGB || h.HostRAMGB != tc.ramGB {
				t.Errorf("got %d x %g GiB, %g GiB RAM; want %d x %g, %g", h.GPUCount, h.GPUMemoryGB, h.HostRAMGB, tc.count, tc.memGB, tc.ramGB)
			}
			if h.ComputeCapability.String() != tc.cc || h.Architecture() != tc.wantArch {
				t.Errorf("got CC %s %s, want %s %s", h.ComputeCapability, h.Architecture(), tc.cc, tc.wantArch)
			}
			if h.MemAvailableBytes() != h.HostRAMBytes() {
				t.Errorf("idle profile: MemAvailable %d != MemTotal %d", h.MemAvailableBytes(), h.HostRAMBytes())
			}
		})
	}
	if _, err := LookupHost("dgx-nope"); err == nil {
		t.Error("LookupHost(unknown) succeeded")
	}
}

func TestHostRoundTripsYAMLAndJSON(t *testing.T) {
	h, err := LookupHost(FoundingHost)
	if err != nil {
		t.Fatal(err)
	}
	h.MemAvailableGB, h.CgroupLimitGB = 440.5, 400
	y, err := yaml.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var fromYAML Host
	if err := yaml.UnmarshalWithOptions(y, &fromYAML, yaml.Strict()); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	j, _ := json.Marshal(h)
	var fromJSON Host
	if err := json.Unmarshal(j, &fromJSON); err != nil {
		t.Fatalf("%v\n%s", err, j)
	}
	if fromYAML != h || fromJSON != h {
		t.Errorf("round trip changed the host:\nyaml %+v\njson %+v\nwant %+v", fromYAML, fromJSON, h)
	}
	// Hand-written blocks put the CC unquoted; the minor digit must survive.
	var bare Host
	if err := yaml.Unmarshal([]byte("compute_capability: 10.3\n"), &bare); err != nil || bare.ComputeCapability != (ComputeCapability{10, 3}) {
		t.Errorf("unquoted 10.3 -> %v, %v", bare.ComputeCapability, err)
	}
	if err := json.Unmarshal([]byte(`{"compute_capability": 12.0}`), &bare); err != nil || bare.ComputeCapability != (ComputeCapability{12, 0}) {
		t.Errorf("JSON number 12.0 -> %v, %v", bare.ComputeCapability, err)
	}
}

func TestArchitectureByComputeCapability(t *testing.T) {
	tests := []struct {
		in   string
		want Architecture
	}{
		{"12.0", ArchBlackwell}, {"sm_120", ArchBlackwell}, {"12.1", ArchBlackwell},
		{"10.0", ArchBlackwell}, {"10.3", ArchBlackwell}, {"sm100", ArchBlackwell},
		{"9.0", ArchHopper}, {"8.9", ArchAda}, {"8.0", ArchAmpere}, {"8.6", ArchAmpere},
		{"7.5", ArchTuring}, {"7.0", ArchVolta}, {"6.1", ArchPascal}, {"2.0", ArchUnknown},
	}
	for _, tc := range tests {
		cc, err := ParseComputeCapability(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if got := cc.Architecture(); got != tc.want {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, bad := range []string{"", "x.y", "sm_", "-1.0"} {
		if _, err := ParseComputeCapability(bad); err == nil {
			t.Errorf("ParseComputeCapability(%q) succeeded", bad)
		}
	}
	if NVMLArchitectureName(10) != ArchBlackwell || NVMLArchitectureName(0xFFFFFFFF) != ArchUnknown {
		t.Error("NVML arch names wrong")
	}
}
