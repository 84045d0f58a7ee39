package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is slice I of N (1-based) of a scenario x tool matrix. Pair k of the matrix, counted
// in (case, tool) order from 0, belongs to shard k mod N + 1: the assignment depends on the
// matrix alone (the scenarios and tools selected, in their order), never on timing, so N
// machines given the same flags run disjoint slices that together cover it, and neighbouring
// pairs (one scenario's tools) are spread over the shards. The zero Shard is the whole matrix.
type Shard struct{ I, N int }

// ParseShard reads "i/n" with 1 <= i <= n.
func ParseShard(s string) (Shard, error) {
	is, ns, ok := strings.Cut(s, "/")
	i, ierr := strconv.Atoi(strings.TrimSpace(is))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || ierr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("shard %q: write it as i/n, e.g. 2/3 for the second of three slices", s)
	}
	if n < 1 || i < 1 || i > n {
		return Shard{}, fmt.Errorf("shard %q: need 1 <= i <= n (shards count from 1, as in 1/3 2/3 3/3)", s)
	}
	return Shard{I: i, N: n}, nil
}

// ParseShardIndex reads "k/n" with 0 <= k < n, counting from 0 as a Kubernetes Indexed Job's
// JOB_COMPLETION_INDEX does: index k is shard k+1.
func ParseShardIndex(s string) (Shard, error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(strings.TrimSpace(ks))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	if !ok || kerr != nil || nerr != nil {
		return Shard{}, fmt.Errorf("shard index %q: write it as k/n, e.g. $(JOB_COMPLETION_INDEX)/3", s)
	}
	if n < 1 || k < 0 || k >= n {
		return Shard{}, fmt.Errorf("shard index %q: need 0 <= k < n (indexes count from 0, as in 0/3 1/3 2/3)", s)
	}
	return Shard{I: k + 1, N: n}, nil
}

// Whole reports whether the shard is the whole matrix.
func (s Shard) Whole() bool { return s.N <= 1 }

// Has reports whether pair k of the matrix belongs to the shard.
func (s Shard) Has(k int) bool { return s.Whole() || k%s.N == s.I-1 }

func (s Shard) String() string {
	if s.N == 0 {
		return "1/1"
	}
	return strconv.Itoa(s.I) + "/" + strconv.Itoa(s.N)
}

// Pair is one (case, tool) run of a matrix; Index is its place in the whole matrix.
type Pair struct {
	Index int
	Case  Case
	Tool  Tool
}

// Pairs lists the shard's pairs of the cases x tools matrix, in matrix order.
func Pairs(cases []Case, tools []Tool, s Shard) []Pair {
	var out []Pair
	for ci, c := range cases {
		for ti, t := range tools {
			if k := ci*len(tools) + ti; s.Has(k) {
				out = append(out, Pair{Index: k, Case: c, Tool: t})
			}
		}
	}
	return out
}
