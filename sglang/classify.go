package sglang

import (
	"regexp"
	"strings"
)

var (
	reShards   = regexp.MustCompile(`^Loading safetensors checkpoint shards: +(\d+)% Completed \| (\d+)/(\d+) \[([^<\]]*)<([^,\]]*), ([^\]]*)\]$`)
	reCGBar    = regexp.MustCompile(`^(?:Capturing batches \((?:bs=(\d+) )?avail_mem=([\d.]+) GB\): +| *)(\d+)%\|([^|]*)\| (\d+)/(\d+) \[([^<\]]*)<([^,\]]*), ([^\]]*)\]$`)
	reAnyBar   = regexp.MustCompile(`^(?:[^|]*?:)? *\d{1,3}%(?:\|[^|]*\|| Completed \|)? ?\d+/\d+ \[[^\]]*\]$`)
	reCountBar = regexp.MustCompile(`^(?:[^|]*?:)? *\d+it \[[^\]]*it/s\]$`) // tqdm without a total: "Processing: 2it [00:00,  4.69it/s]"
	reLoadEnd  = regexp.MustCompile(`^Load weight end\. type=([^,]*), dtype=([^,]*), avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB\.)?$`)
	reLoadEndE = regexp.MustCompile(`^Load weight end\. elapsed=([\d.]+) s, type=([^,]*), (?:dtype=([^,]*), )?avail mem=([\d.]+) GB(?:, mem usage=([\d.]+) GB)?`)
	reDistEndE = regexp.MustCompile(`^Init torch distributed ends\. elapsed=([\d.]+) s, mem usage=([\d.]+) GB`)
	reCapture  = regexp.MustCompile(`^Capture (?:[\w-]+ )*?(?:cuda|CUDA|npu|NPU) graph (begin|end)\.`)
	reElapsed  = regexp.MustCompile(`elapsed=([\d.]+) s`)
	reMemUsage = regexp.MustCompile(`mem usage=([\d.]+) GB`)
	reAvailMem = regexp.MustCompile(`avail mem=([\d.]+) GB`)
	reKVAlloc  = regexp.MustCompile(`^KV Cache is allocated\. (?:dtype: ([^,]*), )?(?:#tokens: (\d+), )?K size: ([\d.]+) GB, V size: ([\d.]+) GB`)
	reCGEnd    = regexp.MustCompile(`^Capture cuda graph end\. Time elapsed: ([\d.]+) s(?:\. (mem usage|avail mem)=([\d.]+) GB\. (avail mem|mem usage)=([\d.]+) GB\.)?`)
	reCGBegin2 = regexp.MustCompile(`^Capture (\w+ \w+) CUDA graph begin\. backend=([^,]*), num_tokens_per_req=(\d+), bs=(\[[\d, ]*\]), avail mem=([\d.]+) GB$`)
	reCGEnd2   = regexp.MustCompile(`^Capture (\w+ \w+) CUDA graph end\. elapsed=([\d.]+) s, mem usage=([\d.]+) GB, avail mem=([\d.]+) GB\.$`)
	reLimits   = regexp.MustCompile(`^max_total_num_tokens=(\d+), (?:chunked_prefill_size=(-?\d+|None), )?max_prefill_tokens=(\d+), max_running_requests=(\d+), context_len=(\d+)(?:, available_gpu_mem=([\d.]+) GB)?`)
	reHiCache  = regexp.MustCompile(`^Allocating ([\d.]+) GB host memory for hierarchical KV cache\.`)
	reHostOOM  = regexp.MustCompile(`Not enough host memory available\. Requesting ([\d.]+) GB but only have (-?[\d.]+) GB free\.`)
	reAccess   = regexp.MustCompile(`^INFO:     (\S+) - "([A-Z]+) (\S+) (HTTP/[\d.]+)" (\d{3})(?: (.*))?$`)
	reUviRun   = regexp.MustCompile(`^INFO:     Uvicorn running on (https?)://(.+):(\d+) \(Press CTRL\+C to quit\)`)
	reUviPid   = regexp.MustCompile(`^INFO:     Started server process \[(\d+)\]`)
	reErrno98  = regexp.MustCompile(`\[Errno 98\] (?:error while attempting to bind on address \('([^']*)', (\d+)\): )?[Aa]ddress already in use`)
	reDepr     = regexp.MustCompile(`^Endpoint '([^']*)' is deprecated and will be removed in a future version\. Please use '([^']*)' instead\.`)
	reHealth   = regexp.MustCompile(`^Health check failed\. Server couldn't get a response from detokenizer for last (\d+) seconds\. tic start time: (\S+?)\. last_heartbeat time: (\S+)`)
	reSubproc  = regexp.MustCompile(`^Subprocess (\S+) \(pid=(\d+)\) crashed with exit code (-?\d+)\.`)
	reRankDead = regexp.MustCompile(`^Rank (\d+) scheduler is dead\.`)
	reExitCode = regexp.MustCompile(`^Exit code: (-?\d+)$`)
	reWatchdog = regexp.MustCompile(`^(?:(Scheduler|TokenizerManager) watchdog|Watchdog) timeout \(self\.watchdog_timeout=([\d.]+)(?:, self\.soft=(True|False))?\)`)
	reCUDAOOM  = regexp.MustCompile(`CUDA out of memory\. Tried to allocate ([\d.]+) (MiB|GiB|GB|MB)`)
	reGB       = regexp.MustCompile(`^([\d.]+) GB`)

	reGlog    = regexp.MustCompile(`^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [^\]\s]+:\d+\] `)
	reC10D    = regexp.MustCompile(`^(?:\[rank\d+\]:)?\[[IWEF]\d{3,4} \d{2}:\d{2}:\d{2}\.\d+ [^\]\s]+:\d+\]`)
	reTag     = regexp.MustCompile(`^\[(Gloo|aiter|transformers|AR)\] `)
	rePyWarn  = regexp.MustCompile(`^\S+\.py:\d+: \w+Warning: `)
	rePyLib   = regexp.MustCompile(`^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - [\w.]+ *[\w.]*: `)
	reVLLM    = regexp.MustCompile(`^(?:\(\w+ pid=\d+\) )?(?:DEBUG|INFO|WARNING|ERROR) \d{2}-\d{2} \d{2}:\d{2}:\d{2} \[?[\w./-]+:\d+\]`)
	reNCCL    = regexp.MustCompile(`^[\w.-]+:\d+:\d+ \[\d+\] NCCL (?:WARN|INFO)`)
	rePrompt  = regexp.MustCompile(`^(?:\(\S+\) )?(?:[\w.-]+@[\w.-]+:\S*\s?)?[$#] \S`)
	reFence   = regexp.MustCompile("^\\s*(?:```|~~~)")
	reHTML    = regexp.MustCompile(`^\s*</?(?:details|summary)\b`)
	reKubectl = regexp.MustCompile(`^Defaulted container "[^"]+" out of:`)
	reCaret   = regexp.MustCompile(`^\s*[~^]+\s*$`)
)

func fieldsOf(kv ...string) Fields {
	fs := make(Fields, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		fs = append(fs, Field{kv[i], kv[i+1]})
	}
	return fs
}

// optFields appends the pairs whose value is non-empty (optional regex groups).
func optFields(fs Fields, kv ...string) Fields {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] != "" {
			fs = append(fs, Field{kv[i], kv[i+1]})
		}
	}
	return fs
}

// exact makes an event of a verbatim kind render back as msg: when the canonical wording
// differs (drift, extra text, padding), the message is kept in Text.
func exact(e Event, msg string) Event {
	if string(appendMessage(make([]byte, 0, len(msg)+16), e, Profile{})) != msg {
		e.Text = msg
	}
	return e
}

// classifyMessage types a message: the text after the header, or a whole line without one.
func classifyMessage(msg string, headed bool) Event {
	if e, ok := sglangMessage(msg); ok {
		return e
	}
	if !headed {
		if e, ok := bareLine(msg); ok {
			return e
		}
	}
	if e, ok := exceptionLine(msg); ok {
		return e
	}
	return Event{Kind: KindUnknown, Text: msg}
}

// sglangMessage recognises SGLang's and uvicorn's own messages by their opening words.
func sglangMessage(m string) (Event, bool) {
	if m == "" {
		return Event{}, false
	}
	var e Event
	ok := false
	switch m[0] {
	case 'P':
		if strings.HasPrefix(m, "Prefill batch") {
			return parseBatch(KindPrefill, m, len("Prefill batch"))
		}
	case 'D':
		if strings.HasPrefix(m, "Decode batch") {
			return parseBatch(KindDecode, m, len("Decode batch"))
		}
	case 'I', 'L', 'U':
		e, ok = loadMessage(m)
	case 'T', 'K', 'M', 'm', 'A':
		e, ok = memoryMessage(m)
	case 'C':
		e, ok = captureMessage(m)
	case 'E', 'W', 'F', 'H', 'S', 'R', 's', 'N', 0xe5:
		e, ok = failureMessage(m)
	}
	if ok {
		return e, true
	}
	return knownInfo(m)
}

// loadMessage recognises the distributed-init and weight-load messages.
func loadMessage(m string) (Event, bool) {
	switch m[0] {
	case 'I':
		switch {
		case strings.HasPrefix(m, "INFO:"):
			return uvicornInfo(m)
		case strings.HasPrefix(m, msgDistInitBegin):
			return exact(Event{Kind: KindDistInitBegin}, m), true
		case strings.HasPrefix(m, msgDistInitEnd):
			if g := reGB.FindStringSubmatch(m[len(msgDistInitEnd):]); g != nil {
				return exact(Event{Kind: KindDistInitEnd, Fields: fieldsOf("mem_usage", g[1])}, m), true
			}
		case strings.HasPrefix(m, msgInitFailed):
			return Event{Kind: KindInitFailed, Text: m[len(msgInitFailed):]}, true
		case strings.HasPrefix(m, "Init torch distributed ends. elapsed="):
			if g := reDistEndE.FindStringSubmatch(m); g != nil {
				return exact(Event{Kind: KindDistInitEnd, Fields: fieldsOf("elapsed", g[1], "mem_usage", g[2])}, m), true
			}
		}
	case 'L':
		switch {
		case strings.HasPrefix(m, msgLoadBegin):
			if g := reGB.FindStringSubmatch(m[len(msgLoadBegin):]); g != nil {
				return exact(Event{Kind: KindLoadBegin, Fields: fieldsOf("avail_mem", g[1])}, m), true
			}
		case strings.HasPrefix(m, msgLoadEnd):
			if g := reLoadEnd.FindStringSubmatch(m); g != nil {
				fs := optFields(fieldsOf("type", g[1], "dtype", g[2], "avail_mem", g[3]), "mem_usage", g[4])
				return exact(Event{Kind: KindLoadEnd, Fields: fs}, m), true
			}
			return Event{Kind: KindLoadEnd, Text: m}, true
		case strings.HasPrefix(m, "Load weight end. elapsed="):
			if g := reLoadEndE.FindStringSubmatch(m); g != nil {
				fs := optFields(fieldsOf("elapsed", g[1], "type", g[2]), "dtype", g[3])
				fs = optFields(append(fs, Field{"avail_mem", g[4]}), "mem_usage", g[5])
				return exact(Event{Kind: KindLoadEnd, Fields: fs}, m), true
			}
			return Event{Kind: KindLoadEnd, Text: m}, true
		case strings.HasPrefix(m, msgShards):
			if g := reShards.FindStringSubmatch(m); g != nil {
				fs := fieldsOf("pct", g[1], "done", g[2], "total", g[3], "elapsed", g[4], "remaining", g[5], "rate", g[6])
				return exact(Event{Kind: KindShardProgress, Fields: fs}, m), true
			}
			return Event{Kind: KindShardProgress, Text: m}, true
		}
	case 'U':
		switch {
		case strings.HasPrefix(m, msgWeightsFormat):
			return Event{Kind: KindWeightsFormat, Text: m[len(msgWeightsFormat):]}, true
		case strings.HasPrefix(m, msgKVDtype):
			return exact(Event{Kind: KindKVDtype, Fields: fieldsOf("dtype", m[len(msgKVDtype):])}, m), true
		}
	}
	return Event{}, false
}

// memoryMessage recognises the KV pool, ready and traceback messages.
func memoryMessage(m string) (Event, bool) {
	switch m[0] {
	case 'T':
		switch {
		case strings.HasPrefix(m, msgKVAvailable):
			if g := reGB.FindStringSubmatch(m[len(msgKVAvailable):]); g != nil {
				return exact(Event{Kind: KindKVAvailable, Fields: fieldsOf("avail_kv", g[1])}, m), true
			}
		case strings.HasPrefix(m, msgReady):
			return exact(Event{Kind: KindReady}, m), true
		case strings.HasPrefix(m, msgTBStart):
			return exact(Event{Kind: KindTracebackStart}, m), true
		case strings.HasPrefix(m, "TokenizerManager watchdog"):
			return watchdog(m)
		}
	case 'K':
		switch {
		case strings.HasPrefix(m, msgKVAlloc):
			if g := reKVAlloc.FindStringSubmatch(m); g != nil {
				fs := optFields(nil, "dtype", g[1], "tokens", g[2])
				fs = append(fs, Field{"k_size", g[3]}, Field{"v_size", g[4]})
				return exact(Event{Kind: KindKVAlloc, Fields: fs}, m), true
			}
			return Event{Kind: KindKVAlloc, Text: m}, true
		case m == msgKilled:
			return Event{Kind: KindKilled}, true
		}
	case 'M':
		if strings.HasPrefix(m, msgPoolEnd) {
			if g := reGB.FindStringSubmatch(m[len(msgPoolEnd):]); g != nil {
				return exact(Event{Kind: KindMemPoolEnd, Fields: fieldsOf("avail_mem", g[1])}, m), true
			}
		}
	case 'm':
		if strings.HasPrefix(m, msgLimits) {
			if g := reLimits.FindStringSubmatch(m); g != nil {
				fs := fieldsOf("max_total_num_tokens", g[1])
				fs = optFields(fs, "chunked_prefill_size", g[2])
				fs = append(fs, Field{"max_prefill_tokens", g[3]}, Field{"max_running_requests", g[4]}, Field{"context_len", g[5]})
				fs = optFields(fs, "available_gpu_mem", g[6])
				return exact(Event{Kind: KindLimits, Fields: fs}, m), true
			}
		}
	case 'A':
		if g := reHiCache.FindStringSubmatch(m); g != nil {
			return exact(Event{Kind: KindHiCacheAlloc, Fields: fieldsOf("size_gb", g[1])}, m), true
		}
	}
	return Event{}, false
}

// captureMessage recognises the CUDA graph capture messages.
func captureMessage(m string) (Event, bool) {
	switch m[0] {
	case 'C':
		switch {
		case strings.HasPrefix(m, msgCGBegin):
			fs := Fields(nil)
			if rest, ok := strings.CutPrefix(m[len(msgCGBegin):], " avail mem="); ok {
				if g := reGB.FindStringSubmatch(rest); g != nil {
					fs = fieldsOf("avail_mem", g[1])
				}
			}
			return exact(Event{Kind: KindCGBegin, Fields: fs}, m), true
		case strings.HasPrefix(m, "Capture npu graph begin") || strings.HasPrefix(m, "Capture piecewise CUDA graph begin"):
			// NPU and piecewise capture phases: the same event, worded differently (kept in Text)
			fs := Fields(nil)
			if i := strings.Index(m, " avail mem="); i >= 0 {
				if g := reGB.FindStringSubmatch(m[i+len(" avail mem="):]); g != nil {
					fs = fieldsOf("avail_mem", g[1])
				}
			}
			return exact(Event{Kind: KindCGBegin, Fields: fs}, m), true
		case strings.HasPrefix(m, msgCGBS):
			return Event{Kind: KindCGBatchSizes, Text: m[len(msgCGBS):]}, true
		case strings.HasPrefix(m, msgCGEnd):
			if g := reCGEnd.FindStringSubmatch(m); g != nil {
				fs := fieldsOf("elapsed", g[1])
				if g[2] != "" {
					fs = append(fs, Field{memKey(g[2]), g[3]}, Field{memKey(g[4]), g[5]})
				}
				return exact(Event{Kind: KindCGEnd, Fields: fs}, m), true
			}
		case strings.HasPrefix(m, msgCGBar):
			if e, ok := cgBar(m); ok {
				return e, true
			}
		default:
			if e, ok := captureLine(m); ok {
				return e, true
			}
		}
	}
	return Event{}, false
}

// memKey is the field key of a printed "mem usage"/"avail mem" label.
func memKey(label string) string {
	if label == "avail mem" {
		return "avail_mem"
	}
	return "mem_usage"
}

// failureMessage recognises the launcher, exception and watchdog messages.
func failureMessage(m string) (Event, bool) {
	switch m[0] {
	case 'E':
		switch {
		case strings.HasPrefix(m, msgTimings):
			return Event{Kind: KindStartupTimings, Text: m[len(msgTimings):]}, true
		case strings.HasPrefix(m, msgDeprecated):
			if g := reDepr.FindStringSubmatch(m); g != nil {
				return exact(Event{Kind: KindDeprecated, Fields: fieldsOf("old", g[1], "new", g[2])}, m), true
			}
		case strings.HasPrefix(m, msgExitCode):
			if g := reExitCode.FindStringSubmatch(m); g != nil {
				return Event{Kind: KindExitCode, Fields: fieldsOf("code", g[1])}, true
			}
		case strings.HasPrefix(m, "ERROR:"):
			if g := reErrno98.FindStringSubmatch(m); g != nil {
				return exact(Event{Kind: KindErrno98, Fields: optFields(nil, "host", g[1], "port", g[2])}, m), true
			}
		}
	case 'W':
		if strings.HasPrefix(m, "Watchdog timeout") {
			return watchdog(m)
		}
	case 'F':
		if strings.HasPrefix(m, "Freezing GC") {
			return Event{Kind: KindFreezeGC, Text: m}, true
		}
	case 'H':
		if g := reHealth.FindStringSubmatch(m); g != nil {
			return exact(Event{Kind: KindHealthFailed, Fields: fieldsOf("seconds", g[1], "tic", g[2], "last_heartbeat", g[3])}, m), true
		}
	case 'S':
		switch {
		case strings.HasPrefix(m, msgSchedExc):
			return Event{Kind: KindSchedulerExc, Text: m[len(msgSchedExc):]}, true
		case strings.HasPrefix(m, "Scheduler hit an exception:"):
			return Event{Kind: KindSchedulerExc, Text: m[len("Scheduler hit an exception:"):]}.withVerbatimPrefix(m), true
		case strings.HasPrefix(m, "SIGQUIT received."):
			return Event{Kind: KindSigquitReceived, Text: m}, true
		case strings.HasPrefix(m, "Scheduler watchdog"):
			return watchdog(m)
		case strings.HasPrefix(m, msgSubproc):
			if g := reSubproc.FindStringSubmatch(m); g != nil {
				return exact(Event{Kind: KindSubprocessCrash, Fields: fieldsOf("name", g[1], "pid", g[2], "code", g[3])}, m), true
			}
		}
	case 'R':
		switch {
		case strings.HasPrefix(m, "Received sigquit from a child proces"):
			return exact(Event{Kind: KindSigquitChild}, m), true
		case strings.HasPrefix(m, "Rank "):
			if g := reRankDead.FindStringSubmatch(m); g != nil {
				return exact(Event{Kind: KindRankDead, Fields: fieldsOf("rank", g[1])}, m), true
			}
		}
	case 's':
		if rest, ok := strings.CutPrefix(m, "server_args="); ok {
			return Event{Kind: KindServerArgs, Text: rest}, true
		}
	case 'N':
		if d, ok := strings.CutPrefix(m, msgNCCL); ok {
			return Event{Kind: KindNCCLError, Text: d}, true
		}
	case 0xe5: // 已杀死, the Chinese locale's "Killed"
		if m == "已杀死" {
			return Event{Kind: KindKilled, Text: m}, true
		}
	}
	return Event{}, false
}
