package fakeserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/incident-replay/incident-replay/sglang"
)

// load drives url with parallel keep-alive clients: the Go load generator the issue asks
// for, so fake and bare handler are measured by the same client on the same machine.
func load(b *testing.B, url string) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	var fails atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			resp, err := c.Get(url)
			if err != nil {
				fails.Add(1)
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				fails.Add(1)
			}
		}
	})
	if n := fails.Load(); n > 0 {
		b.Fatalf("%d failed requests", n)
	}
}

func benchServer(b *testing.B, era sglang.Era) *testRun {
	r := start(b, Config{Profile: sglang.ProfileFor(era), Seed: 1})
	r.waitState(b, StateReady)
	return r
}

// BenchmarkHealthEraA: the instant 200 of era A, with access logging and journaling on.
func BenchmarkHealthEraA(b *testing.B) {
	load(b, benchServer(b, sglang.EraA).BaseURL()+"/health")
}

func BenchmarkModels(b *testing.B) {
	load(b, benchServer(b, sglang.EraC).BaseURL()+"/v1/models")
}

// BenchmarkBareHandler is the baseline: net/http with an empty 200 and nothing else.
func BenchmarkBareHandler(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "0")
	}))
	defer srv.Close()
	load(b, srv.URL+"/health")
}

// BenchmarkStreamTokens streams chat completions with zero token latency; tokens/s is the
// figure of merit.
func BenchmarkStreamTokens(b *testing.B) {
	r := benchServer(b, sglang.EraC)
	r.cfg.Behavior.DefaultMaxTokens = 64
	url := r.BaseURL() + "/generate"
	body := `{"text":"stream","sampling_params":{"max_new_tokens":1000},"stream":true}`
	var tokens int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n == 0 {
			b.Fatal("empty stream")
		}
		tokens += int64(countEvents(r, i))
	}
	b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.Sys)/(1<<20), "MB-sys")
}

// countEvents is the tokens one streamed request produced: the generator is deterministic
// per prompt, so it is the same every time; computed once from a non-stream call.
var streamTokens atomic.Int64

func countEvents(r *testRun, _ int) int64 {
	if n := streamTokens.Load(); n > 0 {
		return n
	}
	o, _ := r.job(context.Background(), "/generate", "stream", 1, 1000, false, nil)
	streamTokens.Store(int64(len(o.ids)))
	return int64(len(o.ids))
}
