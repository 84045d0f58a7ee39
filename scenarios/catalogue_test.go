package scenarios

import (
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
