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

// ServerArgsLine is the launcher's "server_args=..." line: ServerArgs(...) before era C, a dict
// in era C.
func ServerArgsLine(p Profile, a ServerArgs) Event {
	return Event{Kind: KindServerArgs, Text: a.Repr(p.ServerArgsDict)}
}

// ServeWarning is the newest launcher's UserWarning on stderr (no header).
func ServeWarning(pythonFile string, line int) Event {
	return Event{Kind: KindLaunchWarning, Text: fmt.Sprintf("%s:%d: UserWarning: %s", pythonFile, line, msgServeWarning)}
}

// DistInitBegin is "Init torch distributed begin.".
func DistInitBegin() Event { return ev(KindDistInitBegin) }

// DistInitEnd is "Init torch distributed ends. mem usage=X GB".
func DistInitEnd(memUsageGB float64) Event { return ev(KindDistInitEnd, "mem_usage", gb(memUsageGB)) }

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

// LoadEnd is "Load weight end. type=..., dtype=..., avail mem=X GB[, mem usage=Y GB.]".
func LoadEnd(p Profile, typ, dtype string, availGB, usageGB float64) Event {
	e := ev(KindLoadEnd, "type", typ, "dtype", dtype, "avail_mem", gb(availGB))
	if p.LoadEndMemUsage {
		e.Fields = append(e.Fields, Field{"mem_usage", gb(usageGB)})
	}
	return e
}

// KVDtype is "Using KV cache dtype: torch.bfloat16".
func KVDtype(dtype string) Event { return ev(KindKVDtype, "dtype", dtype) }

// KVAvailable is "The available memory for KV cache is X GB." (profiles with KVAvailableLine).
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

// CGBegin is the capture-begin sentence, with " avail mem=X GB" where the profile prints it.
func CGBegin(p Profile, availGB float64) Event {
	if p.CGBeginAvailMem {
		return ev(KindCGBegin, "avail_mem", gb(availGB))
	}
	return ev(KindCGBegin)
}

// CGBatchSizes is "Capture cuda graph bs [1, 2, 4]" (profiles with CGBatchSizesLine).
func CGBatchSizes(bs []int) Event {
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = strconv.Itoa(b)
	}
	return Event{Kind: KindCGBatchSizes, Text: "[" + strings.Join(s, ", ") + "]"}
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

// CGEnd is "Capture cuda graph end. Time elapsed: X s[. mem usage=Y GB. avail mem=Z GB.]".
func CGEnd(p Profile, elapsed time.Duration, usageGB, availGB float64) Event {
	e := ev(KindCGEnd, "elapsed", gb(elapsed.Seconds()))
	if p.CGEndMem {
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

// StartupTimings is era C's "Engine startup timings (s): ..." with the values as printed.
func StartupTimings(values string) Event { return Event{Kind: KindStartupTimings, Text: values} }

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

// Access is a uvicorn access line; client is "ip:port". The reason phrase follows the status
// as uvicorn prints it.
func Access(client, method, path string, status int) Event {
	return ev(KindAccess, "client", client, "method", method, "path", path, "proto", "HTTP/1.1",
		"status", strconv.Itoa(status), "reason", reasonPhrase(status))
}

func reasonPhrase(code int) string {
	switch code {
	case 200:
		return "OK"
	case 400:
		return "Bad Request"
	case 401:
		return "Unauthorized"
	case 404:
		return "Not Found"
	case 405:
		return "Method Not Allowed"
	case 422:
		return "Unprocessable Entity"
	case 500:
		return "Internal Server Error"
	case 502:
		return "Bad Gateway"
	case 503:
		return "Service Unavailable"
	}
	return ""
}

// Deprecated is era C's warning for a /get_* endpoint.
func Deprecated(oldPath, newPath string) Event {
	return ev(KindDeprecated, "old", oldPath, "new", newPath)
}

// FreezeGC is era C's "Freezing GC in Scheduler process. ..." line; msg is the whole message.
func FreezeGC(msg string) Event { return Event{Kind: KindFreezeGC, Text: msg} }

// Ready is "The server is fired up and ready to roll!".
func Ready() Event { return ev(KindReady) }

// PrefillStats are the values of a Prefill line; the profile picks which are printed.
type PrefillStats struct {
	Iter            int // forward counter (SGLANG_LOG_FORWARD_ITERS); 0 prints none
	NewSeq          int
	NewToken        int
	CachedToken     int
	CacheHitRate    float64 // percent
	TokenUsage      float64
	RunningReq      int
	QueueReq        int
	PendingToken    int
	CUDAGraph       bool
	InputThroughput float64
}

// DecodeStats are the values of a Decode line; the profile picks which are printed.
type DecodeStats struct {
	Iter          int
	RunningReq    int
	Token         int
	TokenUsage    float64
	CUDAGraph     bool
	GenThroughput float64
	QueueReq      int
}

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// Prefill is a "Prefill batch" line with the profile's fields in the profile's order.
func Prefill(p Profile, s PrefillStats) Event {
	e := Event{Kind: KindPrefill, Text: p.batchSep(), Fields: make(Fields, 0, len(p.PrefillFields)+1)}
	if s.Iter > 0 {
		e.Fields = append(e.Fields, Field{"iter", strconv.Itoa(s.Iter)})
	}
	for _, l := range p.PrefillFields {
		var v string
		switch l {
		case LabelNewSeq:
			v = strconv.Itoa(s.NewSeq)
		case LabelNewToken:
			v = strconv.Itoa(s.NewToken)
		case LabelCachedToken:
			v = strconv.Itoa(s.CachedToken)
		case LabelCacheHitRate:
			v = gb(s.CacheHitRate) + "%"
		case LabelTokenUsage:
			v = gb(s.TokenUsage)
		case LabelRunningReq:
			v = strconv.Itoa(s.RunningReq)
		case LabelQueueReq:
			v = strconv.Itoa(s.QueueReq)
		case LabelPendingToken:
			v = strconv.Itoa(s.PendingToken)
		case LabelCUDAGraph:
			v = pyBool(s.CUDAGraph)
		case LabelInputThroughput:
			v = gb(s.InputThroughput)
		default:
			continue // a label the profile lists but no stat feeds: not printed
		}
		e.Fields = append(e.Fields, Field{l, v})
	}
	return e
}

// Decode is a "Decode batch" line with the profile's fields in the profile's order.
func Decode(p Profile, s DecodeStats) Event {
	e := Event{Kind: KindDecode, Text: p.batchSep(), Fields: make(Fields, 0, len(p.DecodeFields)+1)}
	if p.DecodeTrailingComma {
		e.Text += ", "
	}
	if s.Iter > 0 {
		e.Fields = append(e.Fields, Field{"iter", strconv.Itoa(s.Iter)})
	}
	for _, l := range p.DecodeFields {
		var v string
		switch l {
		case LabelRunningReq:
			v = strconv.Itoa(s.RunningReq)
		case LabelToken:
			v = strconv.Itoa(s.Token)
		case LabelTokenUsage:
			v = gb(s.TokenUsage)
		case LabelCUDAGraph:
			v = pyBool(s.CUDAGraph)
		case LabelGenThroughput:
			v = gb(s.GenThroughput)
		case LabelQueueReq:
			v = strconv.Itoa(s.QueueReq)
		default:
			continue
		}
		e.Fields = append(e.Fields, Field{l, v})
	}
	return e
}

// HealthFailed is "Health check failed. Server couldn't get a response from detokenizer for last
// N seconds. tic start time: HH:MM:SS. last_heartbeat time: HH:MM:SS".
func HealthFailed(seconds int, tic, lastHeartbeat time.Time) Event {
	return ev(KindHealthFailed, "seconds", strconv.Itoa(seconds), "tic", tic.Format("15:04:05"),
		"last_heartbeat", lastHeartbeat.Format("15:04:05"))
}

// SchedulerException is the headed "Scheduler hit an exception: Traceback (most recent call
// last):" line that opens a scheduler traceback.
func SchedulerException() Event { return Event{Kind: KindSchedulerExc, Text: msgTBStart} }

// TracebackStart is a bare "Traceback (most recent call last):" line.
func TracebackStart() Event { return ev(KindTracebackStart) }

// TracebackFrame is the two lines of one frame: `  File "path", line N, in fn` and the code.
func TracebackFrame(path string, line int, fn, code string) []Event {
	out := []Event{{Kind: KindTraceback, Text: fmt.Sprintf("  File %q, line %d, in %s", path, line, fn)}}
	if code != "" {
		out = append(out, Event{Kind: KindTraceback, Text: "    " + code})
	}
	return out
}

// TracebackText is any other traceback body line, kept verbatim (carets, chained-exception
// banners, the CUDA-graph "Possible solutions:" block).
func TracebackText(s string) Event { return Event{Kind: KindTraceback, Text: s} }

// Exception is the "Type: message" line that ends a traceback.
func Exception(exc, msg string) Event {
	return Event{Kind: KindException, Fields: Fields{{"exc", exc}}, Text: msg}
}

// SigquitChild is the launcher's "Received sigquit from a child process. ..." line, with the old
// typo where the profile has it.
func SigquitChild(p Profile) Event {
	e := ev(KindSigquitChild)
	if p.SigquitTypo {
		e.Text = msgSigquitTypo
	}
	return e
}

// SigquitReceived is the running-phase handler's "SIGQUIT received. signum=..., frame=.... It
// usually means one child failed."
func SigquitReceived(signum int, frame string) Event {
	return Event{Kind: KindSigquitReceived, Text: fmt.Sprintf("SIGQUIT received. signum=%d, frame=%s. It usually means one child failed.", signum, frame)}
}

// SubprocessCrash is era C's SubprocessWatchdog line.
func SubprocessCrash(name string, pid, code int) Event {
	return ev(KindSubprocessCrash, "name", name, "pid", strconv.Itoa(pid), "code", strconv.Itoa(code))
}

// RankDead is "Rank N scheduler is dead. Please check if there are relevant logs.".
func RankDead(rank int) Event { return ev(KindRankDead, "rank", strconv.Itoa(rank)) }

// ExitCode is "Exit code: N" (negative for a signal, e.g. -9).
func ExitCode(code int) Event { return ev(KindExitCode, "code", strconv.Itoa(code)) }

// RankDiedInit is the 2026 launcher's final RuntimeError for a scheduler that died during
// initialization.
func RankDiedInit(rank, code int) Event {
	return Exception("RuntimeError", fmt.Sprintf("Rank %d scheduler died during initialization (exit code: %d). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run dmesg -T | grep -i oom to check.", rank, code))
}

// Watchdog is the scheduler watchdog line in the profile's wording.
func Watchdog(p Profile, timeout time.Duration) Event {
	t := strconv.FormatFloat(timeout.Seconds(), 'f', -1, 64)
	if p.WatchdogNamed {
		return ev(KindWatchdog, "who", "Scheduler", "timeout", t, "soft", "False")
	}
	return ev(KindWatchdog, "timeout", t)
}

// CUDAOOM is torch's OOM exception line. exc is the exception type as printed
// ("torch.OutOfMemoryError", or "Exception" with "Capture cuda graph failed: " in capture).
func CUDAOOM(exc, prefix string, allocMiB float64, gpu int, totalGiB, freeMiB float64) Event {
	amount := gb(allocMiB)
	text := fmt.Sprintf("%s: %s%s%s MiB. GPU %d has a total capacity of %s GiB of which %s MiB is free.",
		exc, prefix, msgCUDAOOM, amount, gpu, gb(totalGiB), gb(freeMiB))
	return Event{Kind: KindCUDAOOM, Fields: Fields{{"amount", amount}, {"unit", "MiB"}}, Text: text}
}

// InitFailed is "Initialization failed. warmup error: ..."; detail is what follows
// "Initialization failed. ".
func InitFailed(detail string) Event { return Event{Kind: KindInitFailed, Text: detail} }

// Errno98 is uvicorn's bind failure on the HTTP port.
func Errno98(host string, port int) Event {
	return ev(KindErrno98, "host", host, "port", strconv.Itoa(port))
}

// NCCLError is "RuntimeError: NCCL error: <detail>".
func NCCLError(detail string) Event {
	return Event{Kind: KindNCCLError, Fields: Fields{{"exc", "RuntimeError"}}, Text: detail}
}

// Killed is the shell's "Killed" after the launcher SIGKILLs itself.
func Killed() Event { return ev(KindKilled) }
