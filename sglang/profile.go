package sglang

import (
	"fmt"
	"strings"
	"time"
)

// Era is a coarse band of SGLang releases, kept as a name for a profile: A ≤ v0.4.x, B v0.5.x
// after PR #8444, C 2026. The profiles, not the eras, hold what differs.
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

// Profile is one SGLang release line as data: the line formats, routes, failure endings and
// output streams a readiness tool sees. The constructors read it to pick which fields and
// which wording a line has, the fake server reads the endpoint, health and ending flags.
// Render itself only needs it for Prefill/Decode events that do not say their separator.
type Profile struct {
	Name    string   // the release line, e.g. "0.5.9"
	Version string   // the release the record was read from, e.g. "0.5.9"
	Aliases []string // other names LookupProfile accepts: the era ("C") and older profile names
	Era     Era
	Source  Source // where in SGLang's history every field below was read

	// Log line variants.
	TPPrefixOnSingleGPU  bool     // old A: "TP0" in the header even with tp=1
	BatchSep             string   // "." (≤0.5.2) or "," (0.5.9+) after "Prefill batch"/"Decode batch"
	PrefillFields        []string // printed labels, in order
	DecodeFields         []string // printed labels, in order
	PrefillTrailingComma bool     // 0.5.2: Prefill lines end with "#queue-req: N, "
	DecodeTrailingComma  bool     // 0.5.2: Decode lines end with ", "
	DistInitElapsed      bool     // 0.5.9+: "Init torch distributed ends. elapsed=X s, mem usage=..."
	LoadEndElapsed       bool     // 0.5.9+: "Load weight end. elapsed=X s, type=..."
	LoadEndDtype         bool     // ≤0.5.9: ", dtype=torch.bfloat16" after the type (0.5.10+ prints the quantization instead, when there is one)
	LoadEndMemUsage      bool     // ", mem usage=X GB." on Load weight end
	KVDtypeLine          bool     // 0.5.9-0.5.10: "Using KV cache dtype: ..." before the pool
	KVAllocTokens        bool     // "#tokens: N, " in the KV allocation line
	KVAllocDtype         bool     // "dtype: torch.bfloat16, " in the KV allocation line
	CGBeginAvailMem      bool     // " avail mem=X GB" after the capture-begin sentence
	CGBatchSizesLine     bool     // separate "Capture cuda graph bs [...]" line
	CGBar                CGBarLabel
	CGEndMem             bool // mem usage and avail mem after the capture's elapsed time
	CGEndAvailFirst      bool // 0.4.6: ". avail mem=Y GB. mem usage=X GB." (later: mem usage first)
	CGRoleNamed          bool // 2026-07: "Capture target decode CUDA graph begin. backend=..., num_tokens_per_req=1, bs=[...], avail mem=X GB"
	LimitsChunked        bool // chunked_prefill_size= in the limits line
	LimitsAvailMem       bool // available_gpu_mem= in the limits line
	LimitsAllRanks       bool // every rank prints the limits line (until ~mid-2025)
	SigquitTypo          bool // "Received sigquit from a child proces." (fixed ~2025-03)
	WatchdogNamed        bool // "Scheduler watchdog timeout (..., self.soft=False)" (SGLang PR #15607, 2025-12-22) vs "Watchdog timeout (...)"
	RankDiedRuntimeErr   bool // 0.5.10+: launcher ends with "RuntimeError: Rank N scheduler died during initialization ..." instead of "Rank N scheduler is dead." + "Exit code: N"
	BindFailShutdownDone bool // ≤0.5.2: an errno 98 bind failure prints "Application shutdown complete." before the kill
	ServeEntrypointWarn  bool // 0.5.10+: UserWarning recommending `sglang serve`

	// Endpoints and health semantics.
	WarmupInfoPath         string // "/get_model_info" (≤0.5.2) or "/model_info" (0.5.9+): polled before warmup
	GetEndpointsDeprecated bool   // 0.5.9+: /get_model_info, /get_server_info log a deprecation line
	HealthGatedOnStatus    bool   // 0.5.2+: /health is 503 until warmup is done
	HealthEnvToggle        bool   // 0.5.9+: SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0 makes /health immediate
	FreezeGCRoute          bool   // 0.5.2+: GET and POST /freeze_gc (no release calls it itself)
	TeardownOnChildCrash   bool   // 0.5.10+: SubprocessWatchdog tears the server down when a child dies; before, a crash while running leaves a zombie

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

	// Output streams.
	StdoutKinds []Kind // the kinds printed on stdout; every other line goes to stderr
}

// Source is where a profile was read: an SGLang commit and the files (paths under the
// repository root) that print its lines and serve its routes.
type Source struct {
	Commit string // abbreviated SGLang commit hash
	Date   string // commit date, YYYY-MM-DD
	Files  []string
}

func (s Source) String() string {
	return "SGLang " + s.Commit + " (" + s.Date + ") " + strings.Join(s.Files, ", ")
}

// Stream is the process output a line is written to.
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
)

// StreamOf is where the profile's release writes a line of kind k; ok is false for
// KindForeign, the lines of other libraries (NCCL writes its warnings to stdout), whose stream
// the caller knows. SGLang's loggers use logging.basicConfig without a stream (stderr), tqdm
// and Python tracebacks write to stderr, uvicorn's "default" handler is stderr; only uvicorn's
// "access" handler writes to stdout.
func (p Profile) StreamOf(k Kind) (s Stream, ok bool) {
	if k == KindForeign {
		return Stdout, false
	}
	for _, sk := range p.StdoutKinds {
		if sk == k {
			return Stdout, true
		}
	}
	return Stderr, true
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

// accessOnStdout: uvicorn.config.LOGGING_CONFIG, which SGLang's set_uvicorn_logging_configs
// only reformats, sends the "access" handler to sys.stdout and "default" to sys.stderr.
var accessOnStdout = []Kind{KindAccess}

// The profiles, oldest first. Each field was read at the Source commit; the files named are
// python/sglang/srt/... unless they say otherwise.
var profiles = []Profile{
	{
		Name: "0.3.6", Version: "0.3.6", Aliases: []string{"A-2024"}, Era: EraA,
		Source: Source{Commit: "9a00e6f45", Date: "2024-11-22", Files: []string{
			"python/sglang/srt/model_executor/model_runner.py", "python/sglang/srt/managers/scheduler.py"}},
		TPPrefixOnSingleGPU: true, BatchSep: ".",
		PrefillFields:        []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelCacheHitRate, LabelTokenUsage, LabelRunningReq, LabelQueueReq},
		DecodeFields:         []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelGenThroughput, LabelQueueReq},
		LoadEndDtype:         true,
		CGBar:                CGBarUnlabelled,
		SigquitTypo:          true,
		BindFailShutdownDone: true,
		WarmupInfoPath:       "/get_model_info",
		StdoutKinds:          accessOnStdout,
		SigtermPoll:          60 * time.Second,
	},
	{
		Name: "0.4.6", Version: "0.4.6", Aliases: []string{"A", "0.4"}, Era: EraA,
		Source: Source{Commit: "84022c0e5", Date: "2025-04-27", Files: []string{
			"python/sglang/srt/model_executor/model_runner.py", "python/sglang/srt/model_executor/cuda_graph_runner.py",
			"python/sglang/srt/mem_cache/memory_pool.py", "python/sglang/srt/managers/scheduler.py",
			"python/sglang/srt/entrypoints/http_server.py", "python/sglang/srt/utils.py"}},
		TPPrefixOnSingleGPU: true, BatchSep: ".",
		PrefillFields: []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq},
		DecodeFields:  []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelGenThroughput, LabelQueueReq},
		LoadEndDtype:  true, LoadEndMemUsage: true, KVAllocTokens: true, CGBeginAvailMem: true,
		CGBar: CGBarAvailMem, CGEndMem: true, CGEndAvailFirst: true, LimitsChunked: true, LimitsAllRanks: true,
		BindFailShutdownDone: true,
		WarmupInfoPath:       "/get_model_info",
		StdoutKinds:          accessOnStdout,
		SigtermPoll:          5 * time.Second,
	},
	{
		Name: "0.5.2", Version: "0.5.2", Aliases: []string{"B"}, Era: EraB,
		Source: Source{Commit: "b0d25e72c", Date: "2025-09-11", Files: []string{
			"python/sglang/srt/model_executor/model_runner.py", "python/sglang/srt/model_executor/cuda_graph_runner.py",
			"python/sglang/srt/mem_cache/memory_pool.py", "python/sglang/srt/managers/scheduler_metrics_mixin.py",
			"python/sglang/srt/managers/scheduler.py", "python/sglang/srt/entrypoints/http_server.py",
			"python/sglang/srt/entrypoints/engine.py", "python/sglang/srt/utils.py"}},
		BatchSep:             ".",
		PrefillFields:        []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq},
		DecodeFields:         []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		PrefillTrailingComma: true, DecodeTrailingComma: true,
		LoadEndDtype: true, LoadEndMemUsage: true, KVAllocTokens: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		BindFailShutdownDone: true,
		WarmupInfoPath:       "/get_model_info",
		HealthGatedOnStatus:  true, FreezeGCRoute: true,
		StdoutKinds: accessOnStdout,
		SigtermPoll: 5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true,
	},
	{
		// The founding incidents (2026-02) ran this release: input throughput before cuda graph.
		Name: "0.5.9", Version: "0.5.9", Aliases: []string{"C"}, Era: EraC,
		Source: Source{Commit: "c193a52fa", Date: "2026-02-24", Files: []string{
			"python/sglang/srt/model_executor/model_runner.py", "python/sglang/srt/model_executor/cuda_graph_runner.py",
			"python/sglang/srt/mem_cache/memory_pool.py", "python/sglang/srt/managers/scheduler_metrics_mixin.py",
			"python/sglang/srt/managers/scheduler.py", "python/sglang/srt/entrypoints/http_server.py",
			"python/sglang/srt/entrypoints/engine.py", "python/sglang/srt/utils/watchdog.py", "python/sglang/srt/utils/common.py"}},
		BatchSep:        ",",
		PrefillFields:   []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq, LabelInputThroughput, LabelCUDAGraph},
		DecodeFields:    []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		DistInitElapsed: true, LoadEndElapsed: true, LoadEndDtype: true, LoadEndMemUsage: true, KVDtypeLine: true,
		KVAllocTokens: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		WatchdogNamed:  true,
		WarmupInfoPath: "/model_info", GetEndpointsDeprecated: true,
		HealthGatedOnStatus: true, HealthEnvToggle: true, FreezeGCRoute: true,
		StdoutKinds: accessOnStdout,
		SigtermPoll: 5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true, DrainNamesRequests: true,
	},
	{
		// SGLang's mirror has no release tags: this is main at the v0.5.10rc cut, the commit
		// whose version tooling first handles the v0.5.10rc tags. The 2026-03-29 changes
		// (SubprocessWatchdog, _scheduler_died_error, the launch_server warning) are in it.
		Name: "0.5.10", Version: "0.5.10", Era: EraC,
		Source: Source{Commit: "93109cc89", Date: "2026-04-05", Files: []string{
			"python/sglang/srt/model_executor/model_runner.py", "python/sglang/srt/model_executor/cuda_graph_runner.py",
			"python/sglang/srt/mem_cache/memory_pool.py", "python/sglang/srt/observability/scheduler_metrics_mixin.py",
			"python/sglang/srt/managers/scheduler.py", "python/sglang/srt/entrypoints/http_server.py",
			"python/sglang/srt/entrypoints/engine.py", "python/sglang/srt/utils/watchdog.py", "python/sglang/launch_server.py"}},
		BatchSep:        ",",
		PrefillFields:   []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq, LabelCUDAGraph, LabelInputThroughput},
		DecodeFields:    []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		DistInitElapsed: true, LoadEndElapsed: true, LoadEndMemUsage: true, KVDtypeLine: true,
		KVAllocTokens: true, CGBeginAvailMem: true, CGBatchSizesLine: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		WatchdogNamed: true, RankDiedRuntimeErr: true, ServeEntrypointWarn: true,
		WarmupInfoPath: "/model_info", GetEndpointsDeprecated: true,
		HealthGatedOnStatus: true, HealthEnvToggle: true, FreezeGCRoute: true,
		TeardownOnChildCrash: true,
		StdoutKinds:          accessOnStdout,
		SigtermPoll:          5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true, DrainNamesRequests: true,
	},
	{
		Name: "main-2026-07", Version: "0.5.15", Aliases: []string{"C-late", "main"}, Era: EraC,
		Source: Source{Commit: "8905cbd42", Date: "2026-07-20", Files: []string{
			"python/sglang/srt/model_executor/model_runner.py", "python/sglang/srt/distributed/bootstrap.py",
			"python/sglang/srt/model_executor/model_runner_components/cuda_graph_setup.py",
			"python/sglang/srt/model_executor/runner/decode_cuda_graph_runner.py",
			"python/sglang/srt/mem_cache/memory_pool.py", "python/sglang/srt/managers/scheduler_components/metrics_reporter.py",
			"python/sglang/srt/managers/scheduler.py", "python/sglang/srt/entrypoints/http_server.py",
			"python/sglang/srt/entrypoints/engine.py", "python/sglang/srt/utils/watchdog.py", "python/sglang/launch_server.py"}},
		BatchSep:        ",",
		PrefillFields:   []string{LabelNewSeq, LabelNewToken, LabelCachedToken, LabelTokenUsage, LabelRunningReq, LabelQueueReq, LabelPendingToken, LabelCUDAGraph, LabelInputThroughput},
		DecodeFields:    []string{LabelRunningReq, LabelToken, LabelTokenUsage, LabelCUDAGraph, LabelGenThroughput, LabelQueueReq},
		DistInitElapsed: true, LoadEndElapsed: true, LoadEndMemUsage: true,
		KVAllocTokens: true, KVAllocDtype: true, CGBeginAvailMem: true, CGRoleNamed: true,
		CGBar: CGBarBSAvailMem, CGEndMem: true, LimitsChunked: true, LimitsAvailMem: true,
		WatchdogNamed: true, RankDiedRuntimeErr: true, ServeEntrypointWarn: true,
		WarmupInfoPath: "/model_info", GetEndpointsDeprecated: true,
		HealthGatedOnStatus: true, HealthEnvToggle: true, FreezeGCRoute: true,
		TeardownOnChildCrash: true,
		StdoutKinds:          accessOnStdout,
		SigtermPoll:          5 * time.Second, ShutdownHealth503: true, UnhealthySkipsDrain: true, DrainNamesRequests: true,
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
	p.Aliases = append([]string(nil), p.Aliases...)
	p.PrefillFields = append([]string(nil), p.PrefillFields...)
	p.DecodeFields = append([]string(nil), p.DecodeFields...)
	p.StdoutKinds = append([]Kind(nil), p.StdoutKinds...)
	p.Source.Files = append([]string(nil), p.Source.Files...)
	return p
}

// ProfileFor returns the profile an era name stands for (A: 0.4.6, B: 0.5.2, C: 0.5.9). An
// invalid era gets the C profile, the current behaviour.
func ProfileFor(era Era) Profile {
	if era < EraA || era > EraC {
		era = EraC
	}
	p, err := LookupProfile(era.String())
	if err != nil {
		panic("sglang: no profile has alias " + era.String())
	}
	return p
}

// LookupProfile finds a profile by name ("0.5.9", "main-2026-07"), by alias ("A", "B", "C",
// "A-2024", "C-late", case-insensitive) or by version with or without a "v" ("v0.5.9").
func LookupProfile(name string) (Profile, error) {
	n := strings.TrimSpace(name)
	v := strings.TrimPrefix(strings.TrimPrefix(n, "v"), "V")
	for _, p := range profiles {
		if strings.EqualFold(p.Name, n) || p.Name == v || p.Version == v {
			return p.clone(), nil
		}
		for _, a := range p.Aliases {
			if strings.EqualFold(a, n) || a == v {
				return p.clone(), nil
			}
		}
	}
	names := make([]string, 0, 2*len(profiles))
	for _, p := range profiles {
		names = append(names, p.Name)
		names = append(names, p.Aliases...)
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
