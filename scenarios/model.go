package scenarios

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// Modelled builds a startup from the launch flags and the host: phase durations from rates,
// memory from the model's size and the GPU, and the ending from what does not fit (or from
// an injected failure). Every field has a sourced default; zero means "use the default".
type Modelled struct {
	// Start is the scenario epoch, "2006-01-02 15:04:05" (the first log line's stamp).
	Start  string       `yaml:"start,omitempty" json:"start,omitempty"`
	Model  ModelSpec    `yaml:"model,omitempty" json:"model,omitempty"`
	Phases Phases       `yaml:"phases,omitempty" json:"phases,omitempty"`
	Memory MemoryParams `yaml:"memory,omitempty" json:"memory,omitempty"`
	Ending Ending       `yaml:"ending,omitempty" json:"ending,omitempty"`
	// Jitter is the relative spread of each phase duration (seeded), default 0.02.
	Jitter *float64 `yaml:"jitter,omitempty" json:"jitter,omitempty"`
}

// ModelSpec is the checkpoint being served. Defaults describe a Qwen2.5-7B-class model.
type ModelSpec struct {
	Arch      string  `yaml:"arch,omitempty" json:"arch,omitempty"`             // printed as Load weight end type=
	Dtype     string  `yaml:"dtype,omitempty" json:"dtype,omitempty"`           // torch.bfloat16
	WeightsGB float64 `yaml:"weights_gb,omitempty" json:"weights_gb,omitempty"` // whole checkpoint, decimal GB, split over TP
	Shards    int     `yaml:"shards,omitempty" json:"shards,omitempty"`         // safetensors files
	Layers    int     `yaml:"layers,omitempty" json:"layers,omitempty"`
	// MHA/GQA KV layout; or MLA (DeepSeek/Kimi) with kv_lora_rank + qk_rope_head_dim.
	KVHeads       int  `yaml:"kv_heads,omitempty" json:"kv_heads,omitempty"`
	HeadDim       int  `yaml:"head_dim,omitempty" json:"head_dim,omitempty"`
	MLA           bool `yaml:"mla,omitempty" json:"mla,omitempty"`
	KVLoraRank    int  `yaml:"kv_lora_rank,omitempty" json:"kv_lora_rank,omitempty"`
	QKRopeHeadDim int  `yaml:"qk_rope_head_dim,omitempty" json:"qk_rope_head_dim,omitempty"`
	ContextLen    int  `yaml:"context_len,omitempty" json:"context_len,omitempty"`
}

// Phases are startup durations and rates.
type Phases struct {
	// Boot is launch to "Init torch distributed begin." (imports, process spawn).
	Boot Duration `yaml:"boot,omitempty" json:"boot,omitempty"`
	// DistInit is "Init torch distributed begin." to "ends.".
	DistInit Duration `yaml:"dist_init,omitempty" json:"dist_init,omitempty"`
	// PerShard is the time to load one safetensors shard (one tqdm line each).
	PerShard Duration `yaml:"per_shard,omitempty" json:"per_shard,omitempty"`
	// KVAlloc is the KV pool allocation.
	KVAlloc Duration `yaml:"kv_alloc,omitempty" json:"kv_alloc,omitempty"`
	// CapturePerBS is the CUDA-graph capture time per batch size.
	CapturePerBS Duration `yaml:"capture_per_bs,omitempty" json:"capture_per_bs,omitempty"`
	// HiCachePinGBps is how fast one rank pins its host pool, decimal GB per second.
	HiCachePinGBps float64 `yaml:"hicache_pin_gbps,omitempty" json:"hicache_pin_gbps,omitempty"`
	// ToBind is the last scheduler line to uvicorn binding the port.
	ToBind Duration `yaml:"to_bind,omitempty" json:"to_bind,omitempty"`
}

// MemoryParams tune the memory model (sglang/memory.go does the arithmetic).
type MemoryParams struct {
	// InitUsageGB is GPU memory used by torch/NCCL init ("Init torch distributed ends. mem usage").
	InitUsageGB float64 `yaml:"init_usage_gb,omitempty" json:"init_usage_gb,omitempty"`
	// CaptureUsageGB is GPU memory the CUDA graphs take.
	CaptureUsageGB float64 `yaml:"capture_usage_gb,omitempty" json:"capture_usage_gb,omitempty"`
	// HeldGB is GPU memory (per GPU, GiB) still held by a dead launch's contexts.
	HeldGB float64 `yaml:"held_gb,omitempty" json:"held_gb,omitempty"`
	// HostCheck is SGLang's HiCache host check: "per-rank" (before PR #35540) or "divided-per-host".
	HostCheck string `yaml:"host_check,omitempty" json:"host_check,omitempty"`
}

// EndingKind is an injected failure; "" lets the memory model decide (ready, or what did not fit).
type EndingKind string

// Injected endings.
const (
	EndAuto           EndingKind = ""
	EndNCCLError      EndingKind = "nccl-error"       // dist init: RuntimeError NCCL error → sigquit → 137
	EndFatalAlive     EndingKind = "fatal-but-alive"  // dist init: NCCL error printed, the launcher never notices; port never opens
	EndCUDAOOMLoad    EndingKind = "cuda-oom-load"    // a shard load raises torch.OutOfMemoryError → 137
	EndStallLoad      EndingKind = "stall-load"       // shard progress stops at at_shard and never resumes
	EndCUDAOOMCapture EndingKind = "cuda-oom-capture" // capture raises "Capture cuda graph failed: CUDA out of memory" → 137
	EndSM120Kernel    EndingKind = "sm120-kernel"     // capture raises "no kernel image is available" on SM120 → 137
	EndErrno98        EndingKind = "errno98"          // uvicorn cannot bind after loading; the warmup thread gives up → 137
	EndWatchdog       EndingKind = "watchdog"         // the warmup forward hangs; the watchdog fires after watchdog-timeout → 137
	EndCrashRunning   EndingKind = "crash-running"    // a scheduler dies after ready: era C teardown (137), A/B zombie
)

// EndingKinds lists the injectable endings.
func EndingKinds() []EndingKind {
	return []EndingKind{EndNCCLError, EndFatalAlive, EndCUDAOOMLoad, EndStallLoad, EndCUDAOOMCapture, EndSM120Kernel, EndErrno98, EndWatchdog, EndCrashRunning}
}

// Ending injects a failure.
type Ending struct {
	Kind EndingKind `yaml:"kind,omitempty" json:"kind,omitempty"`
	// AtShard is the shard being loaded when cuda-oom-load or stall-load strikes (default: half).
	AtShard int `yaml:"at_shard,omitempty" json:"at_shard,omitempty"`
	// AtBS is the batch size being captured when a capture failure strikes (default: the largest).
	AtBS int `yaml:"at_bs,omitempty" json:"at_bs,omitempty"`
	// After is the delay after ready for crash-running.
	After Duration `yaml:"after,omitempty" json:"after,omitempty"`
	// Rank is the failing rank (default 0).
	Rank int `yaml:"rank,omitempty" json:"rank,omitempty"`
}

// Defaults, each with its source. Phase numbers are from a real single-GPU SGLang startup
// log unless noted.
const (
	DefaultBoot           = 4 * time.Second         // estimate: python imports + spawn before the first scheduler line
	DefaultDistInit       = 2 * time.Second         // estimate
	DefaultPerShard       = 1330 * time.Millisecond // weight loading: 30 shards in 00:40, "1.33s/it"
	DefaultKVAlloc        = 440 * time.Millisecond  // "Engine startup timings (s): ... kv_cache_allocation=0.44"
	DefaultCapturePerBS   = 316 * time.Millisecond  // CUDA graph capture: 36 batch sizes in 11.39 s
	DefaultHiCachePinGBps = 10.0                    // estimate: "pinning a large host pool takes seconds" (sglang #38156)
	DefaultToBind         = 600 * time.Millisecond  // estimate: scheduler ready → uvicorn bind
	DefaultJitter         = 0.02                    // estimate: run-to-run spread of a phase
	DefaultInitUsageGB    = 1.96                    // "Init torch distributed ends. mem usage=1.96 GB"
	DefaultCaptureUsageGB = 1.00                    // "Capture cuda graph end. ... mem usage=1.00 GB"
	DefaultWatchdog       = 300 * time.Second       // SGLang's --watchdog-timeout default, 300 s
	DefaultWarmupGiveUp   = 120 * time.Second       // warmup polls model info once a second, 120 times, then "Initialization failed"
	DefaultCrashTeardown  = 1 * time.Second         // era C SubprocessWatchdog polls every 1 s (sglang #18421)
	defaultStart          = "2026-02-24 11:18:00"   // incident 1 launched at about 11:18
	startLayout           = "2006-01-02 15:04:05"
)

// defaultModel is a Qwen2.5-7B-class checkpoint: 28 layers, 4 KV heads of 128 (Qwen2.5 config),
// ~15.2 GB of bf16 weights in 4 shards, 32768 context.
var defaultModel = ModelSpec{Arch: "Qwen2ForCausalLM", Dtype: "torch.bfloat16", WeightsGB: 15.2, Shards: 4,
	Layers: 28, KVHeads: 4, HeadDim: 128, ContextLen: 32768}

// DefaultCaptureBS is SGLang's capture list up to --cuda-graph-max-bs 256 (its log prints
// "[1, 2, 4, 8, 12, 16, 24, 32, 40, ..., 256]": 36 sizes).
func DefaultCaptureBS(maxBS int) []int {
	bs := []int{1, 2, 4, 8, 12, 16, 24, 32}
	for b := 40; b <= 256; b += 8 {
		bs = append(bs, b)
	}
	return slices.DeleteFunc(bs, func(b int) bool { return b > maxBS })
}

type problem struct{ path, msg, hint string }

func (m *Modelled) problems() []problem {
	var ps []problem
	if m.Start != "" {
		if _, err := time.Parse(startLayout, m.Start); err != nil {
			ps = append(ps, problem{".start", fmt.Sprintf("start %q is not a timestamp", m.Start), "write it as in the log header: 2026-02-24 11:18:00"})
		}
	}
	md := m.Model
	for _, c := range []struct {
		name string
		v    float64
	}{{"weights_gb", md.WeightsGB}, {"shards", float64(md.Shards)}, {"layers", float64(md.Layers)}, {"kv_heads", float64(md.KVHeads)},
		{"head_dim", float64(md.HeadDim)}, {"context_len", float64(md.ContextLen)}, {"kv_lora_rank", float64(md.KVLoraRank)}} {
		limit, name := float64(MaxCount), "MaxCount"
		if c.name == "context_len" {
			limit, name = MaxContextLen, "MaxContextLen"
		}
		switch {
		case c.v < 0:
			ps = append(ps, problem{".model." + c.name, c.name + " is negative", "omit it for the default"})
		case c.name != "weights_gb" && c.v > limit:
			ps = append(ps, problem{".model." + c.name, fmt.Sprintf("%s %.0f: over the limit %s = %.0f", c.name, c.v, name, limit), "omit it for the default"})
		}
	}
	if md.WeightsGB > 1e6 {
		ps = append(ps, problem{".model.weights_gb", fmt.Sprintf("weights_gb %g: over the limit of 1000000 GB", md.WeightsGB), "the whole checkpoint in decimal GB, e.g. 15.2"})
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"at_shard", m.Ending.AtShard}, {"at_bs", m.Ending.AtBS}, {"rank", m.Ending.Rank}, {"qk_rope_head_dim", md.QKRopeHeadDim}} {
		path := ".ending." + c.name
		if c.name == "qk_rope_head_dim" {
			path = ".model." + c.name
		}
		if c.v < 0 || c.v > MaxCount {
			ps = append(ps, problem{path, fmt.Sprintf("%s %d: outside 0..MaxCount = %d", c.name, c.v, MaxCount), "omit it for the default"})
		}
	}
	if md.MLA && md.KVLoraRank == 0 {
		ps = append(ps, problem{".model.kv_lora_rank", "mla needs kv_lora_rank", "DeepSeek-V3/Kimi-K2 use kv_lora_rank: 512, qk_rope_head_dim: 64"})
	}
	if m.Phases.HiCachePinGBps < 0 {
		ps = append(ps, problem{".phases.hicache_pin_gbps", "hicache_pin_gbps is negative", "e.g. 10"})
	}
	if _, err := sglang.ParseHostCheckRule(m.Memory.HostCheck); err != nil {
		ps = append(ps, problem{".memory.host_check", fmt.Sprintf("unknown host_check %q", m.Memory.HostCheck),
			fmt.Sprintf("%s (before sglang PR #35540) or %s", sglang.CheckPerRank, sglang.CheckDividedPerHost)})
	}
	if m.Memory.HeldGB < 0 {
		ps = append(ps, problem{".memory.held_gb", "held_gb is negative", "GiB per GPU still held by dead contexts"})
	}
	if m.Ending.Kind != EndAuto && !slices.Contains(EndingKinds(), m.Ending.Kind) {
		ps = append(ps, problem{".ending.kind", fmt.Sprintf("unknown ending %q", m.Ending.Kind), fmt.Sprintf("one of %v, or omit it to let the memory model decide", EndingKinds())})
	}
	if j := m.Jitter; j != nil && (*j < 0 || *j > 0.5) {
		ps = append(ps, problem{".jitter", fmt.Sprintf("jitter %g is outside 0..0.5", *j), "a relative spread such as 0.02"})
	}
	return ps
}

// withDefaults returns a copy with every zero field set to its default.
func (m Modelled) withDefaults() Modelled {
	if m.Start == "" {
		m.Start = defaultStart
	}
	d := defaultModel
	md := &m.Model
	if md.Arch == "" {
		md.Arch = d.Arch
	}
	if md.Dtype == "" {
		md.Dtype = d.Dtype
	}
	if md.WeightsGB == 0 {
		md.WeightsGB = d.WeightsGB
	}
	if md.Shards == 0 {
		md.Shards = d.Shards
	}
	if md.Layers == 0 {
		md.Layers = d.Layers
	}
	if !md.MLA && md.KVHeads == 0 {
		md.KVHeads, md.HeadDim = d.KVHeads, d.HeadDim
	}
	if md.ContextLen == 0 {
		md.ContextLen = d.ContextLen
	}
	p := &m.Phases
	setDur(&p.Boot, DefaultBoot)
	setDur(&p.DistInit, DefaultDistInit)
	setDur(&p.PerShard, DefaultPerShard)
	setDur(&p.KVAlloc, DefaultKVAlloc)
	setDur(&p.CapturePerBS, DefaultCapturePerBS)
	setDur(&p.ToBind, DefaultToBind)
	if p.HiCachePinGBps == 0 {
		p.HiCachePinGBps = DefaultHiCachePinGBps
	}
	if m.Memory.InitUsageGB == 0 {
		m.Memory.InitUsageGB = DefaultInitUsageGB
	}
	if m.Memory.CaptureUsageGB == 0 {
		m.Memory.CaptureUsageGB = DefaultCaptureUsageGB
	}
	if m.Jitter == nil {
		j := DefaultJitter
		m.Jitter = &j
	}
	return m
}

func setDur(d *Duration, def time.Duration) {
	if *d == 0 {
		*d = Duration(def)
	}
}

// kvLayout is the model's KV cells per token on one rank.
func (md ModelSpec) kvLayout(tp int) sglang.KVLayout {
	return sglang.KVLayout{Layers: md.Layers, DTypeBytes: dtypeBytes(md.Dtype), KVHeads: md.KVHeads, HeadDim: md.HeadDim, TP: tp,
		MLA: md.MLA, KVLoraRank: md.KVLoraRank, QKRopeHeadDim: md.QKRopeHeadDim}
}

func dtypeBytes(dtype string) int {
	switch dtype {
	case "torch.float8_e4m3fn", "torch.float8_e5m2", "fp8":
		return 1
	case "torch.float32":
		return 4
	}
	return 2
}

// builder accumulates a timeline at a moving cursor.
type builder struct {
	p       sglang.Profile
	tl      replay.Timeline
	t       time.Duration
	rng     *rand.Rand
	jitter  float64
	ranks   [][]sglang.Rank
	rankIDs []int
}

func (b *builder) dur(d time.Duration) time.Duration {
	if b.jitter == 0 || d == 0 {
		return d
	}
	f := 1 + b.jitter*math.Max(-2.5, math.Min(2.5, b.rng.NormFloat64()))
	return time.Duration(float64(d) * f).Round(time.Millisecond)
}

func (b *builder) wait(d time.Duration) { b.t += b.dur(d) }

// main logs a launcher (no rank) line.
func (b *builder) main(e sglang.Event) { b.log(replay.Stdout, true, nil, e) }

// raw logs a header-less line (tqdm, traceback bodies).
func (b *builder) raw(e sglang.Event) { b.log(replay.Stdout, false, nil, e) }

// rank logs a line of one scheduler.
func (b *builder) rank(r int, e sglang.Event) { b.log(replay.Stdout, true, b.ranks[r], e) }

// all logs a per-rank line once per rank, ranks in a seeded order (real logs interleave them).
func (b *builder) all(mk func(r int) sglang.Event) {
	order := slices.Clone(b.rankIDs)
	b.rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	for _, r := range order {
		b.rank(r, mk(r))
	}
}

func (b *builder) log(s replay.Stream, header bool, ranks []sglang.Rank, e sglang.Event) {
	if header {
		e.Time = b.tl.Start.Add(b.t)
		e.Ranks = ranks
	}
	b.tl.Append(replay.Entry{At: b.t, Op: replay.OpLog, Stream: replay.StreamFor(b.p, e, s), Event: e})
}

func (b *builder) op(op replay.Op, code int) {
	b.tl.Append(replay.Entry{At: b.t, Op: op, Code: code})
}

// traceback writes a scheduler exception: the headed opening line, frames, the exception.
func (b *builder) traceback(r int, frames [][4]string, last sglang.Event) {
	b.rank(r, sglang.SchedulerException())
	for _, f := range frames {
		var line int
		fmt.Sscan(f[1], &line)
		for _, e := range sglang.TracebackFrame(f[0], line, f[2], f[3]) {
			b.raw(e)
		}
	}
	b.raw(last)
}

// killTree is the launch-phase sigquit path: the launcher logs it and SIGKILLs its tree (137).
func (b *builder) killTree() {
	b.wait(50 * time.Millisecond)
	b.main(sglang.SigquitChild(b.p))
	b.wait(200 * time.Millisecond)
	b.op(replay.OpExit, 137)
}

const schedPy = "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py"

var schedFrames = [][4]string{
	{schedPy, "2841", "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"},
}

// gbOf converts GiB (gpu package units) to decimal GB (SGLang's log units).
func gbOf(gib float64) float64 { return gib * float64(gpu.GiB) / float64(sglang.GB) }
