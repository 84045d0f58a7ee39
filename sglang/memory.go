package sglang

import (
	"errors"
	"fmt"
)

// The memory model: how much GPU memory the KV pool gets and how much pinned host memory the
// hierarchical cache (HiCache) asks for, per rank, and whether the host can give it. Pure
// functions over plain byte counts, so scenarios, the fake server and llmwait's preflight all
// price a launch the same way. Source: SGLang's memory_pool_host.py
// (HostKVCache.__init__, model_runner.profile_max_num_token) unless noted.

// Byte units as SGLang uses them: flags and log lines count decimal GB, the reserve is GiB.
const (
	GB  int64 = 1_000_000_000 // --hicache-size "1GB = 1e9 bytes" (HiCache design doc)
	GiB int64 = 1 << 30
)

// HiCacheReserve is the host memory SGLang keeps free when sizing the HiCache pool:
// `psutil.virtual_memory().available - 10 * 1024**3` (memory_pool_host.py; later named
// HICACHE_HOST_MEMORY_RESERVE_BYTES).
const HiCacheReserve = 10 * GiB

// DefaultHiCacheRatio is --hicache-ratio's default (server_args.py argparse, 2.0): the host
// pool is twice the device pool, in tokens, when --hicache-size is 0.
const DefaultHiCacheRatio = 2.0

// DefaultMemFractionStatic is the value the server_arguments doc text gives for
// --mem-fraction-static. Real builds auto-tune it by GPU memory and TP (PR #5893 reserves
// ~18 GB on H200), so pass the value from the log's server_args when you have it.
const DefaultMemFractionStatic = 0.9

// ErrKVPoolDoesNotFit is SGLang's RuntimeError when weights leave no room for a KV pool
// (model_runner.init_memory_pool).
var ErrKVPoolDoesNotFit = errors.New("Not enough memory. Please try to increase --mem-fraction-static.")

// KVLayout describes a model's KV cache per token, to compute size_per_token.
type KVLayout struct {
	Layers     int
	DTypeBytes int // 2 for bf16/fp16, 1 for fp8
	// MHA/GQA: K and V of KVHeads×HeadDim per layer, heads split across TP ranks.
	KVHeads, HeadDim, TP int
	// MLA (DeepSeek, Kimi): one latent of KVLoraRank+QKRopeHeadDim per layer, replicated on
	// every rank.
	MLA                       bool
	KVLoraRank, QKRopeHeadDim int
}

// BytesPerToken is one token's KV bytes on one rank: MHA head_dim × heads × layers × dtype × 2
// (K and V; memory_pool_host get_size_per_token), MLA (kv_lora_rank + qk_rope_head_dim) ×
// layers × dtype. KV heads are replicated when TP exceeds them, so a rank holds at least one.
func (l KVLayout) BytesPerToken() int64 {
	if l.MLA {
		return int64(l.KVLoraRank+l.QKRopeHeadDim) * int64(l.Layers) * int64(l.DTypeBytes)
	}
	heads := l.KVHeads
	if l.TP > 1 {
		heads = max(1, l.KVHeads/l.TP)
	}
	return 2 * int64(l.HeadDim) * int64(heads) * int64(l.Layers) * int64(l.DTypeBytes)
}

// KVPoolInput is one rank's GPU at KV-pool sizing time.
type KVPoolInput struct {
	// GPUFreeBytes is the GPU's free memory before weights load; SGLang sizes against this
	// (min_per_gpu_memory), so memory held by other processes shrinks the pool.
	GPUFreeBytes      int64
	WeightsBytes      int64   // this rank's weights
	MemFractionStatic float64 // 0 means DefaultMemFractionStatic
	BytesPerToken     int64   // KVLayout.BytesPerToken
}

// KVPool is the device KV pool one rank allocates (max_total_num_tokens).
type KVPool struct {
	Tokens int64
	Bytes  int64
}

// KVPoolSize follows profile_max_num_token: rest = free_after_weights − free × (1 − mfs),
// i.e. free × mfs − weights, divided by the per-token cell size.
func KVPoolSize(in KVPoolInput) (KVPool, error) {
	mfs := in.MemFractionStatic
	if mfs == 0 {
		mfs = DefaultMemFractionStatic
	}
	if mfs <= 0 || mfs >= 1 || in.GPUFreeBytes <= 0 || in.BytesPerToken <= 0 || in.WeightsBytes < 0 {
		return KVPool{}, fmt.Errorf("kv pool: need 0 < mem-fraction-static < 1, GPU free bytes > 0 and bytes per token > 0 (got %g, %d, %d)",
			mfs, in.GPUFreeBytes, in.BytesPerToken)
	}
	rest := int64(float64(in.GPUFreeBytes)*mfs) - in.WeightsBytes
	tokens := rest / in.BytesPerToken
	if rest <= 0 || tokens <= 0 {
		return KVPool{}, fmt.Errorf("kv pool: weights %.2f GB exceed the static share %.2f GB (%.2f × %.2f GB free): %w",
			float64(in.WeightsBytes)/float64(GB), float64(in.GPUFreeBytes)*mfs/float64(GB), mfs,
			float64(in.GPUFreeBytes)/float64(GB), ErrKVPoolDoesNotFit)
	}
	return KVPool{Tokens: tokens, Bytes: tokens * in.BytesPerToken}, nil
}

// HiCacheSizing is one rank's HiCache flags and device pool.
type HiCacheSizing struct {
	SizeGB           int     // --hicache-size, decimal GB per rank; overrides Ratio when > 0
	Ratio            float64 // --hicache-ratio; 0 means DefaultHiCacheRatio
	DevicePoolTokens int64   // this rank's device pool (max_total_num_tokens); needed for Ratio
	// BytesPerToken is the host pool's per-token size. With SizeGB it may be 0: the result is
	// then SizeGB × 1e9 exactly, missing only the sub-page rounding.
	BytesPerToken int64
	PageSize      int // --page-size; 0 means 1
}

// HiCachePool is what one rank asks the host for.
type HiCachePool struct {
	Tokens int64
	Bytes  int64 // requested_bytes in SGLang's check
	// SmallerThanDevice is the `assert size > device_pool.size` condition (a warning in newer
	// builds: "HiCache host KV pool ... is smaller than the device pool").
	SmallerThanDevice bool
}

// HiCacheBytesPerRank sizes one rank's host pool: size = GB × 1e9 // bytes_per_token (or
// device tokens × ratio), then page_num = size // page_size + 1, so it rounds up and adds a page.
func HiCacheBytesPerRank(s HiCacheSizing) (HiCachePool, error) {
	page := int64(max(s.PageSize, 1))
	if s.SizeGB < 0 || s.Ratio < 0 || s.BytesPerToken < 0 || s.DevicePoolTokens < 0 {
		return HiCachePool{}, fmt.Errorf("hicache: sizes must not be negative: %+v", s)
	}
	var tokens int64
	switch {
	case s.SizeGB > 0 && s.BytesPerToken == 0:
		return HiCachePool{Bytes: int64(s.SizeGB) * GB}, nil
	case s.SizeGB > 0:
		tokens = int64(s.SizeGB) * GB / s.BytesPerToken
	default:
		ratio := s.Ratio
		if ratio == 0 {
			ratio = DefaultHiCacheRatio
		}
		if s.DevicePoolTokens == 0 || s.BytesPerToken == 0 {
			return HiCachePool{}, errors.New("hicache: --hicache-ratio sizing needs the device pool tokens and bytes per token; pass --hicache-size to size by GB")
		}
		tokens = int64(float64(s.DevicePoolTokens) * ratio)
	}
	tokens = (tokens/page + 1) * page
	return HiCachePool{
		Tokens:            tokens,
		Bytes:             tokens * s.BytesPerToken,
		SmallerThanDevice: s.DevicePoolTokens > 0 && tokens <= s.DevicePoolTokens,
	}, nil
}

// HostCheckRule is which form of SGLang's host-memory check a build runs.
type HostCheckRule int

const (
	// CheckPerRank is the check before PR #35540 (merged 2026-08-19): each rank compares its
	// own pool with machine-wide MemAvailable − 10 GiB, so TP ranks together oversubscribe.
	CheckPerRank HostCheckRule = iota
	// CheckDividedPerHost is PR #35540's: (MemAvailable − 10 GiB) // ranks_per_host per rank.
	CheckDividedPerHost
)

func (r HostCheckRule) String() string {
	if r == CheckDividedPerHost {
		return "divided-per-host"
	}
	return "per-rank"
}

// HostCheckInput is a host and the pools its ranks ask for.
type HostCheckInput struct {
	Rule             HostCheckRule
	RanksPerHost     int   // world_size // nnodes (tp × pp on one node)
	RequestedPerRank int64 // HiCachePool.Bytes
	MemAvailable     int64 // /proc/meminfo MemAvailable, what psutil reads
	// CgroupLimit is the container memory limit (0: none). psutil ignores it; the kernel's
	// OOM killer does not.
	CgroupLimit int64
}

// RankCheck is one rank's verdict.
type RankCheck struct {
	Rank      int
	Requested int64
	Available int64 // available_bytes as that rank computed it
	Pass      bool
	Message   string // SGLang's ValueError text when !Pass
}

// HostCheck is the outcome on the whole host.
type HostCheck struct {
	Rule  HostCheckRule
	Ranks []RankCheck
	// TotalRequested is the sum over all ranks; Pinned the sum over ranks that passed, which
	// is what actually gets pinned.
	TotalRequested, Pinned int64
	// Limit is what the pinned pools must fit in: MemAvailable, or the cgroup limit if lower.
	Limit int64
	// HostOOM: the ranks that passed pin more than Limit, so the OOM killer ends the launch
	// (no traceback; "Rank 0 scheduler is dead", exit 1, or a container OOMKill, 137).
	HostOOM bool
}

// Passed reports whether every rank passed SGLang's own check.
func (h HostCheck) Passed() bool {
	for _, r := range h.Ranks {
		if !r.Pass {
			return false
		}
	}
	return true
}

// FailFast reports the good failure: the check refuses, nothing is pinned, the scheduler raises.
func (h HostCheck) FailFast() bool { return !h.Passed() }

// Fits reports whether the launch's HiCache gets through both SGLang and the kernel.
func (h HostCheck) Fits() bool { return h.Passed() && !h.HostOOM }

// NotEnoughHostMemoryMessage is SGLang's exact ValueError text (memory_pool_host.py).
func NotEnoughHostMemoryMessage(requested, available int64) string {
	return fmt.Sprintf("Not enough host memory available. Requesting %.2f GB but only have %.2f GB free. Please reduce the size of the hierarchical cache.",
		float64(requested)/float64(GB), float64(available)/float64(GB))
}

// AllocatingMessage is the line each passing rank logs.
func AllocatingMessage(requested int64) string {
	return fmt.Sprintf("Allocating %.2f GB host memory for hierarchical KV cache.", float64(requested)/float64(GB))
}

// CheckHostMemory runs SGLang's host check for every rank on one host. The ranks run it at
// the same moment (they start together), so under CheckPerRank each sees the same
// MemAvailable; a late rank seeing less (issue #38156) is not modelled.
func CheckHostMemory(in HostCheckInput) (HostCheck, error) {
	if in.RanksPerHost <= 0 || in.MemAvailable <= 0 || in.RequestedPerRank < 0 || in.CgroupLimit < 0 {
		return HostCheck{}, fmt.Errorf("host check: need ranks per host > 0 and MemAvailable > 0 (got %d ranks, %d bytes)",
			in.RanksPerHost, in.MemAvailable)
	}
	avail := in.MemAvailable - HiCacheReserve
	if in.Rule == CheckDividedPerHost {
		avail /= int64(in.RanksPerHost) // integer division as in host_memory_budget_bytes()
	}
	out := HostCheck{Rule: in.Rule, Limit: in.MemAvailable}
	if in.CgroupLimit > 0 && in.CgroupLimit < out.Limit {
		out.Limit = in.CgroupLimit
	}
	for r := range in.RanksPerHost {
		rc := RankCheck{Rank: r, Requested: in.RequestedPerRank, Available: avail, Pass: in.RequestedPerRank <= avail}
		if !rc.Pass {
			rc.Message = NotEnoughHostMemoryMessage(rc.Requested, rc.Available)
		} else {
			out.Pinned += rc.Requested
		}
		out.TotalRequested += rc.Requested
		out.Ranks = append(out.Ranks, rc)
	}
	out.HostOOM = out.Pinned > out.Limit
	return out, nil
}
