package sglang

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// UsageExitCode is the status argparse exits with on a bad command line; callers that stand in
// for launch_server exit with it when ParseArgs fails.
const UsageExitCode = 2

// ArgsError is a command-line error worded like argparse's ("error: ..."). Exit with ExitCode.
type ArgsError struct{ Msg string }

func (e *ArgsError) Error() string { return "error: " + e.Msg }

// ExitCode is UsageExitCode.
func (e *ArgsError) ExitCode() int { return UsageExitCode }

// ServerArgs are the launch_server flags incident-replay models, with SGLang's defaults. Pointer
// fields are argparse's None (SGLang derives a value at startup).
type ServerArgs struct {
	ModelPath       string
	TokenizerPath   string
	ServedModelName string
	Host            string
	Port            int
	TrustRemoteCode bool
	Dtype           string
	KVCacheDtype    string
	Quantization    string

	TPSize            int
	DPSize            int
	PPSize            int
	EPSize            int
	AttnCPSize        int
	EnableDPAttention bool
	NNodes            int
	NodeRank          int
	DistInitAddr      string

	MemFractionStatic  *float64
	MaxTotalTokens     *int
	ContextLength      *int
	ChunkedPrefillSize *int
	MaxPrefillTokens   int
	MaxRunningRequests *int
	PageSize           int

	CUDAGraphMaxBS            *int
	CUDAGraphBS               []int
	DisableCUDAGraph          bool
	DisablePiecewiseCUDAGraph bool
	EnableTorchCompile        bool
	DisableRadixCache         bool

	EnableHierarchicalCache bool
	HiCacheRatio            float64
	HiCacheSize             int // GB per rank
	HiCacheWritePolicy      string
	HiCacheIOBackend        string
	HiCacheMemLayout        string
	HiCacheStorageBackend   string

	EnableMetrics      bool
	APIKey             string
	LogLevel           string
	LogLevelHTTP       string
	LogRequests        bool
	DecodeLogInterval  int
	SkipServerWarmup   bool
	WatchdogTimeout    float64
	DistTimeout        *int
	RandomSeed         *int
	AttentionBackend   string
	SpeculativeAlgo    string
	EnableMetricsAllTP bool
}

// DefaultServerArgs returns SGLang's defaults with no model path.
func DefaultServerArgs() ServerArgs {
	return ServerArgs{
		Host: "127.0.0.1", Port: 30000,
		Dtype: "auto", KVCacheDtype: "auto",
		TPSize: 1, DPSize: 1, PPSize: 1, EPSize: 1, AttnCPSize: 1, NNodes: 1,
		MaxPrefillTokens: 16384, PageSize: 1,
		HiCacheRatio: 2.0, HiCacheWritePolicy: "write_through", HiCacheIOBackend: "kernel",
		HiCacheMemLayout: "layer_first",
		LogLevel:         "info", DecodeLogInterval: 40, WatchdogTimeout: 300,
	}
}

type argKind uint8

const (
	argStr argKind = iota
	argInt
	argFloat
	argBool
	argIntList // nargs="+"
	argOptInt  // int or None
	argOptFloat
)

type argSpec struct {
	names   []string
	kind    argKind
	choices []string
	get     func(a *ServerArgs) any // pointer to the field
}

var argSpecs = []argSpec{
	{names: []string{"--model-path", "--model"}, get: func(a *ServerArgs) any { return &a.ModelPath }},
	{names: []string{"--tokenizer-path"}, get: func(a *ServerArgs) any { return &a.TokenizerPath }},
	{names: []string{"--served-model-name"}, get: func(a *ServerArgs) any { return &a.ServedModelName }},
	{names: []string{"--host"}, get: func(a *ServerArgs) any { return &a.Host }},
	{names: []string{"--port"}, kind: argInt, get: func(a *ServerArgs) any { return &a.Port }},
	{names: []string{"--trust-remote-code"}, kind: argBool, get: func(a *ServerArgs) any { return &a.TrustRemoteCode }},
	{names: []string{"--dtype"}, choices: []string{"auto", "half", "float16", "bfloat16", "float", "float32"}, get: func(a *ServerArgs) any { return &a.Dtype }},
	{names: []string{"--kv-cache-dtype"}, get: func(a *ServerArgs) any { return &a.KVCacheDtype }},
	{names: []string{"--quantization"}, get: func(a *ServerArgs) any { return &a.Quantization }},
	{names: []string{"--tp-size", "--tp", "--tensor-parallel-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.TPSize }},
	{names: []string{"--dp-size", "--dp", "--data-parallel-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.DPSize }},
	{names: []string{"--pp-size", "--pipeline-parallel-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.PPSize }},
	{names: []string{"--ep-size", "--ep", "--expert-parallel-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.EPSize }},
	{names: []string{"--attn-cp-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.AttnCPSize }},
	{names: []string{"--enable-dp-attention"}, kind: argBool, get: func(a *ServerArgs) any { return &a.EnableDPAttention }},
	{names: []string{"--nnodes"}, kind: argInt, get: func(a *ServerArgs) any { return &a.NNodes }},
	{names: []string{"--node-rank"}, kind: argInt, get: func(a *ServerArgs) any { return &a.NodeRank }},
	{names: []string{"--dist-init-addr"}, get: func(a *ServerArgs) any { return &a.DistInitAddr }},
	{names: []string{"--mem-fraction-static"}, kind: argOptFloat, get: func(a *ServerArgs) any { return &a.MemFractionStatic }},
	{names: []string{"--max-total-tokens"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.MaxTotalTokens }},
	{names: []string{"--context-length"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.ContextLength }},
	{names: []string{"--chunked-prefill-size"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.ChunkedPrefillSize }},
	{names: []string{"--max-prefill-tokens"}, kind: argInt, get: func(a *ServerArgs) any { return &a.MaxPrefillTokens }},
	{names: []string{"--max-running-requests"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.MaxRunningRequests }},
	{names: []string{"--page-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.PageSize }},
	{names: []string{"--cuda-graph-max-bs"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.CUDAGraphMaxBS }},
	{names: []string{"--cuda-graph-bs"}, kind: argIntList, get: func(a *ServerArgs) any { return &a.CUDAGraphBS }},
	{names: []string{"--disable-cuda-graph"}, kind: argBool, get: func(a *ServerArgs) any { return &a.DisableCUDAGraph }},
	{names: []string{"--disable-piecewise-cuda-graph"}, kind: argBool, get: func(a *ServerArgs) any { return &a.DisablePiecewiseCUDAGraph }},
	{names: []string{"--enable-torch-compile"}, kind: argBool, get: func(a *ServerArgs) any { return &a.EnableTorchCompile }},
	{names: []string{"--disable-radix-cache"}, kind: argBool, get: func(a *ServerArgs) any { return &a.DisableRadixCache }},
	{names: []string{"--enable-hierarchical-cache"}, kind: argBool, get: func(a *ServerArgs) any { return &a.EnableHierarchicalCache }},
	{names: []string{"--hicache-ratio"}, kind: argFloat, get: func(a *ServerArgs) any { return &a.HiCacheRatio }},
	{names: []string{"--hicache-size"}, kind: argInt, get: func(a *ServerArgs) any { return &a.HiCacheSize }},
	{names: []string{"--hicache-write-policy"}, choices: []string{"write_back", "write_through", "write_through_selective"}, get: func(a *ServerArgs) any { return &a.HiCacheWritePolicy }},
	{names: []string{"--hicache-io-backend"}, choices: []string{"direct", "kernel", "kernel_ascend"}, get: func(a *ServerArgs) any { return &a.HiCacheIOBackend }},
	{names: []string{"--hicache-mem-layout"}, choices: []string{"layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head"}, get: func(a *ServerArgs) any { return &a.HiCacheMemLayout }},
	{names: []string{"--hicache-storage-backend"}, choices: []string{"file", "mooncake", "hf3fs", "nixl", "aibrix", "dynamic", "eic"}, get: func(a *ServerArgs) any { return &a.HiCacheStorageBackend }},
	{names: []string{"--enable-metrics"}, kind: argBool, get: func(a *ServerArgs) any { return &a.EnableMetrics }},
	{names: []string{"--enable-metrics-for-all-schedulers"}, kind: argBool, get: func(a *ServerArgs) any { return &a.EnableMetricsAllTP }},
	{names: []string{"--api-key"}, get: func(a *ServerArgs) any { return &a.APIKey }},
	{names: []string{"--log-level"}, choices: []string{"debug", "info", "warning", "error", "critical"}, get: func(a *ServerArgs) any { return &a.LogLevel }},
	{names: []string{"--log-level-http"}, get: func(a *ServerArgs) any { return &a.LogLevelHTTP }},
	{names: []string{"--log-requests"}, kind: argBool, get: func(a *ServerArgs) any { return &a.LogRequests }},
	{names: []string{"--decode-log-interval"}, kind: argInt, get: func(a *ServerArgs) any { return &a.DecodeLogInterval }},
	{names: []string{"--skip-server-warmup"}, kind: argBool, get: func(a *ServerArgs) any { return &a.SkipServerWarmup }},
	{names: []string{"--watchdog-timeout"}, kind: argFloat, get: func(a *ServerArgs) any { return &a.WatchdogTimeout }},
	{names: []string{"--dist-timeout"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.DistTimeout }},
	{names: []string{"--random-seed"}, kind: argOptInt, get: func(a *ServerArgs) any { return &a.RandomSeed }},
	{names: []string{"--attention-backend"}, get: func(a *ServerArgs) any { return &a.AttentionBackend }},
	{names: []string{"--speculative-algorithm"}, get: func(a *ServerArgs) any { return &a.SpeculativeAlgo }},
}

var argIndex = func() map[string]*argSpec {
	m := map[string]*argSpec{}
	for i := range argSpecs {
		for _, n := range argSpecs[i].names {
			m[n] = &argSpecs[i]
		}
	}
	return m
}()

func (s *argSpec) label() string { return strings.Join(s.names, "/") }

// ParseArgs parses launch_server flags (without the program name) the way argparse does:
// "--flag value" and "--flag=value", store_true booleans, all unrecognized arguments reported
// together. Prefix abbreviations are not accepted. Errors are *ArgsError.
func ParseArgs(argv []string) (ServerArgs, error) {
	a := DefaultServerArgs()
	var unknown []string
	seenModel := false
	for i := 0; i < len(argv); i++ {
		tok := argv[i]
		name, val, hasVal := tok, "", false
		if strings.HasPrefix(tok, "--") {
			name, val, hasVal = strings.Cut(tok, "=")
		}
		spec, ok := argIndex[name]
		if !ok {
			unknown = append(unknown, tok)
			continue
		}
		if spec.kind == argBool {
			if hasVal {
				return a, &ArgsError{fmt.Sprintf("argument %s: ignored explicit argument %s", spec.label(), pyRepr(val))}
			}
			*spec.get(&a).(*bool) = true
			continue
		}
		var vals []string
		if hasVal {
			vals = []string{val}
		} else {
			for i+1 < len(argv) && !looksLikeFlag(argv[i+1]) {
				i++
				vals = append(vals, argv[i])
				if spec.kind != argIntList {
					break
				}
			}
		}
		if len(vals) == 0 {
			if spec.kind == argIntList {
				return a, &ArgsError{fmt.Sprintf("argument %s: expected at least one argument", spec.label())}
			}
			return a, &ArgsError{fmt.Sprintf("argument %s: expected one argument", spec.label())}
		}
		if err := spec.set(&a, vals); err != nil {
			return a, err
		}
		if spec.names[0] == "--model-path" {
			seenModel = true
		}
	}
	if len(unknown) > 0 {
		return a, &ArgsError{"unrecognized arguments: " + strings.Join(unknown, " ")}
	}
	if !seenModel {
		return a, &ArgsError{"the following arguments are required: --model-path/--model"}
	}
	return a, nil
}

// looksLikeFlag mirrors argparse: "-x..." is an option unless it parses as a negative number.
func looksLikeFlag(s string) bool {
	if !strings.HasPrefix(s, "-") || s == "-" {
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err != nil
}

func (s *argSpec) set(a *ServerArgs, vals []string) error {
	bad := func(typ, v string) error {
		return &ArgsError{fmt.Sprintf("argument %s: invalid %s value: %s", s.label(), typ, pyRepr(v))}
	}
	v := vals[0]
	switch p := s.get(a).(type) {
	case *string:
		if len(s.choices) > 0 && !contains(s.choices, v) {
			q := make([]string, len(s.choices))
			for i, c := range s.choices {
				q[i] = pyRepr(c)
			}
			return &ArgsError{fmt.Sprintf("argument %s: invalid choice: %s (choose from %s)", s.label(), pyRepr(v), strings.Join(q, ", "))}
		}
		*p = v
	case *int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return bad("int", v)
		}
		*p = n
	case **int:
		n, err := strconv.Atoi(v)
		if err != nil {
			return bad("int", v)
		}
		*p = &n
	case *float64:
		f, err := parsePyFloat(v)
		if err != nil {
			return bad("float", v)
		}
		*p = f
	case **float64:
		f, err := parsePyFloat(v)
		if err != nil {
			return bad("float", v)
		}
		*p = &f
	case *[]int:
		out := make([]int, 0, len(vals))
		for _, x := range vals {
			n, err := strconv.Atoi(x)
			if err != nil {
				return bad("int", x)
			}
			out = append(out, n)
		}
		*p = out
	}
	return nil
}

// parsePyFloat accepts what Python's float() does for finite flag values; NaN and infinities
// are refused because no SGLang flag means anything with them.
func parsePyFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || f != f || f > 1e308 || f < -1e308 || strings.ContainsAny(v, "xXpP_") {
		return 0, fmt.Errorf("invalid float %q", v)
	}
	return f, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// Ranks is the number of scheduler processes across all nodes, each of which prints per-rank
// lines and allocates its own HiCache host pool: tp × pp, times dp when DP runs separate
// replicas (without --enable-dp-attention; with it, DP ranks share the TP group). EP and
// attention-CP split work inside the TP group and add no processes.
func (a ServerArgs) Ranks() int {
	n := max(a.TPSize, 1) * max(a.PPSize, 1)
	if a.DPSize > 1 && !a.EnableDPAttention {
		n *= a.DPSize
	}
	return n
}

// RanksPerNode is Ranks divided over --nnodes (the ranks one host pays HiCache memory for).
func (a ServerArgs) RanksPerNode() int {
	nn := max(a.NNodes, 1)
	return max(a.Ranks()/nn, 1)
}

// ServedName is --served-model-name, defaulting to the model path (the /v1/models id).
func (a ServerArgs) ServedName() string {
	if a.ServedModelName != "" {
		return a.ServedModelName
	}
	return a.ModelPath
}

// URL is the base URL SGLang's own warmup uses: http://host:port, IPv6 hosts bracketed.
func (a ServerArgs) URL() string {
	return "http://" + net.JoinHostPort(a.Host, strconv.Itoa(a.Port))
}
