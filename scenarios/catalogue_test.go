package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatalogueCompilesToItsExpect compiles every embedded scenario and checks the ground
// truth its timeline implies against its own expect block, for several seeds.
func TestCatalogueCompilesToItsExpect(t *testing.T) {
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 24 {
		t.Fatalf("catalogue has %d scenarios, want at least 24", len(all))
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			for _, seed := range []int64{1, 2, 3} {
				c, err := Compile(s, seed)
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Expect.Check(c.Predict()); err != nil {
					p := c.Predict()
					t.Errorf("seed %d: %v (bound %v ready %v dead %v)", seed, err, show(p.Bound), show(p.Ready), show(p.Dead))
				}
			}
		})
	}
}

// Resolve takes a file when one exists by that name, a catalogue name otherwise, and says
// what to pass when it gets neither.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	text, err := FileText("s0-happy-era-c")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "mine.yaml")
	if err := os.WriteFile(file, text, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ arg, name, err string }{
		{arg: "s0-happy-era-c", name: "s0-happy-era-c"},
		{arg: file, name: "s0-happy-era-c"},
		{arg: "s0-happy-era-x", err: `did you mean "s0-happy-era-a"?`},
		{arg: dir, err: "is a directory"},
		{arg: "", err: "no scenario given"},
	} {
		s, err := Resolve(c.arg)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("Resolve(%q) error %v, want one containing %q", c.arg, err, c.err)
		case c.err == "" && (err != nil || s.Name != c.name):
			t.Errorf("Resolve(%q) = %v, %v; want scenario %s", c.arg, s, err, c.name)
		}
	}
}
