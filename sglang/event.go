// Package sglang models what SGLang is from the outside: its launch flags and server_args
// repr, its version profiles (eras A, B, C), its startup phases and failure signatures, its
// memory checks, and its log language, parsed into typed events and rendered back as the
// exact lines a given version prints.
package sglang

import (
	"strconv"
	"time"
)

// Kind classifies one log line.
type Kind uint8

// Line kinds. Field keys each kind carries are listed beside it; values are kept as printed
// so that rendering is exact. Kinds whose message is built only from Fields (those that list
// no Text) use Text for the message as printed when it deviates from the canonical wording
// (drift, extra trailing text, odd padding); Render prints such a Text verbatim.
const (
	KindUnknown Kind = iota // anything else; Text holds the line verbatim
	KindBlank               // empty line or a wrapper-only line

	KindServerArgs      // Text: the args repr after "server_args=" ("ServerArgs(...)" or "{...}")
	KindLaunchWarning   // the `sglang serve` recommendation UserWarning; Text: whole line
	KindDistInitBegin   // -
	KindDistInitEnd     // mem_usage
	KindLoadBegin       // avail_mem
	KindWeightsFormat   // Text: the format list, e.g. ['*.safetensors']
	KindShardProgress   // pct, done, total, elapsed, remaining, rate
	KindLoadEnd         // type, dtype, avail_mem, [mem_usage]
	KindKVDtype         // dtype
	KindKVAvailable     // avail_kv (GB)
	KindKVAlloc         // [dtype], tokens, k_size, v_size
	KindMemPoolEnd      // avail_mem
	KindCGBegin         // [avail_mem]
	KindCGBatchSizes    // Text: the list as printed, e.g. [1, 2, 4, 8]
	KindCGProgress      // [bs], avail_mem, pct, done, total, bar, elapsed, remaining, rate
	KindCGEnd           // elapsed, [mem_usage, avail_mem]
	KindLimits          // max_total_num_tokens, [chunked_prefill_size], max_prefill_tokens, max_running_requests, context_len, [available_gpu_mem]
	KindHiCacheAlloc    // size_gb
	KindHostMemError    // requested_gb, free_gb (the "Not enough host memory available" ValueError)
	KindStartupTimings  // Text: the values after "Engine startup timings (s): "
	KindUvicornStarted  // pid
	KindUvicornWaiting  // -
	KindUvicornComplete // -
	KindUvicornRunning  // scheme, host, port
	KindUvicornShutdown // Text: "Waiting for application shutdown." / "Application shutdown complete."
	KindAccess          // client (ip:port), method, path, proto, status, reason
	KindDeprecated      // old, new (endpoint names)
	KindFreezeGC        // Text: the message
	KindReady           // -
	KindPrefill         // Fields: the printed labels verbatim as keys, in printed order ("#new-seq", "#new-token", "token usage", "input throughput (token/s)", "cuda graph", ...); key "iter" first when " [N]"; Text: the separator after "batch" ("." or ",") plus anything trailing the last value
	KindDecode          // as KindPrefill ("#running-req", "#token", "token usage", "cuda graph", "gen throughput (token/s)", "#queue-req", ...); mid-2025 lines keep their trailing ", " in Text
	KindHealthFailed    // seconds, tic, last_heartbeat
	KindSchedulerExc    // Text: what follows "Scheduler hit an exception: " (usually "Traceback (most recent call last):")
	KindTracebackStart  // -
	KindTraceback       // Text: a traceback body line (frame, code, caret) verbatim
	KindException       // exc (type), Text: message
	KindSigquitChild    // -
	KindSigquitReceived // Text: the whole message
	KindSubprocessCrash // name, pid, code (era C SubprocessWatchdog)
	KindRankDead        // rank
	KindExitCode        // code
	KindWatchdog        // who, timeout, [soft]
	KindCUDAOOM         // amount, unit; Text: the whole message (exception type included)
	KindInitFailed      // Text: what follows "Initialization failed. "
	KindErrno98         // host, port
	KindNCCLError       // [exc] (e.g. RuntimeError); Text: what follows "NCCL error: "
	KindKilled          // -
	KindForeign         // source (glog, c10d, gloo, pywarn, vllm, ...); Text: the line verbatim
	KindInfo            // msg (the message's id, see infoMessages); Text: the message as printed

	numKinds
)

var kindNames = [numKinds]string{
	"unknown", "blank",
	"server_args", "launch_warning", "dist_init_begin", "dist_init_end", "load_begin", "weights_format",
	"shard_progress", "load_end", "kv_dtype", "kv_available", "kv_alloc", "mem_pool_end",
	"cg_begin", "cg_batch_sizes", "cg_progress", "cg_end", "limits", "hicache_alloc", "host_mem_error",
	"startup_timings", "uvicorn_started", "uvicorn_waiting", "uvicorn_complete", "uvicorn_running",
	"uvicorn_shutdown", "access", "deprecated", "freeze_gc", "ready", "prefill", "decode",
	"health_failed", "scheduler_exception", "traceback_start", "traceback", "exception",
	"sigquit_child", "sigquit_received", "subprocess_crash", "rank_dead", "exit_code", "watchdog",
	"cuda_oom", "init_failed", "errno98", "nccl_error", "killed", "foreign", "info",
}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// MarshalText writes the kind's stable name (used in journals, JSON and scenario files).
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name written by MarshalText.
func (k *Kind) UnmarshalText(b []byte) error {
	kk, ok := KindByName(string(b))
	if !ok {
		return &UnknownKindError{Name: string(b)}
	}
	*k = kk
	return nil
}

// KindByName looks a kind up by its stable name.
func KindByName(name string) (Kind, bool) {
	for i, n := range kindNames {
		if n == name {
			return Kind(i), true
		}
	}
	return KindUnknown, false
}

// Kinds lists every kind in declaration order.
func Kinds() []Kind {
	ks := make([]Kind, numKinds)
	for i := range ks {
		ks[i] = Kind(i)
	}
	return ks
}

// UnknownKindError reports a kind name that does not exist.
type UnknownKindError struct{ Name string }

func (e *UnknownKindError) Error() string {
	return "sglang: unknown line kind " + strconv.Quote(e.Name)
}

// Rank is one token of the header's rank prefix, e.g. TP3. Name is DP, PP, ATTN_CP, MOE_DP,
// TP or EP; tokens that are not ranks (DisaggregationMode.IGPUDECODE) keep N = -1.
type Rank struct {
	Name string
	N    int
}

func (r Rank) String() string {
	if r.N < 0 {
		return r.Name
	}
	return r.Name + strconv.Itoa(r.N)
}

// Field is one named value of a line, kept as printed.
type Field struct{ Key, Value string }

// Fields are a line's values in the order the line prints them.
type Fields []Field

// Get returns the value for key.
func (fs Fields) Get(key string) (string, bool) {
	for _, f := range fs {
		if f.Key == key {
			return f.Value, true
		}
	}
	return "", false
}

// Int returns the value for key as an int, or false when absent or not an integer.
func (fs Fields) Int(key string) (int, bool) {
	v, ok := fs.Get(key)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	return n, err == nil
}

// Float returns the value for key as a float64, or false when absent or not a number.
func (fs Fields) Float(key string) (float64, bool) {
	v, ok := fs.Get(key)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil
}

// Event is one SGLang log line, typed. Parse(Render(e, p)) == e for every kind and profile.
type Event struct {
	Kind   Kind
	Time   time.Time // header time (scenario time); zero when the line has no header
	Ranks  []Rank    // header rank tokens in printed order; nil when none
	Fields Fields    // kind-specific values (see the Kind constants)
	Text   string    // free text for kinds that carry it; the verbatim line for Unknown/Foreign
}
