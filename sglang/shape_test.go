package sglang

import (
	"strings"
	"testing"
)

func TestLaunchShapeFromFlags(t *testing.T) {
	tests := []struct {
		flags   string
		ranks   int
		mfs     float64
		pool    int64 // DevicePool
		request string
	}{
		{"--tp 8 --enable-hierarchical-cache --hicache-size 300", 8, DefaultMemFractionStatic, 0, "--hicache-size 300 GB"},
		{"--tp 4 --dp 2 --mem-fraction-static 0.8 --max-total-tokens 116000", 8, 0.8, 116000, "--hicache-ratio 2 (0.00 GB)"},
		{"--tp 8 --dp 8 --enable-dp-attention --hicache-ratio 0.5", 8, DefaultMemFractionStatic, 0, "--hicache-ratio 0.5 (0.00 GB)"},
		{"--tp 16 --nnodes 2", 8, DefaultMemFractionStatic, 0, "--hicache-ratio 2 (0.00 GB)"},
	}
	for _, tc := range tests {
		a, err := ParseArgs(append([]string{"--model-path", "m"}, strings.Fields(tc.flags)...))
		if err != nil {
			t.Fatal(err)
		}
		s := NewLaunchShape(a, CheckPerRank)
		if s.RanksPerHost() != tc.ranks || s.MemFractionStatic() != tc.mfs || s.DevicePool() != tc.pool || s.HiCacheRequest(HiCachePool{}) != tc.request {
			t.Errorf("%s: ranks %d mfs %g pool %d request %q", tc.flags, s.RanksPerHost(), s.MemFractionStatic(), s.DevicePool(), s.HiCacheRequest(HiCachePool{}))
		}
	}
}

// A computed device pool wins over --max-total-tokens, its upper bound.
func TestLaunchShapeHiCache(t *testing.T) {
	a, err := ParseArgs([]string{"--model-path", "m", "--tp", "8", "--hicache-ratio", "2", "--max-total-tokens", "200000"})
	if err != nil {
		t.Fatal(err)
	}
	s := LaunchShape{Args: a, HostCheck: CheckDividedPerHost, KVBytesPerToken: 1000, DevicePoolTokens: 100000}
	pool, chk, err := s.HiCache(100*GB, 0)
	if err != nil {
		t.Fatal(err)
	}
	if pool.Tokens != 200001 || pool.Bytes != 200001*1000 || len(chk.Ranks) != 8 || chk.Rule != CheckDividedPerHost || !chk.Passed() {
		t.Errorf("pool %+v check %+v", pool, chk)
	}
	s.KVBytesPerToken = 0
	if _, _, err := s.HiCache(100*GB, 0); err == nil || !strings.Contains(err.Error(), "cannot size the HiCache host pool") {
		t.Errorf("ratio sizing without bytes per token: err %v", err)
	}
}

func TestParseHostCheckRule(t *testing.T) {
	for in, want := range map[string]HostCheckRule{"": CheckPerRank, "per-rank": CheckPerRank, "divided-per-host": CheckDividedPerHost} {
		if got, err := ParseHostCheckRule(in); err != nil || got != want {
			t.Errorf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseHostCheckRule("per-host"); err == nil || !strings.Contains(err.Error(), `unknown host check "per-host"`) {
		t.Errorf("bad rule: %v", err)
	}
}
