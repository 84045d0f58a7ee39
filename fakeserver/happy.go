package fakeserver

import (
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// HappyPath is a short healthy launch for when no scenario is given: a few loading lines,
// the port bound at load, then the live warmup. load is the time to bind; exitAt, when > 0,
// adds an exit with code at that offset (e.g. 137 for an OOM-style ending).
func HappyPath(start time.Time, p sglang.Profile, load time.Duration, exitAt time.Duration, code int) replay.Timeline {
	ranks := p.SingleGPURanks()
	ev := func(k sglang.Kind, fs ...string) sglang.Event {
		e := sglang.Event{Kind: k, Time: start, Ranks: ranks}
		for i := 0; i+1 < len(fs); i += 2 {
			e.Fields = append(e.Fields, sglang.Field{Key: fs[i], Value: fs[i+1]})
		}
		return e
	}
	step := load / 5
	tl := replay.Timeline{Start: start}
	tl.Append(
		replay.Entry{At: 0, Event: sglang.Event{Kind: sglang.KindServerArgs, Time: start, Text: "ServerArgs(model_path='qwen/qwen2.5-0.5b-instruct', tp_size=1)"}},
		replay.Entry{At: 0, Event: ev(sglang.KindLoadBegin, "avail_mem", "78.50")},
		replay.Entry{At: 3 * step, Event: ev(sglang.KindLoadEnd, "type", "Qwen2ForCausalLM", "dtype", "torch.bfloat16", "avail_mem", "77.41", "mem_usage", "1.09")},
		replay.Entry{At: 3 * step, Event: ev(sglang.KindKVAlloc, "tokens", "4513172", "k_size", "25.83", "v_size", "25.83")},
		replay.Entry{At: 3 * step, Event: ev(sglang.KindCGBegin, "avail_mem", "25.61")},
		replay.Entry{At: load, Event: ev(sglang.KindCGEnd, "elapsed", strconv.FormatFloat((2*step).Seconds(), 'f', 2, 64), "mem_usage", "0.31", "avail_mem", "25.30")},
		replay.Entry{At: load, Event: ev(sglang.KindLimits, "max_total_num_tokens", "4513172", "chunked_prefill_size", "8192", "max_prefill_tokens", "16384", "max_running_requests", "4096", "context_len", "32768")},
		replay.Entry{At: load, Op: replay.OpBind},
	)
	if exitAt > 0 {
		tl.Append(replay.Entry{At: exitAt, Op: replay.OpExit, Code: code})
	}
	return tl
}
