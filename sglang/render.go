package sglang

import (
	"time"
)

// Render returns the exact line profile p prints for e, without a trailing newline. The header
// "[2006-01-02 15:04:05 TP0] " is printed when e.Time is non-zero, with e.Ranks as given. The
// message comes from the event: which optional fields a line has is decided when the event is
// built (the constructors read the profile), so a parsed event renders back byte-exact under any
// profile. p only supplies the Prefill/Decode separator when the event does not carry one.
func Render(e Event, p Profile) string {
	return string(AppendRender(make([]byte, 0, 128), e, p))
}

// AppendRender appends Render(e, p) to dst; it is the allocation-free form for writers.
func AppendRender(dst []byte, e Event, p Profile) []byte {
	if !e.Time.IsZero() {
		dst = appendHeader(dst, e.Time, e.Ranks)
		dst = append(dst, ' ')
	}
	return appendMessage(dst, e, p)
}

// AppendHeader appends "[2006-01-02 15:04:05 TP0]" (no trailing space).
func appendHeader(dst []byte, t time.Time, ranks []Rank) []byte {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	dst = append(dst, '[')
	dst = append4(dst, y)
	dst = append(dst, '-')
	dst = append2(dst, int(mo))
	dst = append(dst, '-')
	dst = append2(dst, d)
	dst = append(dst, ' ')
	dst = append2(dst, h)
	dst = append(dst, ':')
	dst = append2(dst, mi)
	dst = append(dst, ':')
	dst = append2(dst, s)
	for _, r := range ranks {
		dst = append(dst, ' ')
		dst = append(dst, r.Name...)
		if r.N >= 0 {
			dst = appendInt(dst, r.N)
		}
	}
	return append(dst, ']')
}

func append2(dst []byte, n int) []byte {
	return append(dst, byte('0'+n/10%10), byte('0'+n%10))
}

func append4(dst []byte, n int) []byte {
	return append(dst, byte('0'+n/1000%10), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
}

func appendInt(dst []byte, n int) []byte {
	if n < 0 {
		dst = append(dst, '-')
		n = -n
	}
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(dst, b[i:]...)
}

// verbatimKinds build their message from Fields; on them a non-empty Text is the message as
// printed when it deviated from the canonical wording, and it is printed instead.
var verbatimKinds = [numKinds]bool{
	KindDistInitBegin: true, KindDistInitEnd: true, KindLoadBegin: true, KindShardProgress: true,
	KindLoadEnd: true, KindKVDtype: true, KindKVAvailable: true, KindKVAlloc: true,
	KindMemPoolEnd: true, KindCGBegin: true, KindCGProgress: true, KindCGEnd: true, KindLimits: true,
	KindHiCacheAlloc: true, KindHostMemError: true, KindUvicornStarted: true, KindUvicornWaiting: true,
	KindUvicornComplete: true, KindUvicornRunning: true, KindAccess: true, KindDeprecated: true,
	KindReady: true, KindHealthFailed: true, KindTracebackStart: true, KindSigquitChild: true,
	KindSubprocessCrash: true, KindRankDead: true, KindExitCode: true, KindWatchdog: true,
	KindErrno98: true, KindKilled: true,
}

// Canonical message texts (facts about SGLang's output).
const (
	msgDistInitBegin = "Init torch distributed begin."
	msgDistInitEnd   = "Init torch distributed ends. mem usage="
	msgDistInitEndE  = "Init torch distributed ends. elapsed="
	msgLoadBegin     = "Load weight begin. avail mem="
	msgWeightsFormat = "Using model weights format "
	msgShards        = "Loading safetensors checkpoint shards: "
	msgLoadEnd       = "Load weight end. type="
	msgLoadEndHead   = "Load weight end. "
	msgKVDtype       = "Using KV cache dtype: "
	msgKVAvailable   = "The available memory for KV cache is "
	msgKVAlloc       = "KV Cache is allocated. "
	msgPoolEnd       = "Memory pool end. avail mem="
	msgCGBegin       = "Capture cuda graph begin. This can take up to several minutes."
	msgCGBS          = "Capture cuda graph bs "
	msgCGBar         = "Capturing batches ("
	msgCGEnd         = "Capture cuda graph end. Time elapsed: "
	msgLimits        = "max_total_num_tokens="
	msgHiCache       = "Allocating "
	msgHiCacheTail   = " GB host memory for hierarchical KV cache."
	msgHostMem       = "ValueError: Not enough host memory available. Requesting "
	msgHostMemMid    = " GB but only have "
	msgHostMemTail   = " GB free. Please reduce the size of the hierarchical cache."
	msgTimings       = "Engine startup timings (s): "
	uviInfo          = "INFO:     "
	uviError         = "ERROR:    "
	msgUviStarted    = "INFO:     Started server process ["
	msgUviWaiting    = "INFO:     Waiting for application startup."
	msgUviComplete   = "INFO:     Application startup complete."
	msgUviRunning    = "INFO:     Uvicorn running on "
	msgUviRunTail    = " (Press CTRL+C to quit)"
	msgDeprecated    = "Endpoint '"
	msgDeprMid       = "' is deprecated and will be removed in a future version. Please use '"
	msgDeprTail      = "' instead."
	msgReady         = "The server is fired up and ready to roll!"
	msgHealthFailed  = "Health check failed. Server couldn't get a response from detokenizer for last "
	msgHealthMid     = " seconds. tic start time: "
	msgHealthTail    = ". last_heartbeat time: "
	msgSchedExc      = "Scheduler hit an exception: "
	msgTBStart       = "Traceback (most recent call last):"
	msgSigquitChild  = "Received sigquit from a child process. It usually means the child failed."
	msgSigquitTypo   = "Received sigquit from a child proces."
	msgSubproc       = "Subprocess "
	msgSubprocTail   = ". Triggering SIGQUIT for cleanup..."
	msgRankDeadTail  = " scheduler is dead. Please check if there are relevant logs."
	msgExitCode      = "Exit code: "
	msgInitFailed    = "Initialization failed. "
	msgErrno98       = "ERROR:    [Errno 98] error while attempting to bind on address ('"
	msgErrno98Tail   = "): address already in use"
	msgNCCL          = "NCCL error: "
	msgKilled        = "Killed"
	msgWatchdogTO    = "atchdog timeout (self.watchdog_timeout="
	msgCUDAOOM       = "CUDA out of memory. Tried to allocate "
	msgServeWarning  = "'python -m sglang.launch_server' is still supported, but 'sglang serve' is the recommended entrypoint."
)

// appendMessage renders the message part of a line (after the header): the canonical wording
// of its kind filled with its fields, or Text for verbatim kinds that deviate.
func appendMessage(dst []byte, e Event, p Profile) []byte {
	if e.Kind < numKinds && verbatimKinds[e.Kind] && e.Text != "" {
		return append(dst, e.Text...)
	}
	if out, ok := appendStartupMessage(dst, e); ok {
		return out
	}
	if out, ok := appendCaptureMessage(dst, e); ok {
		return out
	}
	if out, ok := appendHTTPMessage(dst, e, p); ok {
		return out
	}
	if out, ok := appendFailureMessage(dst, e); ok {
		return out
	}
	return append(dst, e.Text...)
}

// appendStartupMessage renders the launch, weight-load and KV pool lines.
func appendStartupMessage(dst []byte, e Event) ([]byte, bool) {
	f := e.Fields
	g := func(k string) string { v, _ := f.Get(k); return v }
	switch e.Kind {
	case KindServerArgs:
		return append(append(dst, "server_args="...), e.Text...), true
	case KindDistInitBegin:
		return append(dst, msgDistInitBegin...), true
	case KindDistInitEnd:
		if v, ok := f.Get("elapsed"); ok {
			dst = append(append(append(dst, msgDistInitEndE...), v...), " s, mem usage="...)
			return append(append(dst, g("mem_usage")...), " GB"...), true
		}
		return append(append(append(dst, msgDistInitEnd...), g("mem_usage")...), " GB"...), true
	case KindLoadBegin:
		return append(append(append(dst, msgLoadBegin...), g("avail_mem")...), " GB"...), true
	case KindWeightsFormat:
		return append(append(dst, msgWeightsFormat...), e.Text...), true
	case KindShardProgress:
		dst = append(dst, msgShards...)
		dst = appendPct(dst, g("pct"))
		dst = append(dst, "% Completed | "...)
		return appendTQDMTail(dst, f), true
	case KindLoadEnd:
		dst = append(dst, msgLoadEndHead...)
		if v, ok := f.Get("elapsed"); ok {
			dst = append(append(append(dst, "elapsed="...), v...), " s, "...)
		}
		dst = append(append(dst, "type="...), g("type")...)
		if v, ok := f.Get("dtype"); ok {
			dst = append(append(dst, ", dtype="...), v...)
		}
		dst = append(append(append(dst, ", avail mem="...), g("avail_mem")...), " GB"...)
		if v, ok := f.Get("mem_usage"); ok {
			dst = append(append(append(dst, ", mem usage="...), v...), " GB."...)
		}
		return dst, true
	case KindKVDtype:
		return append(append(dst, msgKVDtype...), g("dtype")...), true
	case KindKVAvailable:
		return append(append(append(dst, msgKVAvailable...), g("avail_kv")...), " GB."...), true
	case KindKVAlloc:
		dst = append(dst, msgKVAlloc...)
		if v, ok := f.Get("dtype"); ok {
			dst = append(append(append(dst, "dtype: "...), v...), ", "...)
		}
		if v, ok := f.Get("tokens"); ok {
			dst = append(append(append(dst, "#tokens: "...), v...), ", "...)
		}
		dst = append(append(append(dst, "K size: "...), g("k_size")...), " GB, V size: "...)
		return append(append(dst, g("v_size")...), " GB"...), true
	case KindMemPoolEnd:
		return append(append(append(dst, msgPoolEnd...), g("avail_mem")...), " GB"...), true
	}
	return dst, false
}

// appendCaptureMessage renders the CUDA graph, limits and HiCache lines.
func appendCaptureMessage(dst []byte, e Event) ([]byte, bool) {
	f := e.Fields
	g := func(k string) string { v, _ := f.Get(k); return v }
	switch e.Kind {
	case KindCGBegin:
		if name, ok := f.Get("graph"); ok {
			dst = append(append(append(dst, "Capture "...), name...), " CUDA graph begin. backend="...)
			dst = append(append(append(dst, g("backend")...), ", num_tokens_per_req="...), g("num_tokens_per_req")...)
			dst = append(append(append(dst, ", bs="...), g("bs")...), ", avail mem="...)
			return append(append(dst, g("avail_mem")...), " GB"...), true
		}
		dst = append(dst, msgCGBegin...)
		if v, ok := f.Get("avail_mem"); ok {
			dst = append(append(append(dst, " avail mem="...), v...), " GB"...)
		}
		return dst, true
	case KindCGBatchSizes:
		return append(append(dst, msgCGBS...), e.Text...), true
	case KindCGProgress:
		bs, hasBS := f.Get("bs")
		avail, hasAvail := f.Get("avail_mem")
		if hasAvail {
			dst = append(dst, msgCGBar...)
			if hasBS {
				dst = append(append(append(dst, "bs="...), bs...), ' ')
			}
			dst = append(append(append(dst, "avail_mem="...), avail...), " GB): "...)
		}
		dst = appendPct(dst, g("pct"))
		dst = append(append(append(dst, "%|"...), g("bar")...), "| "...)
		return appendTQDMTail(dst, f), true
	case KindCGEnd:
		if name, ok := f.Get("graph"); ok {
			dst = append(append(append(dst, "Capture "...), name...), " CUDA graph end. elapsed="...)
			dst = append(append(append(dst, g("elapsed")...), " s, mem usage="...), g("mem_usage")...)
			return append(append(append(dst, " GB, avail mem="...), g("avail_mem")...), " GB."...), true
		}
		dst = append(append(append(dst, msgCGEnd...), g("elapsed")...), " s"...)
		// The memory fields print in their order: 0.4.6 put avail mem first.
		for _, fl := range f {
			switch fl.Key {
			case "mem_usage":
				dst = append(append(append(dst, ". mem usage="...), fl.Value...), " GB"...)
			case "avail_mem":
				dst = append(append(append(dst, ". avail mem="...), fl.Value...), " GB"...)
			}
		}
		if len(f) > 1 {
			dst = append(dst, '.')
		}
		return dst, true
	case KindLimits:
		dst = append(append(dst, msgLimits...), g("max_total_num_tokens")...)
		if v, ok := f.Get("chunked_prefill_size"); ok {
			dst = append(append(dst, ", chunked_prefill_size="...), v...)
		}
		dst = append(append(dst, ", max_prefill_tokens="...), g("max_prefill_tokens")...)
		dst = append(append(dst, ", max_running_requests="...), g("max_running_requests")...)
		dst = append(append(dst, ", context_len="...), g("context_len")...)
		if v, ok := f.Get("available_gpu_mem"); ok {
			dst = append(append(append(dst, ", available_gpu_mem="...), v...), " GB"...)
		}
		return dst, true
	case KindHiCacheAlloc:
		return append(append(append(dst, msgHiCache...), g("size_gb")...), msgHiCacheTail...), true
	case KindHostMemError:
		dst = append(append(append(dst, msgHostMem...), g("requested_gb")...), msgHostMemMid...)
		return append(append(dst, g("free_gb")...), msgHostMemTail...), true
	}
	return dst, false
}

// appendHTTPMessage renders the uvicorn, access, ready and batch lines.
func appendHTTPMessage(dst []byte, e Event, p Profile) ([]byte, bool) {
	f := e.Fields
	g := func(k string) string { v, _ := f.Get(k); return v }
	switch e.Kind {
	case KindStartupTimings:
		return append(append(dst, msgTimings...), e.Text...), true
	case KindUvicornStarted:
		return append(append(append(dst, msgUviStarted...), g("pid")...), ']'), true
	case KindUvicornWaiting:
		return append(dst, msgUviWaiting...), true
	case KindUvicornComplete:
		return append(dst, msgUviComplete...), true
	case KindUvicornRunning:
		dst = append(append(append(dst, msgUviRunning...), g("scheme")...), "://"...)
		dst = append(append(append(dst, g("host")...), ':'), g("port")...)
		return append(dst, msgUviRunTail...), true
	case KindUvicornShutdown:
		return append(append(dst, uviInfo...), e.Text...), true
	case KindAccess:
		dst = append(append(append(dst, uviInfo...), g("client")...), ` - "`...)
		dst = append(append(append(dst, g("method")...), ' '), g("path")...)
		dst = append(append(append(append(dst, ' '), g("proto")...), `" `...), g("status")...)
		if r := g("reason"); r != "" {
			dst = append(append(dst, ' '), r...)
		}
		return dst, true
	case KindDeprecated:
		dst = append(append(append(dst, msgDeprecated...), g("old")...), msgDeprMid...)
		return append(append(dst, g("new")...), msgDeprTail...), true
	case KindFreezeGC, KindSigquitReceived, KindCUDAOOM, KindTraceback, KindForeign, KindUnknown, KindLaunchWarning:
		return append(dst, e.Text...), true
	case KindReady:
		return append(dst, msgReady...), true
	case KindPrefill, KindDecode:
		return appendBatch(dst, e, p), true
	}
	return dst, false
}

// appendFailureMessage renders the failure lines.
func appendFailureMessage(dst []byte, e Event) ([]byte, bool) {
	f := e.Fields
	g := func(k string) string { v, _ := f.Get(k); return v }
	switch e.Kind {
	case KindHealthFailed:
		dst = append(append(append(dst, msgHealthFailed...), g("seconds")...), msgHealthMid...)
		return append(append(append(dst, g("tic")...), msgHealthTail...), g("last_heartbeat")...), true
	case KindSchedulerExc:
		return append(append(dst, msgSchedExc...), e.Text...), true
	case KindTracebackStart:
		return append(dst, msgTBStart...), true
	case KindException:
		dst = append(dst, g("exc")...)
		if e.Text != "" {
			dst = append(append(dst, ": "...), e.Text...)
		}
		return dst, true
	case KindSigquitChild:
		return append(dst, msgSigquitChild...), true
	case KindSubprocessCrash:
		dst = append(append(append(dst, msgSubproc...), g("name")...), " (pid="...)
		dst = append(append(append(dst, g("pid")...), ") crashed with exit code "...), g("code")...)
		return append(dst, msgSubprocTail...), true
	case KindRankDead:
		return append(append(append(dst, "Rank "...), g("rank")...), msgRankDeadTail...), true
	case KindExitCode:
		return append(append(dst, msgExitCode...), g("code")...), true
	case KindWatchdog:
		who := g("who")
		if who == "" {
			dst = append(dst, 'W')
		} else {
			dst = append(append(dst, who...), " w"...)
		}
		dst = append(append(dst, msgWatchdogTO...), g("timeout")...)
		if v, ok := f.Get("soft"); ok {
			dst = append(append(dst, ", self.soft="...), v...)
		}
		return append(dst, ')'), true
	case KindInitFailed:
		return append(append(dst, msgInitFailed...), e.Text...), true
	case KindErrno98:
		dst = append(append(append(dst, msgErrno98...), g("host")...), "', "...)
		return append(append(dst, g("port")...), msgErrno98Tail...), true
	case KindNCCLError:
		if v, ok := f.Get("exc"); ok {
			dst = append(append(dst, v...), ": "...)
		}
		return append(append(dst, msgNCCL...), e.Text...), true
	case KindKilled:
		return append(dst, msgKilled...), true
	case KindBlank:
		return append(dst, e.Text...), true // whitespace-only lines keep their blanks
	}
	return dst, false
}
