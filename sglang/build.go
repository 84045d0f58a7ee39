package sglang

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Constructors build events with the fields and wording a profile prints, so a startup model
// never needs to know line formats. They leave Time and Ranks zero: the caller (a timeline)
// stamps them. GB values print with two decimals, as SGLang does.

func gb(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func ev(k Kind, kv ...string) Event {
	e := Event{Kind: k}
	if len(kv) > 0 {
		e.Fields = make(Fields, 0, len(kv)/2)
		for i := 0; i+1 < len(kv); i += 2 {
			e.Fields = append(e.Fields, Field{kv[i], kv[i+1]})
		}
	}
	return e
}

// ServerArgsLine is the launcher's "server_args=ServerArgs(...)" line: every release logs
// f"{server_args=}" of the ServerArgs dataclass (SGLang 8905cbd42
// python/sglang/srt/entrypoints/engine.py), so the dataclass repr is the only form.
func ServerArgsLine(a ServerArgs) Event {
	return Event{Kind: KindServerArgs, Text: a.Repr(false)}
}

// ServeWarning is the newest launcher's UserWarning on stderr (no header).
func ServeWarning(pythonFile string, line int) Event {
	return Event{Kind: KindLaunchWarning, Text: fmt.Sprintf("%s:%d: UserWarning: %s", pythonFile, line, msgServeWarning)}
}

// DistInitBegin is "Init torch distributed begin.".
func DistInitBegin() Event { return ev(KindDistInitBegin) }

// DistInitEnd is "Init torch distributed ends. [elapsed=X s, ]mem usage=Y GB".
func DistInitEnd(p Profile, elapsed time.Duration, memUsageGB float64) Event {
	if p.DistInitElapsed {
		return ev(KindDistInitEnd, "elapsed", gb(elapsed.Seconds()), "mem_usage", gb(memUsageGB))
	}
	return ev(KindDistInitEnd, "mem_usage", gb(memUsageGB))
}

// LoadBegin is "Load weight begin. avail mem=X GB".
func LoadBegin(p Profile, availGB float64) Event {
	return ev(KindLoadBegin, "avail_mem", gb(availGB))
}

// WeightsFormat is "Using model weights format ['*.safetensors']".
func WeightsFormat(formats ...string) Event {
	q := make([]string, len(formats))
	for i, f := range formats {
		q[i] = "'" + f + "'"
	}
	return Event{Kind: KindWeightsFormat, Text: "[" + strings.Join(q, ", ") + "]"}
}

// tqdmDur formats a tqdm interval: MM:SS, or H:MM:SS past an hour.
func tqdmDur(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 0 {
		s = 0
	}
	if s >= 3600 {
		return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
	}
	return fmt.Sprintf("%02d:%02d", s/60, s%60)
}

// tqdmFields computes pct, remaining and rate the way tqdm prints them.
func tqdmFields(done, total int, elapsed, remaining time.Duration) (pct, rem, rate string) {
	if total > 0 {
		pct = strconv.Itoa(done * 100 / total)
	} else {
		pct = "0"
	}
	if done == 0 || elapsed <= 0 {
		return pct, "?", "?it/s"
	}
	rem = tqdmDur(remaining)
	perIt := elapsed.Seconds() / float64(done)
	if perIt > 1 {
		return pct, rem, fmt.Sprintf("%5.2fs/it", perIt)
	}
	return pct, rem, fmt.Sprintf("%5.2fit/s", 1/perIt)
}

// ShardProgress is one redraw of the weight-loading bar (no header, rank 0 only).
func ShardProgress(done, total int, elapsed, remaining time.Duration) Event {
	pct, rem, rate := tqdmFields(done, total, elapsed, remaining)
	return ev(KindShardProgress, "pct", pct, "done", strconv.Itoa(done), "total", strconv.Itoa(total),
		"elapsed", tqdmDur(elapsed), "remaining", rem, "rate", rate)
}

// LoadEnd is "Load weight end. [elapsed=E s, ]type=...[, dtype=...], avail mem=X GB[, mem
// usage=Y GB.]", with the fields the profile prints.
func LoadEnd(p Profile, typ, dtype string, elapsed time.Duration, availGB, usageGB float64) Event {
	e := ev(KindLoadEnd)
	if p.LoadEndElapsed {
		e.Fields = append(e.Fields, Field{"elapsed", gb(elapsed.Seconds())})
	}
	e.Fields = append(e.Fields, Field{"type", typ})
	if p.LoadEndDtype {
		e.Fields = append(e.Fields, Field{"dtype", dtype})
	}
	e.Fields = append(e.Fields, Field{"avail_mem", gb(availGB)})
	if p.LoadEndMemUsage {
		e.Fields = append(e.Fields, Field{"mem_usage", gb(usageGB)})
	}
	return e
}

// KVDtype is "Using KV cache dtype: torch.bfloat16".
func KVDtype(dtype string) Event { return ev(KindKVDtype, "dtype", dtype) }

// KVAvailable is "The available memory for KV cache is X GB.", printed by SGLang main of
// 2025-12-19..27 only (no release profile prints it; the parser reads it).
func KVAvailable(gbAvail float64) Event { return ev(KindKVAvailable, "avail_kv", gb(gbAvail)) }

// KVAlloc is "KV Cache is allocated. [dtype: D, ][#tokens: N, ]K size: X GB, V size: Y GB".
func KVAlloc(p Profile, dtype string, tokens int, kGB, vGB float64) Event {
	e := ev(KindKVAlloc)
	if p.KVAllocDtype {
		e.Fields = append(e.Fields, Field{"dtype", dtype})
	}
	if p.KVAllocTokens {
		e.Fields = append(e.Fields, Field{"tokens", strconv.Itoa(tokens)})
	}
	e.Fields = append(e.Fields, Field{"k_size", gb(kGB)}, Field{"v_size", gb(vGB)})
	return e
}

// MemPoolEnd is "Memory pool end. avail mem=X GB".
func MemPoolEnd(availGB float64) Event { return ev(KindMemPoolEnd, "avail_mem", gb(availGB)) }

// DecodeGraph is what the 2026-07 capture lines name: the target model's decode graphs.
const DecodeGraph = "target decode"

// DecodeGraphBackend is the default decode capture backend (cuda_graph_config.decode.backend).
const DecodeGraphBackend = "full"

// CGBegin is the capture-begin line: the 2026-07 "Capture target decode CUDA graph begin.
// backend=full, num_tokens_per_req=1, bs=[...], avail mem=X GB" where the profile names the
// graph, else the older sentence with " avail mem=X GB" where the profile prints it.
func CGBegin(p Profile, availGB float64, bs []int) Event {
	if p.CGRoleNamed {
		return ev(KindCGBegin, "graph", DecodeGraph, "backend", DecodeGraphBackend, "num_tokens_per_req", "1",
			"bs", intList(bs), "avail_mem", gb(availGB))
	}
	if p.CGBeginAvailMem {
		return ev(KindCGBegin, "avail_mem", gb(availGB))
	}
	return ev(KindCGBegin)
}

// CGBatchSizes is "Capture cuda graph bs [1, 2, 4]" (profiles with CGBatchSizesLine).
func CGBatchSizes(bs []int) Event { return Event{Kind: KindCGBatchSizes, Text: intList(bs)} }

// intList is a Python list of ints as str() prints it: "[1, 2, 4]".
func intList(v []int) string {
	s := make([]string, len(v))
	for i, b := range v {
		s[i] = strconv.Itoa(b)
	}
	return "[" + strings.Join(s, ", ") + "]"
}

// CGProgress is one redraw of the capture bar (no header). bs is the batch size being captured
// (largest first); the label follows the profile.
func CGProgress(p Profile, bs, done, total int, availGB float64, elapsed, remaining time.Duration) Event {
	pct, rem, rate := tqdmFields(done, total, elapsed, remaining)
	e := ev(KindCGProgress)
	switch p.CGBar {
	case CGBarBSAvailMem:
		e.Fields = append(e.Fields, Field{"bs", strconv.Itoa(bs)}, Field{"avail_mem", gb(availGB)})
	case CGBarAvailMem:
		e.Fields = append(e.Fields, Field{"avail_mem", gb(availGB)})
	}
	e.Fields = append(e.Fields, Field{"pct", pct}, Field{"bar", tqdmBar(done, total, 10)},
		Field{"done", strconv.Itoa(done)}, Field{"total", strconv.Itoa(total)},
		Field{"elapsed", tqdmDur(elapsed)}, Field{"remaining", rem}, Field{"rate", rate})
	return e
}

// tqdmBar draws a bar of width cells with full blocks and one partial block, like tqdm.
func tqdmBar(done, total, width int) string {
	if total <= 0 {
		return strings.Repeat(" ", width)
	}
	if done > total {
		done = total
	}
	eighths := done * width * 8 / total
	full, part := eighths/8, eighths%8
	var b strings.Builder
	b.WriteString(strings.Repeat("█", full))
	n := full
	if part > 0 && n < width {
		b.WriteRune([]rune(" ▏▎▍▌▋▊▉")[part])
		n++
	}
	b.WriteString(strings.Repeat(" ", width-n))
	return b.String()
}

// CGEnd is the capture-end line: "Capture cuda graph end. Time elapsed: X s[. mem usage=Y GB.
// avail mem=Z GB.]" (0.4.6: avail mem first), or 2026-07's "Capture target decode CUDA graph
// end. elapsed=X s, mem usage=Y GB, avail mem=Z GB.". Render prints the fields in their order.
func CGEnd(p Profile, elapsed time.Duration, usageGB, availGB float64) Event {
	if p.CGRoleNamed {
		return ev(KindCGEnd, "graph", DecodeGraph, "elapsed", gb(elapsed.Seconds()), "mem_usage", gb(usageGB), "avail_mem", gb(availGB))
	}
	e := ev(KindCGEnd, "elapsed", gb(elapsed.Seconds()))
	switch {
	case p.CGEndMem && p.CGEndAvailFirst:
		e.Fields = append(e.Fields, Field{"avail_mem", gb(availGB)}, Field{"mem_usage", gb(usageGB)})
	case p.CGEndMem:
		e.Fields = append(e.Fields, Field{"mem_usage", gb(usageGB)}, Field{"avail_mem", gb(availGB)})
	}
	return e
}

// LimitsInfo are the values of the "max_total_num_tokens=..." line.
type LimitsInfo struct {
	MaxTotalTokens     int
	ChunkedPrefillSize int // -1 prints as -1 (disabled)
	MaxPrefillTokens   int
	MaxRunningRequests int
	ContextLen         int
	AvailableGPUMemGB  float64
}

// Limits is the "max_total_num_tokens=..." line with the fields the profile prints.
func Limits(p Profile, l LimitsInfo) Event {
	e := ev(KindLimits, "max_total_num_tokens", strconv.Itoa(l.MaxTotalTokens))
	if p.LimitsChunked {
		e.Fields = append(e.Fields, Field{"chunked_prefill_size", strconv.Itoa(l.ChunkedPrefillSize)})
	}
	e.Fields = append(e.Fields, Field{"max_prefill_tokens", strconv.Itoa(l.MaxPrefillTokens)},
		Field{"max_running_requests", strconv.Itoa(l.MaxRunningRequests)},
		Field{"context_len", strconv.Itoa(l.ContextLen)})
	if p.LimitsAvailMem {
		e.Fields = append(e.Fields, Field{"available_gpu_mem", gb(l.AvailableGPUMemGB)})
	}
	return e
}

// HiCacheAlloc is "Allocating X GB host memory for hierarchical KV cache." (every rank).
func HiCacheAlloc(sizeGB float64) Event { return ev(KindHiCacheAlloc, "size_gb", gb(sizeGB)) }

// HostMemError is the ValueError ending a traceback when the HiCache host check fails.
func HostMemError(reqGB, freeGB float64) Event {
	return ev(KindHostMemError, "requested_gb", gb(reqGB), "free_gb", gb(freeGB))
}

// UvicornStarted, UvicornWaiting, UvicornComplete and UvicornRunning are uvicorn's startup
// quartet, in that order.
func UvicornStarted(pid int) Event { return ev(KindUvicornStarted, "pid", strconv.Itoa(pid)) }

// UvicornWaiting is "INFO:     Waiting for application startup.".
func UvicornWaiting() Event { return ev(KindUvicornWaiting) }

// UvicornComplete is "INFO:     Application startup complete.".
func UvicornComplete() Event { return ev(KindUvicornComplete) }

// UvicornRunning is "INFO:     Uvicorn running on http://host:port (Press CTRL+C to quit)".
func UvicornRunning(host string, port int) Event {
	return ev(KindUvicornRunning, "scheme", "http", "host", host, "port", strconv.Itoa(port))
}

// UvicornShutdown is "Waiting for application shutdown." (complete=false) or
// "Application shutdown complete." (complete=true).
func UvicornShutdown(complete bool) Event {
	if complete {
		return Event{Kind: KindUvicornShutdown, Text: "Application shutdown complete."}
	}
	return Event{Kind: KindUvicornShutdown, Text: "Waiting for application shutdown."}
}
