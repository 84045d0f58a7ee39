package harness

import (
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	cases := []struct {
		in   string
		want Shard
		err  string
	}{
		{"1/3", Shard{1, 3}, ""},
		{"3/3", Shard{3, 3}, ""},
		{" 2 / 5 ", Shard{2, 5}, ""},
		{"0/3", Shard{}, "1 <= i <= n"},
		{"4/3", Shard{}, "1 <= i <= n"},
		{"1/0", Shard{}, "1 <= i <= n"},
		{"2", Shard{}, "write it as i/n"},
		{"a/b", Shard{}, "write it as i/n"},
		{"", Shard{}, "write it as i/n"},
	}
	for _, c := range cases {
		got, err := ParseShard(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseShard(%q) = %v, %v; want %v", c.in, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseShard(%q) error %v; want one saying %q", c.in, err, c.err)
		}
	}
}

func TestParseShardIndex(t *testing.T) {
	for in, want := range map[string]Shard{"0/3": {1, 3}, "2/3": {3, 3}, "0/1": {1, 1}} {
		if got, err := ParseShardIndex(in); err != nil || got != want {
			t.Errorf("ParseShardIndex(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, why := range map[string]string{"3/3": "0 <= k < n", "-1/3": "0 <= k < n", "1/0": "0 <= k < n", "$(JOB_COMPLETION_INDEX)/3": "write it as k/n"} {
		if _, err := ParseShardIndex(in); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("ParseShardIndex(%q) error %v; want one saying %q", in, err, why)
		}
	}
}

// Every pair of the matrix is in exactly one shard, and a shard's slice is fixed by the
// matrix alone.
func TestShardsPartitionTheMatrix(t *testing.T) {
	cases := []Case{{Name: "a"}, {Name: "b"}, {Name: "c"}, {Name: "d"}, {Name: "e"}}
	tools := []Tool{{Name: "x"}, {Name: "y"}, {Name: "z"}}
	whole := Pairs(cases, tools, Shard{})
	if len(whole) != 15 {
		t.Fatalf("whole matrix: %d pairs, want 15", len(whole))
	}
	for _, n := range []int{1, 2, 3, 4, 7, 20} {
		seen := map[int]int{}
		for i := 1; i <= n; i++ {
			ps := Pairs(cases, tools, Shard{i, n})
			if len(ps) < 15/n || len(ps) > 15/n+1 {
				t.Errorf("shard %d/%d has %d pairs; round-robin gives %d or %d", i, n, len(ps), 15/n, 15/n+1)
			}
			for _, p := range ps {
				seen[p.Index]++
				if w := whole[p.Index]; w.Case.Name != p.Case.Name || w.Tool.Name != p.Tool.Name {
					t.Errorf("shard %d/%d: pair %d is %s x %s, the matrix has %s x %s", i, n, p.Index, p.Case.Name, p.Tool.Name, w.Case.Name, w.Tool.Name)
				}
			}
		}
		for k := range whole {
			if seen[k] != 1 {
				t.Errorf("n=%d: pair %d is in %d shards", n, k, seen[k])
			}
		}
	}
}
