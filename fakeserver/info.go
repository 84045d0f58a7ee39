package fakeserver

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// --- info ----------------------------------------------------------------------------------

func (s *Server) deprecated(path string) {
	if s.prof.GetEndpointsDeprecated && strings.HasPrefix(path, "/get_") {
		s.logExternal(replay.Stdout, sglang.Event{Kind: sglang.KindDeprecated, Time: s.clock.Now(), Fields: sglang.Fields{
			{Key: "old", Value: path}, {Key: "new", Value: "/" + strings.TrimPrefix(path, "/get_")}}})
	}
}

func (s *Server) modelInfo(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet) {
		return
	}
	s.deprecated(r.URL.Path)
	s.static.modelInfo.write(w, http.StatusOK)
}

// modelInfoBody is the /model_info body of the profile's era.
func (s *Server) modelInfoBody() any {
	a := s.cfg.Args
	type eraA struct {
		ModelPath     string `json:"model_path"`
		TokenizerPath string `json:"tokenizer_path"`
		IsGeneration  bool   `json:"is_generation"`
	}
	type eraB struct {
		eraA
		PreferredSamplingParams *string `json:"preferred_sampling_params"`
		WeightVersion           string  `json:"weight_version"`
	}
	type eraC struct {
		eraB
		HasImage      bool     `json:"has_image_understanding"`
		HasAudio      bool     `json:"has_audio_understanding"`
		ModelType     string   `json:"model_type"`
		Architectures []string `json:"architectures"`
	}
	base := eraA{a.ModelPath, a.ModelPath, true}
	switch s.prof.Era {
	case sglang.EraA:
		return base
	case sglang.EraB:
		return eraB{eraA: base, WeightVersion: "default"}
	default:
		return eraC{eraB: eraB{eraA: base, WeightVersion: "default"}, ModelType: "qwen2", Architectures: []string{"Qwen2ForCausalLM"}}
	}
}

// serverInfo awaits the scheduler, so it hangs while the scheduler is wedged or dead.
func (s *Server) serverInfo(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet) {
		return
	}
	s.deprecated(r.URL.Path)
	if !s.awaitScheduler(r.Context()) {
		return
	}
	a := s.cfg.Args
	writeJSON(w, http.StatusOK, map[string]any{
		"model_path": a.ModelPath, "tokenizer_path": a.ModelPath, "served_model_name": a.ServedModelName,
		"host": a.Host, "port": s.port, "tp_size": a.TPSize, "context_length": a.ContextLength,
		"skip_server_warmup": a.SkipServerWarmup, "enable_metrics": a.EnableMetrics,
		"decode_log_interval": a.DecodeLogInterval, "max_total_num_tokens": s.metrics.maxTokens,
		"internal_states": []map[string]any{{"last_gen_throughput": 0.0, "avg_spec_accept_length": nil}},
		"version":         s.prof.Version,
	})
}

// awaitScheduler blocks while the scheduler is wedged (returns true when it resumes) or
// dead (returns false when the request or the process ends).
func (s *Server) awaitScheduler(ctx context.Context) bool {
	for {
		s.mu.Lock()
		hung, dead := s.schedWedged, s.schedDead
		s.mu.Unlock()
		switch {
		case dead:
			vtime.IdleDuring(ctx, s.clock, func() { <-ctx.Done() })
			return false
		case hung == nil:
			return true
		}
		if !hung.Wait(ctx) {
			return false
		}
	}
}

type modelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent,omitempty"`
	MaxModelLen int     `json:"max_model_len"`
}

func (s *Server) card() modelCard {
	name := s.args.ServedModelName
	return modelCard{ID: name, Object: "model", Created: s.start.Unix(), OwnedBy: "sglang", Root: name, MaxModelLen: s.args.ContextLength}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	if methodIs(w, r, http.MethodGet) {
		s.static.models.write(w, http.StatusOK)
	}
}

func (s *Server) model(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet) {
		return
	}
	id := r.PathValue("model")
	if id != s.args.ServedModelName {
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("The model '%s' does not exist", id), "type": "invalid_request_error",
			"param": "model", "code": "model_not_found"}})
		return
	}
	s.static.card.write(w, http.StatusOK)
}

const flushText = "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n"

func (s *Server) flushCache(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet, http.MethodPost) || !s.awaitScheduler(r.Context()) {
		return
	}
	s.mu.Lock()
	busy := s.running > 0
	s.mu.Unlock()
	status := http.StatusOK
	if busy {
		status = http.StatusBadRequest
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(flushText))
}

func (s *Server) freezeGC(w http.ResponseWriter, r *http.Request) {
	if methodIs(w, r, http.MethodGet, http.MethodPost) { // @app.api_route("/freeze_gc", methods=["GET", "POST"])
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("Garbage collection frozen.\n"))
	}
}

// metricsHandler is a Starlette Mount of prometheus_client's ASGI app, not a route: it
// answers every method, HEAD included (SGLang c193a52fa python/sglang/srt/utils/common.py
// add_prometheus_middleware).
func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	if !s.args.EnableMetrics {
		detail(w, http.StatusNotFound)
		return
	}
	s.metrics.handler.ServeHTTP(w, r)
}
