package sglang

import "fmt"

// LaunchShape is what one launch asks of a host: its parsed flags plus the facts about the
// model and the SGLang build that flags do not carry. llmwait's preflight prices a launch with
// it and the replay writes the HiCache outcome (the ValueError traceback, or the host OOM) from
// it, so both read --tp, --hicache-size, --hicache-ratio and --max-total-tokens the same way.
type LaunchShape struct {
	Args ServerArgs
	// HostCheck is the build's HiCache host check; it decides fail-fast vs host OOM.
	HostCheck HostCheckRule
	// KVBytesPerToken is one rank's KV bytes per token (KVLayout.BytesPerToken), 0 when the
	// model is not known. It rounds --hicache-size to whole pages and sizes --hicache-ratio.
	KVBytesPerToken int64
	// DevicePoolTokens is one rank's device KV pool (max_total_num_tokens) when it has been
	// computed from the model; 0 falls back to --max-total-tokens, the pool's upper bound.
	DevicePoolTokens int64
	// WeightsBytesPerRank, when known, lets a preflight check that a KV pool fits at all.
	WeightsBytesPerRank int64
}

// NewLaunchShape is the shape of a launch with these flags on a build running rule.
func NewLaunchShape(a ServerArgs, rule HostCheckRule) LaunchShape {
	return LaunchShape{Args: a, HostCheck: rule}
}

// RanksPerHost is how many scheduler ranks (one GPU each) the launch puts on one node.
func (s LaunchShape) RanksPerHost() int { return s.Args.RanksPerNode() }

// MemFractionStatic is --mem-fraction-static, DefaultMemFractionStatic when not given.
func (s LaunchShape) MemFractionStatic() float64 {
	if s.Args.MemFractionStatic == nil {
		return DefaultMemFractionStatic
	}
	return *s.Args.MemFractionStatic
}

// DevicePool is one rank's device KV pool in tokens: the computed pool, else
// --max-total-tokens, else 0 (unknown).
func (s LaunchShape) DevicePool() int64 {
	if s.DevicePoolTokens > 0 {
		return s.DevicePoolTokens
	}
	if s.Args.MaxTotalTokens != nil {
		return int64(*s.Args.MaxTotalTokens)
	}
	return 0
}

// HiCacheSizing is the sizing input of one rank's HiCache host pool.
func (s LaunchShape) HiCacheSizing() HiCacheSizing {
	return HiCacheSizing{
		SizeGB: s.Args.HiCacheSize, Ratio: s.Args.HiCacheRatio,
		DevicePoolTokens: s.DevicePool(), BytesPerToken: s.KVBytesPerToken, PageSize: s.Args.PageSize,
	}
}

// HiCache sizes one rank's host pool and runs the build's host check for every rank on a
// host with memAvailable bytes available and a cgroupLimit (0: none).
func (s LaunchShape) HiCache(memAvailable, cgroupLimit int64) (HiCachePool, HostCheck, error) {
	pool, err := HiCacheBytesPerRank(s.HiCacheSizing())
	if err != nil {
		return pool, HostCheck{}, fmt.Errorf("cannot size the HiCache host pool: %w", err)
	}
	chk, err := CheckHostMemory(HostCheckInput{
		Rule: s.HostCheck, RanksPerHost: s.RanksPerHost(), RequestedPerRank: pool.Bytes,
		MemAvailable: memAvailable, CgroupLimit: cgroupLimit,
	})
	if err != nil {
		return pool, chk, fmt.Errorf("cannot check host memory: %w", err)
	}
	return pool, chk, nil
}

// HiCacheRequest names the flag that sized pool, in the flag's own unit: "--hicache-size 300
// GB", or "--hicache-ratio 2 (1.23 GB)" when no size was given.
func (s LaunchShape) HiCacheRequest(pool HiCachePool) string {
	if s.Args.HiCacheSize > 0 {
		return fmt.Sprintf("--hicache-size %d GB", s.Args.HiCacheSize)
	}
	r := s.Args.HiCacheRatio
	if r == 0 {
		r = DefaultHiCacheRatio
	}
	return fmt.Sprintf("--hicache-ratio %g (%.2f GB)", r, float64(pool.Bytes)/float64(GB))
}

// ParseHostCheckRule reads "per-rank" or "divided-per-host" (HostCheckRule.String); "" is
// per-rank, the check of builds before the divided one.
func ParseHostCheckRule(s string) (HostCheckRule, error) {
	switch s {
	case "", CheckPerRank.String():
		return CheckPerRank, nil
	case CheckDividedPerHost.String():
		return CheckDividedPerHost, nil
	}
	return 0, fmt.Errorf("unknown host check %q: use %s (builds before sglang PR #35540) or %s", s, CheckPerRank, CheckDividedPerHost)
}
