package sglang

import (
	"fmt"
	"strings"
	"time"
)

// Era is a band of SGLang versions with the same observable behaviour (see the reference:
// A ≤ v0.4.x, B v0.5.x after PR #8444, C 2026).
type Era uint8

const (
	EraA Era = iota + 1
	EraB
	EraC
)

func (e Era) String() string {
	switch e {
	case EraA:
		return "A"
	case EraB:
		return "B"
	case EraC:
		return "C"
	}
	return fmt.Sprintf("era(%d)", uint8(e))
}

// MarshalText writes "A", "B" or "C".
func (e Era) MarshalText() ([]byte, error) {
	if e < EraA || e > EraC {
		return nil, fmt.Errorf("sglang: invalid era %d", uint8(e))
	}
	return []byte(e.String()), nil
}

// UnmarshalText reads "A", "B" or "C" (case-insensitive).
func (e *Era) UnmarshalText(b []byte) error {
	switch strings.ToUpper(string(b)) {
	case "A":
		*e = EraA
	case "B":
		*e = EraB
	case "C":
		*e = EraC
	default:
		return fmt.Errorf("sglang: unknown era %q: use A, B or C", string(b))
	}
	return nil
}

// CGBarLabel is how the CUDA-graph capture bar is labelled.
type CGBarLabel uint8

const (
	CGBarUnlabelled CGBarLabel = iota // before 2025: "100%|██████████| 19/19 [...]"
	CGBarAvailMem                     // 2025-03/04: "Capturing batches (avail_mem=X GB): "
	CGBarBSAvailMem                   // 2025-07+: "Capturing batches (bs=N avail_mem=X GB): "
)

// Profile is everything that differs between SGLang versions, as data: the constructors read it
// to pick which fields and which wording a line has, and the fake server reads the endpoint and
// health flags. Render itself only needs it for Prefill/Decode events that do not say their
// separator.
type Profile struct {
	Name    string // short name, e.g. "C"
	Version string // the version the profile was modelled on, e.g. "0.5.9"
	Era     Era

	// Log line variants.
	TPPrefixOnSingleGPU bool     // old A: "TP0" in the header even with tp=1
	ServerArgsDict      bool     // C: server_args={'model_path': ...} instead of ServerArgs(...)
	BatchSep            string   // "." (A/B) or "," (C) after "Prefill batch"/"Decode batch"
	PrefillFields       []string // printed labels, in order
	DecodeFields        []string // printed labels, in order
	DecodeTrailingComma bool     // mid-2025: Decode lines end with ", "
	LoadEndMemUsage     bool     // ", mem usage=X GB." on Load weight end
	KVAvailableLine     bool     // "The available memory for KV cache is X GB."
	KVAllocTokens       bool     // "#tokens: N, " in the KV allocation line
	KVAllocDtype        bool     // "dtype: torch.bfloat16, " in the KV allocation line
	CGBeginAvailMem     bool     // " avail mem=X GB" after the capture-begin sentence
	CGBatchSizesLine    bool     // separate "Capture cuda graph bs [...]" line
	CGBar               CGBarLabel
	CGEndMem            bool // ". mem usage=X GB. avail mem=Y GB." after the elapsed time
	LimitsChunked       bool // chunked_prefill_size= in the limits line
	LimitsAvailMem      bool // available_gpu_mem= in the limits line
	LimitsAllRanks      bool // every rank prints the limits line (until ~mid-2025)
	SigquitTypo         bool // "Received sigquit from a child proces." (fixed ~2025-03)
	WatchdogNamed       bool // "Scheduler watchdog timeout (..., self.soft=False)" vs "Watchdog timeout (...)"
	RankDiedRuntimeErr  bool // 2026: launcher ends with "RuntimeError: Rank N scheduler died during initialization ..."

	// Endpoints and health semantics.
	WarmupInfoPath         string // "/get_model_info" (A/B) or "/model_info" (C): polled before warmup
	GetEndpointsDeprecated bool   // C: /get_model_info, /get_server_info log a deprecation line
	HealthGatedOnStatus    bool   // B/C: /health is 503 until warmup is done
	HealthEnvToggle        bool   // C: SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0 makes /health immediate
	FreezeGC               bool   // C: POST /freeze_gc after warmup
	StartupTimings         bool   // C: "Engine startup timings (s): ..."
	TeardownOnChildCrash   bool   // C: SubprocessWatchdog tears the server down when a child dies
	ServeEntrypointWarning bool   // C (newest): UserWarning recommending `sglang serve`

	// Shutdown and health behaviour. SIGTERM has its default action (exit 143 at once) until
	// the tokenizer manager's loop runs, from the first generate (the warmup's); from then on
	// SignalHandler.sigterm_handler logs "SIGTERM received. signum=None frame=None. Draining
	// requests and shutting down..." and sets gracefully_exit, and sigterm_watchdog, which
	// looks every SigtermPoll, drains: it logs the remaining requests every 5 s until none are
	// left, then kill_process_tree kills the whole tree with SIGKILL (exit 137). Read from
	// python/sglang/srt/managers/tokenizer_manager.py sigterm_watchdog and
	// python/sglang/srt/entrypoints/http_server.py health_generate at SGLang fae4e5e99
	// (v0.3.6.post3), 84022c0e5 (v0.4.6), b0d25e72c (v0.5.2), c193a52fa (~v0.5.9) and
	// 8905cbd42f4a (main 2026-07).
	SigtermPoll         time.Duration // sigterm_watchdog's sleep: 60 s (0.3.6), 5 s (0.4.6+); 0: no drain, SIGTERM exits 143 at once
	ShutdownHealth503   bool          // 0.5.2+: during the drain /health answers 503 and logs "Health check request received during shutdown. Returning 503."
	UnhealthySkipsDrain bool          // 0.5.2+: an UnHealthy server exits at the watchdog's look without draining
	DrainNamesRequests  bool          // 0.5.9+: "Gracefully exiting... Remaining number of requests N. Remaining requests remaining_rids=[...]." and "... health check failed. Force exiting."
}

// The printed Prefill/Decode labels the constructors know how to fill (see PrefillStats and
// DecodeStats). A profile may only list these.
const (
	LabelNewSeq          = "#new-seq"
	LabelNewToken        = "#new-token"
	LabelCachedToken     = "#cached-token"
	LabelCacheHitRate    = "cache hit rate"
	LabelTokenUsage      = "token usage"
	LabelRunningReq      = "#running-req"
	LabelQueueReq        = "#queue-req"
	LabelPendingToken    = "#pending-token"
	LabelCUDAGraph       = "cuda graph"
	LabelInputThroughput = "input throughput (token/s)"
	LabelToken           = "#token"
	LabelGenThroughput   = "gen throughput (token/s)"
)

var profiles = []Profile{
	{
		Name: "A-2024", Version: "0.3.6", Era: EraA,
		TPPrefixOnSingleGPU: true, BatchSep: ".",
		PrefillFields:  []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelCacheHitRate, LabelTokenUsage, LabelRunningReq, LabelQueueReq},
		DecodeFields:   []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelGenThroughput, LabelQueueReq},
		CGBar:          CGBarUnlabelled,
		SigquitTypo:    true,
		WarmupInfoPath: "/get_model_info",
		SigtermPoll:    60 * time.Second,
	},
	{
		Name: "A", Version: "0.4.6", Era: EraA,
		TPPrefixOnSingleGPU: true, BatchSep: ".",
		PrefillFields:   []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq},
		DecodeFields:    []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		LoadEndMemUsage: true, KVAllocTokens: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAllRanks: true,
		WarmupInfoPath: "/get_model_info",
		SigtermPoll:    5 * time.Second,
	},
	{
		Name: "B", Version: "0.5.2", Era: EraB,
		BatchSep:            ".",
		PrefillFields:       []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq},
		DecodeFields:        []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		DecodeTrailingComma: true,
		LoadEndMemUsage:     true, KVAvailableLine: true, KVAllocTokens: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		WatchdogNamed:       true,
		WarmupInfoPath:      "/get_model_info",
		HealthGatedOnStatus: true,
		SigtermPoll:         5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true,
	},
	{
		// The founding incidents (2026-02): input throughput before cuda graph.
		Name: "C", Version: "0.5.9", Era: EraC,
		ServerArgsDict: true, BatchSep: ",",
		PrefillFields:   []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq, LabelInputThroughput, LabelCUDAGraph},
		DecodeFields:    []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		LoadEndMemUsage: true, KVAvailableLine: true, KVAllocTokens: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		WatchdogNamed: true, RankDiedRuntimeErr: true,
		WarmupInfoPath: "/model_info", GetEndpointsDeprecated: true,
		HealthGatedOnStatus: true, HealthEnvToggle: true, FreezeGC: true, StartupTimings: true,
		TeardownOnChildCrash: true,
		SigtermPoll:          5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true, DrainNamesRequests: true,
	},
	{
		Name: "C-late", Version: "0.5.18", Era: EraC,
		ServerArgsDict: true, BatchSep: ",",
		PrefillFields:   []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq, LabelPendingToken, LabelCUDAGraph, LabelInputThroughput},
		DecodeFields:    []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		LoadEndMemUsage: true, KVAvailableLine: true, KVAllocTokens: true, KVAllocDtype: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		WatchdogNamed: true, RankDiedRuntimeErr: true,
		WarmupInfoPath: "/model_info", GetEndpointsDeprecated: true,
		HealthGatedOnStatus: true, HealthEnvToggle: true, FreezeGC: true, StartupTimings: true,
		TeardownOnChildCrash: true, ServeEntrypointWarning: true,
		SigtermPoll: 5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true, DrainNamesRequests: true,
	},
}

// Profiles lists the known profiles, oldest first. The returned slice is a copy.
func Profiles() []Profile {
	out := make([]Profile, len(profiles))
	for i, p := range profiles {
		out[i] = p.clone()
	}
	return out
}

func (p Profile) clone() Profile {
	p.PrefillFields = append([]string(nil), p.PrefillFields...)
	p.DecodeFields = append([]string(nil), p.DecodeFields...)
	return p
}

// ProfileFor returns the default profile of an era (A: 0.4.6, B: 0.5.2, C: 0.5.9). An invalid
// era gets the C profile, the current behaviour.
func ProfileFor(era Era) Profile {
	name := era.String()
	for _, p := range profiles {
		if p.Name == name {
			return p.clone()
		}
	}
	return ProfileFor(EraC)
}

// LookupProfile finds a profile by name ("A", "B", "C", "A-2024", "C-late", case-insensitive)
// or by version ("0.5.9", "v0.5.9").
func LookupProfile(name string) (Profile, error) {
	n := strings.TrimPrefix(strings.TrimSpace(name), "v")
	for _, p := range profiles {
		if strings.EqualFold(p.Name, strings.TrimSpace(name)) || p.Version == n {
			return p.clone(), nil
		}
	}
	names := make([]string, 0, 2*len(profiles))
	for _, p := range profiles {
		names = append(names, p.Name, p.Version)
	}
	return Profile{}, fmt.Errorf("sglang: unknown profile %q: use one of %s", name, strings.Join(names, ", "))
}

// SingleGPURanks is the rank prefix a profile prints on a tp=1 scheduler line: TP0 for old era A,
// nothing after that.
func (p Profile) SingleGPURanks() []Rank {
	if p.TPPrefixOnSingleGPU {
		return []Rank{{Name: "TP", N: 0}}
	}
	return nil
}

func (p Profile) batchSep() string {
	if p.BatchSep == "" {
		return ","
	}
	return p.BatchSep
}
