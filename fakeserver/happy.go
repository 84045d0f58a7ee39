package fakeserver

import (
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// HappyPath is a short healthy launch for when no scenario is given: a few loading lines,
// the port bound at load, then the live warmup. load is the time to bind; exitAt, when > 0,
// adds an exit with code at that offset (e.g. 137 for an OOM-style ending).
func HappyPath(start time.Time, p sglang.Profile, load time.Duration, exitAt time.Duration, code int) replay.Timeline {
	ranks := p.SingleGPURanks()
	at := func(e sglang.Event) sglang.Event {
		e.Time, e.Ranks = start, ranks
		return e
	}
	step := load / 5
	bs := []int{1, 2, 4, 8}
	tl := replay.Timeline{Start: start}
	tl.Append(
		replay.Entry{At: 0, Event: sglang.Event{Kind: sglang.KindServerArgs, Time: start, Text: "ServerArgs(model_path='qwen/qwen2.5-0.5b-instruct', tp_size=1)"}},
		replay.Entry{At: 0, Event: at(sglang.LoadBegin(p, 78.50))},
		replay.Entry{At: 3 * step, Event: at(sglang.LoadEnd(p, "Qwen2ForCausalLM", "torch.bfloat16", 3*step, 77.41, 1.09))},
		replay.Entry{At: 3 * step, Event: at(sglang.KVAlloc(p, "torch.bfloat16", 4513172, 25.83, 25.83))},
		replay.Entry{At: 3 * step, Event: at(sglang.CGBegin(p, 25.61, bs))},
	)
	if p.CGBatchSizesLine {
		tl.Append(replay.Entry{At: 3 * step, Event: at(sglang.CGBatchSizes(bs))})
	}
	tl.Append(
		replay.Entry{At: load, Event: at(sglang.CGEnd(p, 2*step, 0.31, 25.30))},
		replay.Entry{At: load, Event: at(sglang.Limits(p, sglang.LimitsInfo{MaxTotalTokens: 4513172, ChunkedPrefillSize: 8192,
			MaxPrefillTokens: 16384, MaxRunningRequests: 4096, ContextLen: 32768, AvailableGPUMemGB: 25.30}))},
		replay.Entry{At: load, Op: replay.OpBind},
	)
	if exitAt > 0 {
		tl.Append(replay.Entry{At: exitAt, Op: replay.OpExit, Code: code})
	}
	return tl
}
