package fakeserver

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the sglang:* series SGLang exports with --enable-metrics,
// labelled like TP0's: model_name, engine_type, tp_rank, pp_rank.
type metrics struct {
	handler   http.Handler
	maxTokens int

	running, queued, usedTokens, tokenUsage, genThroughput, cacheHit *prometheus.GaugeVec
	promptTokens, genTokens, requests                                *prometheus.CounterVec
	ttft, e2e                                                        *prometheus.HistogramVec
	labels                                                           prometheus.Labels
}

func newMetrics(model string, contextLen int) *metrics {
	reg := prometheus.NewRegistry()
	names := []string{"model_name", "engine_type", "tp_rank", "pp_rank"}
	gauge := func(name, help string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "sglang:" + name, Help: help}, names)
		reg.MustRegister(g)
		return g
	}
	counter := func(name, help string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "sglang:" + name, Help: help}, names)
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "sglang:" + name, Help: help, Buckets: buckets}, names)
		reg.MustRegister(h)
		return h
	}
	m := &metrics{maxTokens: 8 * contextLen, labels: prometheus.Labels{"model_name": model, "engine_type": "unified", "tp_rank": "0", "pp_rank": "0"}}
	m.running = gauge("num_running_reqs", "The number of running requests.")
	m.queued = gauge("num_queue_reqs", "The number of requests in the waiting queue.")
	m.usedTokens = gauge("num_used_tokens", "The number of used tokens.")
	m.tokenUsage = gauge("token_usage", "The token usage.")
	m.genThroughput = gauge("gen_throughput", "The generation throughput (token/s).")
	m.cacheHit = gauge("cache_hit_rate", "The prefix cache hit rate.")
	maxTotal := gauge("max_total_num_tokens", "Maximum total number of tokens in the KV cache pool.")
	m.promptTokens = counter("prompt_tokens_total", "Number of prefill tokens processed.")
	m.genTokens = counter("generation_tokens_total", "Number of generation tokens processed.")
	m.requests = counter("num_requests_total", "Number of requests processed.")
	m.ttft = hist("time_to_first_token_seconds", "Histogram of time to first token in seconds.",
		[]float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 120, 160})
	m.e2e = hist("e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds",
		[]float64{0.1, 0.2, 0.4, 0.6, 0.8, 1, 2, 4, 6, 8, 10, 20, 40, 60, 80, 100, 150, 200, 250, 300, 350, 500, 1000})
	for _, g := range []*prometheus.GaugeVec{m.running, m.queued, m.usedTokens, m.tokenUsage, m.genThroughput, m.cacheHit} {
		g.With(m.labels).Set(0)
	}
	maxTotal.With(m.labels).Set(float64(m.maxTokens))
	for _, c := range []*prometheus.CounterVec{m.promptTokens, m.genTokens, m.requests} {
		c.With(m.labels).Add(0)
	}
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

func (m *metrics) begin(running int, prompt int) {
	m.running.With(m.labels).Set(float64(running))
	m.promptTokens.With(m.labels).Add(float64(prompt))
}

func (m *metrics) end(running, generated int, ttft, e2e float64) {
	m.running.With(m.labels).Set(float64(running))
	m.genTokens.With(m.labels).Add(float64(generated))
	m.requests.With(m.labels).Inc()
	m.ttft.With(m.labels).Observe(ttft)
	m.e2e.With(m.labels).Observe(e2e)
}

func (m *metrics) dead() { m.running.With(m.labels).Set(0) }
