package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io"
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
	data, err := readLimited(fsys, name, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return load(name, data, fsys, name)
}

// LoadOptions change how LoadFileWith resolves a scenario's recorded log.
type LoadOptions struct {
	// AllowOutsideLog lets timeline.recorded.log be a symlink, an absolute path or a path
	// with "..". Without it the log must be a regular file in the scenario's directory tree,
	// so a scenario someone shared cannot read other files on this machine.
	AllowOutsideLog bool
}

// LoadFile reads and validates a scenario file from disk.
func LoadFile(file string) (*Scenario, error) { return LoadFileWith(file, LoadOptions{}) }

// LoadFileWith is LoadFile with options.
func LoadFileWith(file string, o LoadOptions) (*Scenario, error) {
	dir := filepath.Dir(file)
	data, err := readLimited(os.DirFS(dir), filepath.Base(file), MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	var outside string
	if o.AllowOutsideLog {
		outside = dir
	}
	return loadIn(file, data, os.DirFS(dir), filepath.Base(file), outside)
}

// readLimited reads name from fsys, refusing more than limit bytes.
func readLimited(fsys fs.FS, name string, limit int) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%s is larger than the limit of %d bytes", name, limit)
	}
	return b, nil
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
