// Package loggen writes large, realistic SGLang logs for benchmarks: a startup sequence then
// serving traffic (Prefill/Decode lines, access lines, the odd health probe), all rendered by
// the sglang package for one profile. One seed makes the output byte-for-byte repeatable.
package loggen

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// Options configure a generated log.
type Options struct {
	Bytes   int64          // stop after at least this many bytes
	Seed    uint64         // drives every random choice
	Profile sglang.Profile // the version whose lines are written
	TP      int            // tensor-parallel ranks (per-rank lines are repeated); 0 means 1
	Start   time.Time      // first timestamp; zero means 2026-02-24 11:18:00 UTC
}

// Write writes the log to w and returns the number of bytes written.
func Write(ctx context.Context, w io.Writer, o Options) (int64, error) {
	if o.Bytes <= 0 {
		return 0, fmt.Errorf("loggen: Bytes must be positive, got %d", o.Bytes)
	}
	if o.Profile.Era == 0 {
		return 0, fmt.Errorf("loggen: no profile: use sglang.ProfileFor or LookupProfile")
	}
	tp := max(o.TP, 1)
	t := o.Start
	if t.IsZero() {
		t = time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	}
	r := rand.New(rand.NewPCG(o.Seed, o.Seed^0x9e3779b97f4a7c15))
	p := o.Profile
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	buf := make([]byte, 0, 1024)
	emit := func(e sglang.Event, ranks []sglang.Rank, headed bool) error {
		if headed {
			e.Time, e.Ranks = t, ranks
		}
		buf = append(sglang.AppendRender(buf[:0], e, p), '\n')
		m, err := bw.Write(buf)
		n += int64(m)
		return err
	}
	rankOf := func(i int) []sglang.Rank {
		if tp == 1 {
			return p.SingleGPURanks()
		}
		return []sglang.Rank{{Name: "TP", N: i}}
	}
	perRank := func(e sglang.Event) error {
		for i := 0; i < tp; i++ {
			if err := emit(e, rankOf(i), true); err != nil {
				return err
			}
		}
		return nil
	}
	a := sglang.DefaultServerArgs()
	a.ModelPath, a.TPSize, a.Port = "org/bench-model", tp, 8000
	steps := []func() error{
		func() error { return emit(sglang.ServerArgsLine(a), nil, true) },
		func() error { return perRank(sglang.LoadBegin(p, 94.5)) },
		func() error {
			for i := 0; i <= 8; i++ {
				if err := emit(sglang.ShardProgress(i, 8, time.Duration(i)*3*time.Second, time.Duration(8-i)*3*time.Second), nil, false); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			return perRank(sglang.LoadEnd(p, "DeepseekV3ForCausalLM", "torch.bfloat16", 24*time.Second, 20.1, 74.4))
		},
		func() error { return perRank(sglang.KVAlloc(p, "torch.bfloat16", 116000, 4.1, 4.1)) },
		func() error { return perRank(sglang.MemPoolEnd(11.2)) },
		func() error { return perRank(sglang.CGBegin(p, 11.1, []int{1, 2, 4, 8})) },
		func() error { return perRank(sglang.CGEnd(p, 41*time.Second, 1.2, 9.9)) },
		func() error { return emit(sglang.UvicornStarted(3831493), nil, true) },
		func() error { return emit(sglang.UvicornRunning("0.0.0.0", 8000), nil, true) },
		func() error { return emit(sglang.Ready(), nil, true) },
	}
	for _, s := range steps {
		if err := s(); err != nil {
			return n, err
		}
		t = t.Add(time.Duration(1+r.IntN(30)) * time.Second)
	}
	for i := 0; n < o.Bytes; i++ {
		if i%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return n, err
			}
		}
		t = t.Add(time.Duration(r.IntN(2)) * time.Second)
		var err error
		switch x := r.IntN(10); {
		case x < 5:
			err = emit(sglang.Prefill(p, sglang.PrefillStats{NewSeq: 1 + r.IntN(4), NewToken: r.IntN(8192), CachedToken: r.IntN(4096),
				TokenUsage: r.Float64(), RunningReq: r.IntN(50), QueueReq: r.IntN(10), InputThroughput: r.Float64() * 9000,
				CUDAGraph: r.IntN(2) == 0}), rankOf(0), true)
		case x < 8:
			err = emit(sglang.Decode(p, sglang.DecodeStats{RunningReq: r.IntN(50), Token: r.IntN(200000), TokenUsage: r.Float64(),
				CUDAGraph: true, GenThroughput: r.Float64() * 700, QueueReq: r.IntN(10)}), rankOf(0), true)
		case x < 9:
			err = emit(sglang.Access(fmt.Sprintf("127.0.0.1:%d", 30000+r.IntN(30000)), "POST", "/v1/chat/completions", 200), nil, true)
		default:
			err = emit(sglang.Access(fmt.Sprintf("127.0.0.1:%d", 30000+r.IntN(30000)), "GET", "/health", 200), nil, true)
		}
		if err != nil {
			return n, err
		}
	}
	return n, bw.Flush()
}
