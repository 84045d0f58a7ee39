package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

//go:embed catalogue
var catalogueFS embed.FS

// LoadFS reads and validates the scenario at name inside fsys; a recorded log is read from
// the same directory of fsys.
func LoadFS(fsys fs.FS, name string) (*Scenario, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return load(name, data, fsys, name)
}

// LoadFile reads and validates a scenario file from disk.
func LoadFile(file string) (*Scenario, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return load(file, data, os.DirFS(filepath.Dir(file)), filepath.Base(file))
}

var loadCatalogue = sync.OnceValues(func() (map[string]*Scenario, error) {
	entries, err := fs.ReadDir(catalogueFS, "catalogue")
	if err != nil {
		return nil, err
	}
	out := map[string]*Scenario{}
	var errs []error
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		s, err := LoadFS(catalogueFS, path.Join("catalogue", e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if want := strings.TrimSuffix(e.Name(), ".yaml"); s.Name != want {
			errs = append(errs, fmt.Errorf("catalogue/%s: name %q must match the file name %q", e.Name(), s.Name, want))
			continue
		}
		out[s.Name] = s
	}
	return out, errors.Join(errs...)
})

// Catalogue returns every embedded scenario, sorted by name. An error means a catalogue
// file is broken (a build defect, caught by the package tests).
func Catalogue() ([]*Scenario, error) {
	m, err := loadCatalogue()
	if err != nil {
		return nil, err
	}
	out := make([]*Scenario, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Scenario) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Resolve reads nameOrPath as a scenario file when a file of that name exists, and looks it
// up in the embedded catalogue otherwise.
func Resolve(nameOrPath string) (*Scenario, error) {
	if nameOrPath == "" {
		return nil, errors.New("no scenario given; pass a catalogue name (incident-replay scenarios list) or a scenario file")
	}
	st, err := os.Stat(nameOrPath)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("scenario %s is a directory; pass a scenario file or a catalogue name", nameOrPath)
	case err == nil:
		return LoadFile(nameOrPath)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("scenario file: %w", err)
	}
	return Lookup(nameOrPath)
}

// Lookup returns the embedded scenario called name.
func Lookup(name string) (*Scenario, error) {
	m, err := loadCatalogue()
	if err != nil {
		return nil, err
	}
	s, ok := m[name]
	if !ok {
		names := make([]string, 0, len(m))
		for n := range m {
			names = append(names, n)
		}
		slices.Sort(names)
		hint := ""
		best, bestD := "", 4
		for _, n := range names {
			if d := editDistance(name, n); d < bestD {
				best, bestD = n, d
			}
		}
		if best != "" {
			hint = fmt.Sprintf(" (did you mean %q?)", best)
		}
		return nil, fmt.Errorf("no catalogue scenario %q%s; run `incident-replay scenarios list`", name, hint)
	}
	return s, nil
}

// FileText returns the catalogue file text of the scenario called name.
func FileText(name string) ([]byte, error) {
	if _, err := Lookup(name); err != nil {
		return nil, err
	}
	return fs.ReadFile(catalogueFS, path.Join("catalogue", name+".yaml"))
}
