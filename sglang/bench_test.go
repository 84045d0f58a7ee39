package sglang

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"
)

// benchLog renders a serving-heavy log (the bulk of a real one) of about size bytes.
func benchLog(size int) []byte {
	r := rand.New(rand.NewPCG(testSeed, 3))
	p := ProfileFor(EraC)
	var buf bytes.Buffer
	t := time.Date(2026, 2, 24, 11, 39, 22, 0, time.UTC)
	var line []byte
	for buf.Len() < size {
		var e Event
		switch r.IntN(4) {
		case 0, 1:
			e = Prefill(p, PrefillStats{NewSeq: 1, NewToken: r.IntN(8192), TokenUsage: r.Float64(), InputThroughput: r.Float64() * 900})
			e.Ranks = []Rank{{"TP", 0}}
		case 2:
			e = Decode(p, DecodeStats{RunningReq: r.IntN(50), Token: r.IntN(1e5), CUDAGraph: true, GenThroughput: r.Float64() * 700})
			e.Ranks = []Rank{{"TP", 0}}
		default:
			e = Access("127.0.0.1:45890", "GET", "/health", 200)
		}
		e.Time = t
		line = append(AppendRender(line[:0], e, p), '\n')
		buf.Write(line)
	}
	return buf.Bytes()
}

func BenchmarkParse(b *testing.B) {
	in := benchLog(8 << 20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		sc := NewScanner(bytes.NewReader(in))
		n := 0
		for sc.Scan() {
			n++
		}
		if n == 0 {
			b.Fatal("no lines")
		}
	}
}

func BenchmarkRender(b *testing.B) {
	p := ProfileFor(EraC)
	e := Prefill(p, PrefillStats{NewSeq: 1, NewToken: 64, InputThroughput: 5.82})
	e.Time, e.Ranks = time.Date(2026, 2, 19, 19, 48, 25, 0, time.UTC), []Rank{{"TP", 0}}
	buf := AppendRender(nil, e, p)
	b.SetBytes(int64(len(buf)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRender(buf[:0], e, p)
	}
}
