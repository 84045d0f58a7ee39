package sglang

import (
	"errors"
	"testing"
)

// The founding incident (incidents.md): Kimi-K2.5, TP8 on 8 RTX PRO 6000 with 449 GiB of RAM.
// Kimi's MLA KV is (kv_lora_rank 512 + qk_rope_head_dim 64) × 61 layers × bf16 per token.
var (
	kimiKV        = KVLayout{MLA: true, KVLoraRank: 512, QKRopeHeadDim: 64, Layers: 61, DTypeBytes: 2}
	foundingAvail = 449 * GiB
)

func TestKVLayoutBytesPerToken(t *testing.T) {
	tests := []struct {
		name string
		l    KVLayout
		want int64
	}{
		{"kimi MLA bf16, replicated per rank", kimiKV, 70272},
		// Llama-3-8B: 32 layers, 8 KV heads × 128, bf16: 2×128×8×32×2 = 131072 on one GPU.
		{"llama3-8b tp1", KVLayout{Layers: 32, KVHeads: 8, HeadDim: 128, TP: 1, DTypeBytes: 2}, 131072},
		{"llama3-8b tp2 splits heads", KVLayout{Layers: 32, KVHeads: 8, HeadDim: 128, TP: 2, DTypeBytes: 2}, 65536},
		{"tp beyond kv heads replicates one", KVLayout{Layers: 32, KVHeads: 8, HeadDim: 128, TP: 16, DTypeBytes: 2}, 16384},
	}
	for _, tc := range tests {
		if got := tc.l.BytesPerToken(); got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestHiCacheBytesPerRank(t *testing.T) {
	tests := []struct {
		name      string
		in        HiCacheSizing
		wantTok   int64
		wantBytes int64
		smaller   bool
	}{
		// 300e9 // 70272 = 4269125 tokens, +1 page = 4269126, × 70272 bytes.
		{"300 GB rounds up a page", HiCacheSizing{SizeGB: 300, BytesPerToken: 70272}, 4269126, 300000022272, false},
		{"48 GB", HiCacheSizing{SizeGB: 48, BytesPerToken: 70272}, 683061, 48000062592, false},
		// page 64: 4269125 // 64 = 66705 pages, +1 = 66706 × 64 tokens.
		{"page size 64", HiCacheSizing{SizeGB: 300, BytesPerToken: 70272, PageSize: 64}, 4269184, 4269184 * 70272, false},
		{"size without layout is exact GB", HiCacheSizing{SizeGB: 300}, 0, 300 * GB, false},
		{"default ratio 2", HiCacheSizing{DevicePoolTokens: 116000, BytesPerToken: 70272}, 232001, 232001 * 70272, false},
		{"ratio 0.5 is smaller than device", HiCacheSizing{Ratio: 0.5, DevicePoolTokens: 116000, BytesPerToken: 70272}, 58001, 58001 * 70272, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := HiCacheBytesPerRank(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if got.Tokens != tc.wantTok || got.Bytes != tc.wantBytes || got.SmallerThanDevice != tc.smaller {
				t.Errorf("got %+v, want tokens %d bytes %d smaller %v", got, tc.wantTok, tc.wantBytes, tc.smaller)
			}
		})
	}
	if _, err := HiCacheBytesPerRank(HiCacheSizing{Ratio: 2}); err == nil {
		t.Error("ratio sizing without a device pool succeeded")
	}
}

func TestHiCacheHostCheckFoundingIncident(t *testing.T) {
	pool := func(gb int) int64 {
		p, err := HiCacheBytesPerRank(HiCacheSizing{SizeGB: gb, BytesPerToken: kimiKV.BytesPerToken()})
		if err != nil {
			t.Fatal(err)
		}
		return p.Bytes
	}
	tests := []struct {
		name     string
		rule     HostCheckRule
		gb       int
		pass     bool // SGLang's own check, every rank
		hostOOM  bool
		fits     bool
		wantMsg  string
		wantAval int64
	}{
		// Old check: each rank's 300 GB is under 471.37 GB (449 GiB − 10 GiB), so all 8 pass
		// and pin 2400 GB on a 482 GB host: the host OOM of incident 1.
		{"old 300x8 passes each rank, sum OOMs", CheckPerRank, 300, true, true, false, "", 471372660736},
		{"old 48x8 fits with the reserve", CheckPerRank, 48, true, false, true, "", 471372660736},
		// PR #35540: 471.37 GB // 8 = 58.92 GB per rank; 300 fails fast on every rank.
		{"new 300x8 fails fast", CheckDividedPerHost, 300, false, false, false,
			"Not enough host memory available. Requesting 300.00 GB but only have 58.92 GB free. Please reduce the size of the hierarchical cache.",
			58921582592},
		{"new 48x8 fits", CheckDividedPerHost, 48, true, false, true, "", 58921582592},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CheckHostMemory(HostCheckInput{Rule: tc.rule, RanksPerHost: 8, RequestedPerRank: pool(tc.gb), MemAvailable: foundingAvail})
			if err != nil {
				t.Fatal(err)
			}
			if got.Passed() != tc.pass || got.HostOOM != tc.hostOOM || got.Fits() != tc.fits || got.FailFast() == tc.pass {
				t.Errorf("passed=%v oom=%v fits=%v; want %v %v %v", got.Passed(), got.HostOOM, got.Fits(), tc.pass, tc.hostOOM, tc.fits)
			}
			if len(got.Ranks) != 8 {
				t.Fatalf("%d rank results, want 8", len(got.Ranks))
			}
			for _, r := range got.Ranks {
				if r.Pass != tc.pass || r.Available != tc.wantAval || r.Message != tc.wantMsg {
					t.Errorf("rank %d: pass=%v avail=%d msg=%q", r.Rank, r.Pass, r.Available, r.Message)
				}
			}
			if got.TotalRequested != 8*pool(tc.gb) {
				t.Errorf("total %d, want %d", got.TotalRequested, 8*pool(tc.gb))
			}
		})
	}
}

func TestHiCacheHostCheckCgroupLimit(t *testing.T) {
	// psutil reads the host's MemAvailable, so a container with a 256 GiB limit passes the
	// old check with 48 × 8 = 384 GB and is then OOMKilled.
	got, err := CheckHostMemory(HostCheckInput{RanksPerHost: 8, RequestedPerRank: 48 * GB, MemAvailable: foundingAvail, CgroupLimit: 256 * GiB})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Passed() || !got.HostOOM || got.Limit != 256*GiB {
		t.Errorf("passed=%v oom=%v limit=%d; want pass, OOM against the cgroup limit", got.Passed(), got.HostOOM, got.Limit)
	}
	if _, err := CheckHostMemory(HostCheckInput{RanksPerHost: 0, MemAvailable: 1}); err == nil {
		t.Error("zero ranks accepted")
	}
}

func TestKVPoolSize(t *testing.T) {
	gib := func(g float64) int64 { return int64(g * float64(GiB)) }
	tests := []struct {
		name    string
		in      KVPoolInput
		want    int64
		wantErr error
	}{
		// 80 GiB × 0.88 = 70.4 GiB static, minus 16 GiB of weights = 54.4 GiB of KV at 131072
		// bytes/token (Llama-3-8B) = 445644 tokens.
		{"h100 llama3-8b", KVPoolInput{GPUFreeBytes: gib(80), WeightsBytes: gib(16), MemFractionStatic: 0.88, BytesPerToken: 131072}, 445644, nil},
		{"default fraction 0.9", KVPoolInput{GPUFreeBytes: gib(80), WeightsBytes: gib(16), BytesPerToken: 131072}, 458752, nil},
		// Another process holds 70 GiB: 10 GiB free × 0.88 < 16 GiB of weights.
		{"memory still held", KVPoolInput{GPUFreeBytes: gib(10), WeightsBytes: gib(16), MemFractionStatic: 0.88, BytesPerToken: 131072}, 0, ErrKVPoolDoesNotFit},
	}
	for _, tc := range tests {
		got, err := KVPoolSize(tc.in)
		if !errors.Is(err, tc.wantErr) || got.Tokens != tc.want {
			t.Errorf("%s: got %d tokens, err %v; want %d, %v", tc.name, got.Tokens, err, tc.want, tc.wantErr)
		}
		if err == nil && got.Bytes != got.Tokens*tc.in.BytesPerToken {
			t.Errorf("%s: bytes %d != tokens × cell", tc.name, got.Bytes)
		}
	}
	if _, err := KVPoolSize(KVPoolInput{GPUFreeBytes: 1, MemFractionStatic: 1.2, BytesPerToken: 1}); err == nil {
		t.Error("mem-fraction-static 1.2 accepted")
	}
}
