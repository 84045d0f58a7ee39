package scenarios

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// startup is one modelled launch as it is built, stage by stage: the scenario's inputs and
// what each stage leaves for the next. A stage returns done when the launch ended in it.
type startup struct {
	c    *Compiled
	b    *builder
	a    sglang.ServerArgs
	m    Modelled
	seed int64

	freeGB, weightsGB, availGB float64
	loaded                     time.Duration // weight load time
	pool                       sglang.KVPool
	layout                     sglang.KVLayout
}

func (c *Compiled) model(m Modelled, seed int64) error {
	start, err := time.Parse(startLayout, m.Start)
	if err != nil {
		return err
	}
	b := &builder{p: c.Profile, tl: replay.Timeline{Start: start}, jitter: *m.Jitter,
		rng: rand.New(rand.NewPCG(uint64(seed), 0x5ce4a210))}
	defer func() { c.Timeline = b.tl }()
	nr := c.Args.Ranks()
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
	s := &startup{c: c, b: b, a: c.Args, m: m, seed: seed}
	for _, stage := range []func() (bool, error){s.distInit, s.weights, s.kvPool, s.capture, s.limits, s.serve} {
		if done, err := stage(); done || err != nil {
			return err
		}
	}
	return nil
}

// distInit is the launcher's first lines and torch distributed init, where NCCL endings fail.
func (s *startup) distInit() (bool, error) {
	b, c, ph, end := s.b, s.c, s.m.Phases, s.m.Ending
	if c.Profile.ServeEntrypointWarn {
		b.log(replay.Stderr, false, nil, sglang.ServeWarning("/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", 18))
	}
	b.main(sglang.ServerArgsLine(s.a))
	b.wait(ph.Boot.D())
	b.all(func(int) sglang.Event { return sglang.DistInitBegin() })
	b.wait(ph.DistInit.D())
	switch end.Kind {
	case EndNCCLError:
		b.traceback(end.Rank, schedFrames, sglang.NCCLError("remote process exited or there was a network error"))
		b.killTree()
		return true, nil
	case EndFatalAlive:
		// NCCL's own warning, then the error; the launcher stays blocked on the pipe.
		b.raw(sglang.Event{Kind: sglang.KindForeign, Text: fmt.Sprintf("node-0:%d:%d [%d] NCCL WARN NET/Socket : peer 10.0.0.2<43210> closed connection", 4100+end.Rank, 4300+end.Rank, end.Rank)})
		b.traceback(end.Rank, schedFrames, sglang.NCCLError("unhandled system error (run with NCCL_DEBUG=INFO for details)"))
		b.wait(time.Second)
		b.op(replay.OpWedge, 0)
		return true, nil
	}
	b.all(func(int) sglang.Event { return sglang.DistInitEnd(c.Profile, ph.DistInit.D(), s.m.Memory.InitUsageGB) })
	return false, nil
}

// weights loads the shards; weights that do not fit (held GPU memory) fail where they run out.
func (s *startup) weights() (bool, error) {
	b, c, a, ph, md, mem, end := s.b, s.c, s.a, s.m.Phases, s.m.Model, s.m.Memory, s.m.Ending
	gpuTotalGB := gbOf(c.Host.GPUMemoryGB)
	s.freeGB = gpuTotalGB - mem.InitUsageGB - gbOf(mem.HeldGB)
	s.weightsGB = md.WeightsGB / float64(max(a.TPSize, 1)*max(a.PPSize, 1))
	b.all(func(int) sglang.Event { return sglang.LoadBegin(c.Profile, s.freeGB) })
	b.all(func(int) sglang.Event { return sglang.WeightsFormat("*.safetensors") })
	oomShard := -1
	if s.weightsGB > s.freeGB-0.5 {
		oomShard = int(float64(md.Shards) * (s.freeGB - 0.5) / s.weightsGB)
	}
	if end.Kind == EndCUDAOOMLoad || end.Kind == EndStallLoad {
		oomShard = md.Shards / 2
		if end.AtShard > 0 {
			oomShard = min(end.AtShard, md.Shards-1)
		}
	}
	b.raw(sglang.ShardProgress(0, md.Shards, 0, -1))
	for i := 1; i <= md.Shards; i++ {
		if i-1 == max(oomShard, 0) && oomShard >= 0 {
			if end.Kind == EndStallLoad {
				b.op(replay.OpWedge, 0) // alive, silent, port closed: only a progress watcher notices
				return true, nil
			}
			b.wait(ph.PerShard.D() / 2)
			b.traceback(end.Rank, schedFrames, sglang.CUDAOOM("torch.OutOfMemoryError", "", 1024, end.Rank, c.Host.GPUMemoryGB, 60.25))
			b.killTree()
			return true, nil
		}
		d := b.dur(ph.PerShard.D())
		b.t += d
		s.loaded += d
		rem := time.Duration(float64(s.loaded) / float64(i) * float64(md.Shards-i))
		b.raw(sglang.ShardProgress(i, md.Shards, s.loaded, rem))
	}
	s.availGB = s.freeGB - s.weightsGB
	b.all(func(int) sglang.Event {
		return sglang.LoadEnd(c.Profile, md.Arch, md.Dtype, s.loaded, s.availGB, s.weightsGB)
	})
	return false, nil
}

// kvPool sizes and allocates the KV cache.
func (s *startup) kvPool() (bool, error) {
	b, c, a, md := s.b, s.c, s.a, s.m.Model
	s.layout = md.kvLayout(a.TPSize)
	mfs := 0.0
	if a.MemFractionStatic != nil {
		mfs = *a.MemFractionStatic
	}
	pool, perr := sglang.KVPoolSize(sglang.KVPoolInput{GPUFreeBytes: int64(s.freeGB * float64(sglang.GB)),
		WeightsBytes: int64(s.weightsGB * float64(sglang.GB)), MemFractionStatic: mfs, BytesPerToken: s.layout.BytesPerToken()})
	if c.Profile.KVDtypeLine { // log_info_on_rank0
		b.rank(0, sglang.KVDtype(md.Dtype))
	}
	if perr != nil {
		b.traceback(0, schedFrames, sglang.Exception("RuntimeError", sglang.ErrKVPoolDoesNotFit.Error()))
		b.killTree()
		return true, nil
	}
	if a.MaxTotalTokens != nil && int64(*a.MaxTotalTokens) < pool.Tokens {
		pool.Tokens = int64(*a.MaxTotalTokens)
		pool.Bytes = pool.Tokens * s.layout.BytesPerToken()
	}
	s.pool = pool
	poolGB := float64(pool.Bytes) / float64(sglang.GB)
	b.wait(s.m.Phases.KVAlloc.D())
	b.all(func(int) sglang.Event {
		return sglang.KVAlloc(c.Profile, md.Dtype, int(pool.Tokens), poolGB/2, poolGB/2)
	})
	s.availGB -= poolGB
	b.all(func(int) sglang.Event { return sglang.MemPoolEnd(s.availGB) })
	return false, nil
}

// capture records the CUDA graphs, largest batch first, unless --disable-cuda-graph.
func (s *startup) capture() (bool, error) {
	b, c, a, ph, mem, end := s.b, s.c, s.a, s.m.Phases, s.m.Memory, s.m.Ending
	if a.DisableCUDAGraph {
		return false, nil
	}
	maxBS := 256
	if a.CUDAGraphMaxBS != nil {
		maxBS = *a.CUDAGraphMaxBS
	}
	bs := a.CUDAGraphBS
	if len(bs) == 0 {
		bs = DefaultCaptureBS(maxBS)
	}
	b.wait(200 * time.Millisecond)
	b.all(func(int) sglang.Event { return sglang.CGBegin(c.Profile, s.availGB, bs) })
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
	cgAvail := func(i int) float64 { return s.availGB - mem.CaptureUsageGB*float64(i)/float64(len(desc)) }
	b.raw(sglang.CGProgress(c.Profile, desc[0], 0, len(desc), cgAvail(0), 0, -1))
	for i := range desc {
		if i == failAt {
			b.wait(ph.CapturePerBS.D() / 2)
			b.captureFailure(end, c.Host)
			return true, nil
		}
		d := b.dur(ph.CapturePerBS.D())
		b.t += d
		elapsed += d
		next := desc[min(i+1, len(desc)-1)]
		rem := time.Duration(float64(elapsed) / float64(i+1) * float64(len(desc)-i-1))
		b.raw(sglang.CGProgress(c.Profile, next, i+1, len(desc), cgAvail(i+1), elapsed, rem))
	}
	s.availGB -= mem.CaptureUsageGB
	b.all(func(int) sglang.Event { return sglang.CGEnd(c.Profile, elapsed, mem.CaptureUsageGB, s.availGB) })
	return false, nil
}

// limits prints the scheduler's limits line, then pins the HiCache host pool: after capture
// and the limits line, on every rank.
func (s *startup) limits() (bool, error) {
	b, c, a := s.b, s.c, s.a
	chunked := 8192 // auto: 8192 typical on 80–140 GB GPUs
	if a.ChunkedPrefillSize != nil {
		chunked = *a.ChunkedPrefillSize
	}
	maxRun := 2048 // 2048 typical in logs
	if a.MaxRunningRequests != nil {
		maxRun = *a.MaxRunningRequests
	}
	ctxLen := s.m.Model.ContextLen
	if a.ContextLength != nil {
		ctxLen = *a.ContextLength
	}
	limits := func(int) sglang.Event {
		return sglang.Limits(c.Profile, sglang.LimitsInfo{MaxTotalTokens: int(s.pool.Tokens), ChunkedPrefillSize: chunked,
			MaxPrefillTokens: a.MaxPrefillTokens, MaxRunningRequests: maxRun, ContextLen: ctxLen, AvailableGPUMemGB: s.availGB})
	}
	if c.Profile.LimitsAllRanks {
		b.all(limits)
	} else {
		b.rank(0, limits(0))
	}
	if !a.EnableHierarchicalCache {
		return false, nil
	}
	return c.hicache(b, a, s.pool, s.layout, s.m.Phases, s.m.Memory.HostCheck)
}

// serve starts uvicorn, binds the port (or fails to: errno 98) and plays the endings that
// come after the bind.
func (s *startup) serve() (bool, error) {
	b, c, a, ph, end := s.b, s.c, s.a, s.m.Phases, s.m.Ending
	b.wait(ph.ToBind.D())
	b.main(sglang.UvicornStarted(4000 + int(s.seed%50000+50000)%50000))
	b.main(sglang.UvicornWaiting())
	b.main(sglang.UvicornComplete())
	if end.Kind == EndErrno98 {
		b.main(sglang.Errno98(a.Host, a.Port))
		b.main(sglang.UvicornShutdown(false))
		// Until 0.5.2 the lifespan returns at once; from 0.5.9 its finally joins the warmup
		// thread, so "complete" never prints before the warmup's kill.
		if c.Profile.BindFailShutdownDone {
			b.main(sglang.UvicornShutdown(true))
		}
		// The warmup thread polls until it gives up.
		b.wait(DefaultWarmupGiveUp)
		b.main(sglang.InitFailed("warmup error: Traceback (most recent call last):"))
		b.raw(sglang.Exception("requests.exceptions.ConnectionError", fmt.Sprintf("HTTPConnectionPool(host='%s', port=%d): Max retries exceeded", a.Host, a.Port)))
		b.wait(100 * time.Millisecond)
		b.op(replay.OpExit, 137)
		return true, nil
	}
	b.op(replay.OpBind, 0)
	b.main(sglang.UvicornRunning(a.Host, a.Port))
	s.running()
	return true, nil
}

// running plays the endings of a bound server: the warmup that never returns (watchdog) and
// a scheduler that crashes while serving.
func (s *startup) running() {
	b, c, a, end := s.b, s.c, s.a, s.m.Ending
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
		b.wait(5 * time.Second) // a 5 s sleep, then SIGQUIT to the parent
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
}
