package gpu

import (
	_ "embed"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
)

//go:embed profiles.yaml
var profilesYAML []byte

// FoundingHost is the profile of the host the first two incidents ran on.
const FoundingHost = "rtx-pro-6000-x8"

var loadProfiles = sync.OnceValues(func() (map[string]Host, error) {
	var m map[string]Host
	if err := yaml.UnmarshalWithOptions(profilesYAML, &m, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("gpu: embedded profiles.yaml: %w", err)
	}
	for name, h := range m {
		if err := h.Validate(); err != nil {
			return nil, fmt.Errorf("gpu: profile %q: %w", name, err)
		}
	}
	return m, nil
})

// LookupHost returns a named host profile (see HostNames).
func LookupHost(name string) (Host, error) {
	m, err := loadProfiles()
	if err != nil {
		return Host{}, err
	}
	h, ok := m[name]
	if !ok {
		return Host{}, fmt.Errorf("gpu: no host profile %q; known: %s", name, strings.Join(HostNames(), ", "))
	}
	return h, nil
}

// HostNames lists the named profiles, sorted.
func HostNames() []string {
	m, err := loadProfiles()
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
