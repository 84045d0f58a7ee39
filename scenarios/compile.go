package scenarios

import (
	"bytes"
	"fmt"
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
		// The host-memory check fails: each rank raises ValueError, the launcher kills its tree.
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
		// The container is OOMKilled as a whole: no traceback, exit 137.
		b.op(replay.OpExit, 137)
		return true, nil
	}
	// The check passed but RAM runs out: the OOM killer SIGKILLs a scheduler, and the launcher
	// sees EOF on its pipe.
	if !c.Profile.RankDiedRuntimeErr { // 0.5.10's _wait_for_scheduler_ready raises instead of logging
		b.main(sglang.RankDead(0))
		b.main(sglang.ExitCode(-9))
	}
	b.raw(sglang.TracebackStart())
	for _, e := range sglang.TracebackFrame("/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", 812, "_wait_for_scheduler_ready", "data = scheduler_pipe_readers[i].recv()") {
		b.raw(e)
	}
	b.raw(sglang.Exception("EOFError", ""))
	if c.Profile.RankDiedRuntimeErr {
		b.raw(sglang.RankDiedInit(0, -9))
	}
	b.wait(300 * time.Millisecond)
	b.op(replay.OpExit, 1) // a scheduler SIGKILLed during startup ends the launcher with 1 (inferred from SGLang's code, unverified)
	return true, nil
}
