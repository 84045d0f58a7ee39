package scenarios

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// Compiled is a scenario ready to run: everything fakeserver.Config needs, resolved.
type Compiled struct {
	Name     string
	Profile  sglang.Profile
	Args     sglang.ServerArgs
	Host     gpu.Host
	Timeline replay.Timeline
	Behavior Behavior
	Faults   []fault.Spec
	Env      map[string]string
	Expect   Expect
	Seed     int64
	// Memory is the host-memory verdict of the launch's HiCache (nil without HiCache).
	Memory *sglang.HostCheck
}

// Compile turns a validated scenario into a timeline. seed drives every random choice (phase
// jitter, rank order); the same scenario and seed always give the same timeline.
func Compile(s *Scenario, seed int64) (*Compiled, error) {
	prof, err := sglang.LookupProfile(s.Profile)
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	host, err := s.Host.Resolve()
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
	}
	args, err := parseLaunch(s.Launch.Argv())
	if err != nil {
		return nil, fmt.Errorf("scenario %s: launch.flags: %w", s.Name, err)
	}
	c := &Compiled{Name: s.Name, Profile: prof, Args: args, Host: host, Behavior: s.Server,
		Faults: slices.Clone(s.Faults), Env: s.Env, Expect: s.Expect, Seed: seed}
	switch {
	case s.Timeline.Recorded != nil:
		text, err := s.readRecorded()
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
		tl, err := recordedTimeline(bytes.NewReader(text), s.Timeline.Recorded.Spacing.D())
		if err != nil {
			return nil, fmt.Errorf("scenario %s: recorded log: %w", s.Name, err)
		}
		c.Timeline = tl
	case s.Timeline.Modelled != nil:
		if err := c.model(s.Timeline.Modelled.withDefaults(), seed); err != nil {
			return nil, fmt.Errorf("scenario %s: %w", s.Name, err)
		}
	default:
		return nil, fmt.Errorf("scenario %s has no timeline; validate it first", s.Name)
	}
	if err := c.Timeline.Validate(); err != nil {
		return nil, fmt.Errorf("scenario %s: compiled timeline: %w", s.Name, err)
	}
	return c, nil
}

// parseLaunch parses the flags with SGLang's own argument rules.
func parseLaunch(argv []string) (sglang.ServerArgs, error) {
	a, err := sglang.ParseArgs(argv)
	if err != nil {
		return a, err
	}
	if a.ModelPath == "" {
		return a, fmt.Errorf("--model-path is required (SGLang refuses to start without it)")
	}
	return a, nil
}

func (c *Compiled) model(m Modelled, seed int64) error {
	start, err := time.Parse(startLayout, m.Start)
	if err != nil {
		return err
	}
	a := c.Args
	b := &builder{p: c.Profile, tl: replay.Timeline{Start: start}, jitter: *m.Jitter,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x5ce4a210))}
	defer func() { c.Timeline = b.tl }()
	nr := a.Ranks()
	if nr > max(c.Host.GPUCount, 1) {
		return fmt.Errorf("launch needs %d GPUs (tp × pp × dp) but host has %d", nr, c.Host.GPUCount)
	}
	for r := range nr {
		b.rankIDs = append(b.rankIDs, r)
		switch {
		case nr > 1:
			b.ranks = append(b.ranks, []sglang.Rank{{Name: "TP", N: r}})
		default:
			b.ranks = append(b.ranks, c.Profile.SingleGPURanks())
		}
	}
	ph, md, mem, end := m.Phases, m.Model, m.Memory, m.Ending

	// Launcher.
	if c.Profile.ServeEntrypointWarning {
		b.log(replay.Stderr, false, nil, sglang.ServeWarning("/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", 18))
	}
	b.main(sglang.ServerArgsLine(c.Profile, a))
	b.wait(ph.Boot.D())

	// Distributed init.
	b.all(func(int) sglang.Event { return sglang.DistInitBegin() })
	b.wait(ph.DistInit.D())
	switch end.Kind {
	case EndNCCLError:
		b.traceback(end.Rank, schedFrames, sglang.NCCLError("remote process exited or there was a network error"))
		b.killTree()
		return nil
	case EndFatalAlive:
		// NCCL's own warning, then the error; the launcher stays blocked on the pipe (P10).
		b.raw(sglang.Event{Kind: sglang.KindForeign, Text: fmt.Sprintf("node-0:%d:%d [%d] NCCL WARN NET/Socket : peer 10.0.0.2<43210> closed connection", 4100+end.Rank, 4300+end.Rank, end.Rank)})
		b.traceback(end.Rank, schedFrames, sglang.NCCLError("unhandled system error (run with NCCL_DEBUG=INFO for details)"))
		b.wait(time.Second)
		b.op(replay.OpWedge, 0)
		return nil
	}
	b.all(func(int) sglang.Event { return sglang.DistInitEnd(mem.InitUsageGB) })

	// Weights.
	gpuTotalGB := gbOf(c.Host.GPUMemoryGB)
	freeGB := gpuTotalGB - mem.InitUsageGB - gbOf(mem.HeldGB)
	weightsGB := md.WeightsGB / float64(max(a.TPSize, 1)*max(a.PPSize, 1))
	b.all(func(int) sglang.Event { return sglang.LoadBegin(c.Profile, freeGB) })
	b.all(func(int) sglang.Event { return sglang.WeightsFormat("*.safetensors") })
	oomShard := -1 // weights that do not fit (held GPU memory) fail where they run out
	if weightsGB > freeGB-0.5 {
		oomShard = int(float64(md.Shards) * (freeGB - 0.5) / weightsGB)
	}
	if end.Kind == EndCUDAOOMLoad || end.Kind == EndStallLoad {
		oomShard = md.Shards / 2
		if end.AtShard > 0 {
			oomShard = min(end.AtShard, md.Shards-1)
		}
	}
	var loaded time.Duration
	b.raw(sglang.ShardProgress(0, md.Shards, 0, -1))
	for i := 1; i <= md.Shards; i++ {
		if i-1 == max(oomShard, 0) && oomShard >= 0 {
			if end.Kind == EndStallLoad {
				b.op(replay.OpWedge, 0) // alive, silent, port closed: only a progress watcher notices
				return nil
			}
			b.wait(ph.PerShard.D() / 2)
			b.traceback(end.Rank, schedFrames, sglang.CUDAOOM("torch.OutOfMemoryError", "", 1024, end.Rank, c.Host.GPUMemoryGB, 60.25))
			b.killTree()
			return nil
		}
		d := b.dur(ph.PerShard.D())
		b.t += d
		loaded += d
		rem := time.Duration(float64(loaded) / float64(i) * float64(md.Shards-i))
		b.raw(sglang.ShardProgress(i, md.Shards, loaded, rem))
	}
	availGB := freeGB - weightsGB
	b.all(func(int) sglang.Event { return sglang.LoadEnd(c.Profile, md.Arch, md.Dtype, availGB, weightsGB) })

	// KV pool.
	layout := md.kvLayout(a.TPSize)
	mfs := 0.0
	if a.MemFractionStatic != nil {
		mfs = *a.MemFractionStatic
	}
	pool, perr := sglang.KVPoolSize(sglang.KVPoolInput{GPUFreeBytes: int64(freeGB * float64(sglang.GB)),
		WeightsBytes: int64(weightsGB * float64(sglang.GB)), MemFractionStatic: mfs, BytesPerToken: layout.BytesPerToken()})
	b.all(func(int) sglang.Event { return sglang.KVDtype(md.Dtype) })
	if perr != nil {
		b.traceback(0, schedFrames, sglang.Exception("RuntimeError", sglang.ErrKVPoolDoesNotFit.Error()))
		b.killTree()
		return nil
	}
	if a.MaxTotalTokens != nil && int64(*a.MaxTotalTokens) < pool.Tokens {
		pool.Tokens = int64(*a.MaxTotalTokens)
		pool.Bytes = pool.Tokens * layout.BytesPerToken()
	}
	poolGB := float64(pool.Bytes) / float64(sglang.GB)
	if c.Profile.KVAvailableLine {
		b.all(func(int) sglang.Event { return sglang.KVAvailable(poolGB) })
	}
	b.wait(ph.KVAlloc.D())
	b.all(func(int) sglang.Event {
		return sglang.KVAlloc(c.Profile, md.Dtype, int(pool.Tokens), poolGB/2, poolGB/2)
	})
	availGB -= poolGB
	b.all(func(int) sglang.Event { return sglang.MemPoolEnd(availGB) })

	// CUDA graphs.
	if !a.DisableCUDAGraph {
		maxBS := 256
		if a.CUDAGraphMaxBS != nil {
			maxBS = *a.CUDAGraphMaxBS
		}
		bs := a.CUDAGraphBS
		if len(bs) == 0 {
			bs = DefaultCaptureBS(maxBS)
		}
		b.wait(200 * time.Millisecond)
		b.all(func(int) sglang.Event { return sglang.CGBegin(c.Profile, availGB) })
		if c.Profile.CGBatchSizesLine {
			b.all(func(int) sglang.Event { return sglang.CGBatchSizes(bs) })
		}
		desc := slices.Clone(bs)
		slices.Reverse(desc)
		failAt := -1
		if end.Kind == EndCUDAOOMCapture || end.Kind == EndSM120Kernel {
			failAt = 0
			if end.AtBS > 0 {
				failAt = max(0, slices.Index(desc, end.AtBS))
			}
		}
		var elapsed time.Duration
		cgAvail := func(i int) float64 { return availGB - mem.CaptureUsageGB*float64(i)/float64(len(desc)) }
		b.raw(sglang.CGProgress(c.Profile, desc[0], 0, len(desc), cgAvail(0), 0, -1))
		for i := range desc {
			if i == failAt {
				b.wait(ph.CapturePerBS.D() / 2)
				b.captureFailure(end, c.Host)
				return nil
			}
			d := b.dur(ph.CapturePerBS.D())
			b.t += d
			elapsed += d
			next := desc[min(i+1, len(desc)-1)]
			rem := time.Duration(float64(elapsed) / float64(i+1) * float64(len(desc)-i-1))
			b.raw(sglang.CGProgress(c.Profile, next, i+1, len(desc), cgAvail(i+1), elapsed, rem))
		}
		availGB -= mem.CaptureUsageGB
		b.all(func(int) sglang.Event { return sglang.CGEnd(c.Profile, elapsed, mem.CaptureUsageGB, availGB) })
	}
	chunked := 8192 // §6: auto, 8192 typical on 80–140 GB GPUs
	if a.ChunkedPrefillSize != nil {
		chunked = *a.ChunkedPrefillSize
	}
	maxRun := 2048 // §6: "2048 typical in logs"
	if a.MaxRunningRequests != nil {
		maxRun = *a.MaxRunningRequests
	}
	ctxLen := md.ContextLen
	if a.ContextLength != nil {
		ctxLen = *a.ContextLength
	}
	limits := func(int) sglang.Event {
		return sglang.Limits(c.Profile, sglang.LimitsInfo{MaxTotalTokens: int(pool.Tokens), ChunkedPrefillSize: chunked,
			MaxPrefillTokens: a.MaxPrefillTokens, MaxRunningRequests: maxRun, ContextLen: ctxLen, AvailableGPUMemGB: availGB})
	}
	if c.Profile.LimitsAllRanks {
		b.all(limits)
	} else {
		b.rank(0, limits(0))
	}

	// HiCache host pool: after capture and the limits line (§4.3), on every rank.
	if a.EnableHierarchicalCache {
		done, err := c.hicache(b, a, pool, layout, ph, m.Memory.HostCheck)
		if err != nil || done {
			return err
		}
	}

	// HTTP.
	b.wait(ph.ToBind.D())
	if c.Profile.StartupTimings {
		b.main(sglang.StartupTimings(fmt.Sprintf("load_weight=%.2f, kv_cache_allocation=%.2f, scheduler_e2e=%.2f, tokenizer_e2e=%.2f",
			loaded.Seconds(), ph.KVAlloc.D().Seconds(), b.t.Seconds()-ph.Boot.D().Seconds(), b.t.Seconds())))
	}
	b.main(sglang.UvicornStarted(4000 + int(seed%50000+50000)%50000))
	b.main(sglang.UvicornWaiting())
	b.main(sglang.UvicornComplete())
	if end.Kind == EndErrno98 {
		b.main(sglang.Errno98(a.Host, a.Port))
		b.main(sglang.UvicornShutdown(false))
		b.main(sglang.UvicornShutdown(true))
		// launch_server's finally joins the warmup thread, which polls until it gives up (§5.2).
		b.wait(DefaultWarmupGiveUp)
		b.main(sglang.InitFailed("warmup error: Traceback (most recent call last):"))
		b.raw(sglang.Exception("requests.exceptions.ConnectionError", fmt.Sprintf("HTTPConnectionPool(host='%s', port=%d): Max retries exceeded", a.Host, a.Port)))
		b.wait(100 * time.Millisecond)
		b.op(replay.OpExit, 137)
		return nil
	}
	b.op(replay.OpBind, 0)
	b.main(sglang.UvicornRunning(a.Host, a.Port))

	switch end.Kind {
	case EndWatchdog:
		// The warmup forward never returns; the watchdog fires between 1× and 1.5× its timeout.
		b.wait(c.warmupLatency() / 2)
		b.op(replay.OpWedgeScheduler, 0)
		wd := time.Duration(a.WatchdogTimeout * float64(time.Second))
		if wd <= 0 {
			wd = DefaultWatchdog
		}
		b.t += wd + time.Duration(b.rng.Float64()*0.5*float64(wd))
		b.rank(0, sglang.Watchdog(c.Profile, wd))
		b.wait(5 * time.Second) // §5.2: "a 5 s sleep, then SIGQUIT to the parent"
		b.main(sglang.SigquitReceived(3, "<frame at 0x7f3a2c1e4a40>"))
		b.wait(200 * time.Millisecond)
		b.op(replay.OpExit, 137)
	case EndCrashRunning:
		b.t += c.warmupLatency() + end.After.D()
		if c.Profile.TeardownOnChildCrash {
			b.main(sglang.SubprocessCrash(fmt.Sprintf("scheduler_%d", end.Rank), 5000+end.Rank, -9))
			b.wait(DefaultCrashTeardown / 2)
			b.main(sglang.SigquitReceived(3, "<frame at 0x7f3a2c1e4a40>"))
			b.wait(DefaultCrashTeardown / 2)
			b.op(replay.OpExit, 137)
		} else {
			b.op(replay.OpSchedulerDead, 0)
		}
	}
	return nil
}

// warmupLatency is bind → "fired up": the fake server's model-info poll plus the warmup
// generate (fakeserver defaults: 1 s and 0.3 s).
func (c *Compiled) warmupLatency() time.Duration {
	poll, gen := c.Behavior.WarmupPoll.D(), c.Behavior.WarmupGenerate.D()
	if poll == 0 {
		poll = time.Second
	}
	if gen == 0 {
		gen = 300 * time.Millisecond
	}
	return poll + gen
}

func (b *builder) captureFailure(end Ending, host gpu.Host) {
	frames := [][4]string{
		{schedPy, "2841", "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"},
		{"/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", "1932", "init_cuda_graphs", "self.cuda_graph_runner = CudaGraphRunner(self)"},
	}
	var last sglang.Event
	if end.Kind == EndSM120Kernel {
		last = sglang.Exception("Exception", "Capture cuda graph failed: RMSNorm failed with error code no kernel image is available for execution on the device")
	} else {
		last = sglang.CUDAOOM("Exception", "Capture cuda graph failed: ", 672, end.Rank, host.GPUMemoryGB, 200.75)
	}
	b.traceback(end.Rank, frames, last)
	// CUDA_GRAPH_CAPTURE_FAILED_MSG (cuda_graph_runner.py).
	for _, l := range []string{"Possible solutions:",
		"1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)",
		"2. set --cuda-graph-max-bs to a smaller value (e.g., 16)",
		"3. disable torch compile by not using --enable-torch-compile",
		"4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)",
		"Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose "} {
		b.raw(sglang.TracebackText(l))
	}
	b.killTree()
}

// hicache runs the host pool sizing, the check and the pinning; done reports a launch that ended.
func (c *Compiled) hicache(b *builder, a sglang.ServerArgs, pool sglang.KVPool, layout sglang.KVLayout, ph Phases, hostCheck string) (bool, error) {
	rule, err := sglang.ParseHostCheckRule(hostCheck)
	if err != nil {
		return true, err
	}
	shape := sglang.NewLaunchShape(a, rule)
	shape.KVBytesPerToken, shape.DevicePoolTokens = layout.BytesPerToken(), pool.Tokens
	hp, chk, err := shape.HiCache(c.Host.MemAvailableBytes(), c.Host.CgroupLimitBytes())
	if err != nil {
		return true, err
	}
	c.Memory = &chk
	if !chk.Passed() {
		// The ValueError path (§4.4 outcome 1): each rank raises, the launcher kills its tree.
		for _, r := range chk.Ranks {
			if !r.Pass {
				b.traceback(r.Rank, [][4]string{{"/sgl-workspace/sglang/python/sglang/srt/mem_cache/memory_pool_host.py", "96", "__init__",
					"raise ValueError("}}, sglang.HostMemError(float64(r.Requested)/float64(sglang.GB), float64(r.Available)/float64(sglang.GB)))
			}
		}
		b.killTree()
		return true, nil
	}
	b.all(func(int) sglang.Event { return sglang.HiCacheAlloc(float64(hp.Bytes) / float64(sglang.GB)) })
	rate := ph.HiCachePinGBps * float64(sglang.GB) // bytes per second per rank, ranks in parallel
	if !chk.HostOOM {
		b.wait(time.Duration(float64(hp.Bytes) / rate * float64(time.Second)))
		return false, nil
	}
	// The ranks pin together until the kernel runs out: MemAvailable (or the cgroup limit).
	b.wait(time.Duration(float64(chk.Limit) / (rate * float64(len(chk.Ranks))) * float64(time.Second)))
	if c.Host.CgroupLimitBytes() > 0 && chk.Limit == c.Host.CgroupLimitBytes() {
		// The container is OOMKilled as a whole: no traceback, exit 137 (§4.4, P25, S18).
		b.op(replay.OpExit, 137)
		return true, nil
	}
	// The OOM killer SIGKILLs a scheduler; the launcher sees EOF on its pipe (§4.4 outcome 2).
	b.main(sglang.RankDead(0))
	b.main(sglang.ExitCode(-9))
	b.raw(sglang.TracebackStart())
	for _, e := range sglang.TracebackFrame("/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", 812, "_wait_for_scheduler_ready", "data = scheduler_pipe_readers[i].recv()") {
		b.raw(e)
	}
	b.raw(sglang.Exception("EOFError", ""))
	if c.Profile.RankDiedRuntimeErr {
		b.raw(sglang.RankDiedInit(0, -9))
	}
	b.wait(300 * time.Millisecond)
	b.op(replay.OpExit, 1) // §5.2: scheduler SIGKILLed during startup → 1 [unverified upstream]
	return true, nil
}
