package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

func (s *Server) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/health", s.health)
	mux.HandleFunc("/health_generate", s.health)
	mux.HandleFunc("/ping", s.ping)
	mux.HandleFunc("/get_model_info", s.modelInfo)
	mux.HandleFunc("/get_server_info", s.serverInfo)
	if s.prof.GetEndpointsDeprecated { // era C added the short names
		mux.HandleFunc("/model_info", s.modelInfo)
		mux.HandleFunc("/server_info", s.serverInfo)
	}
	if s.prof.FreezeGC {
		mux.HandleFunc("/freeze_gc", s.freezeGC)
	}
	mux.HandleFunc("/v1/models", s.models)
	mux.HandleFunc("/v1/models/{model...}", s.model)
	mux.HandleFunc("/generate", s.generate)
	mux.HandleFunc("/v1/completions", s.completions)
	mux.HandleFunc("/v1/chat/completions", s.chat)
	mux.HandleFunc("/flush_cache", s.flushCache)
	mux.HandleFunc("/metrics", s.metricsHandler)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) { detail(w, http.StatusNotFound) })
	return s.middleware(uncleanNotFound(mux))
}

// uncleanNotFound answers a path with "..", "." or "//" segments 404 as uvicorn does, where
// ServeMux would redirect to the cleaned path.
func uncleanNotFound(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := r.URL.Path; p == "" || p[0] != '/' || path.Clean(p) != p && path.Clean(p)+"/" != p {
			detail(w, http.StatusNotFound)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// middleware: the wedge, the API key, injected request failures, body limits, and one access
// line plus one journal record per request.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// On a virtual clock a request is work from here until its handler returns, except
		// while the handler waits on the clock or on another part of the run.
		task := vtime.NewTask(s.clock)
		defer task.End()
		r = r.WithContext(vtime.WithTask(r.Context(), task))
		vtime.Started(r.Context())
		defer vtime.Answered(r.Context())
		aw := &accessWriter{ResponseWriter: w, s: s, r: r, begin: s.offsetNow()}
		// r.Context() descends from s.deadCtx (http.Server.BaseContext), so a dying process
		// drops every request without a per-request context of our own.
		ctx := r.Context()
		defer aw.finish()
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				// A handler bug must not take the fake down; it is journaled as a 500.
				aw.fault = fmt.Sprintf("panic: %v", p)
				if !aw.wrote {
					openAIError(aw, http.StatusInternalServerError, "internal error in fakesglang")
				}
			}
		}()
		s.mu.Lock()
		wedged := s.wedged
		s.mu.Unlock()
		if wedged != nil {
			aw.fault = string(fault.Wedge)
			resumed := false
			vtime.IdleDuring(ctx, s.clock, func() {
				select {
				case <-wedged:
					resumed = true
				case <-ctx.Done():
				}
			})
			if !resumed {
				aw.abortUnanswered()
			}
			aw.fault = ""
		}
		if key := s.args.APIKey; key != "" && r.Method != http.MethodOptions &&
			!strings.HasPrefix(r.URL.Path, "/health") && !strings.HasPrefix(r.URL.Path, "/metrics") &&
			r.Header.Get("Authorization") != "Bearer "+key {
			writeJSON(aw, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
			return
		}
		s.mu.Lock()
		ans, kind, hit := s.answer(s.offsetNow(), r.URL.Path)
		s.mu.Unlock()
		if hit {
			aw.fault = string(kind)
			if ans.Drop {
				aw.outcome = "dropped"
				aw.abortUnanswered()
			}
			openAIError(aw, ans.Status, ans.Message)
			return
		}
		r.Body = http.MaxBytesReader(aw, r.Body, MaxBodyBytes)
		next.ServeHTTP(aw, r)
		aw.abortUnanswered()
	})
}

// accessWriter logs the access line when the status is written, as uvicorn does at
// response start, and journals the request.
type accessWriter struct {
	http.ResponseWriter
	s       *Server
	r       *http.Request
	begin   time.Duration
	wrote   bool
	status  int
	fault   string
	outcome string
	fields  [6]sglang.Field // the access line's fields, kept here to spare an allocation
	// stream holds an SSE response's record until the handler returns, so the record can
	// say whether the stream ended or was reset (a status alone cannot tell them apart).
	stream *Record
}

func (a *accessWriter) WriteHeader(code int) {
	if a.wrote {
		return
	}
	a.wrote, a.status = true, code
	a.ResponseWriter.WriteHeader(code)
	now := a.s.offsetNow()
	a.s.logExternal(replay.Stdout, sglang.Event{Kind: sglang.KindAccess, Time: a.s.stamp(now),
		Fields: accessFields(a.fields[:0], clientAddr(a.r.RemoteAddr), a.r.Method, a.r.URL.RequestURI(), code)})
	rec := Record{At: now, Type: RecRequest, Method: a.r.Method, Route: a.r.URL.Path, Status: code,
		Latency: now - a.begin, Client: a.r.RemoteAddr, Fault: a.fault}
	if a.Header().Get("Content-Type") == sseContentType {
		a.stream = &rec
		return
	}
	a.s.journal.add(rec)
}

func (a *accessWriter) Write(b []byte) (int, error) {
	if !a.wrote {
		a.WriteHeader(http.StatusOK)
	}
	return a.ResponseWriter.Write(b)
}

func (a *accessWriter) Unwrap() http.ResponseWriter { return a.ResponseWriter }

// abortUnanswered closes the connection of a request that no handler answered (its client
// left, the process died, a wait ended): net/http would otherwise send 200 with an empty
// body, which is SGLang's healthy /health. finish journals the request as abandoned.
func (a *accessWriter) abortUnanswered() {
	if !a.wrote {
		panic(http.ErrAbortHandler)
	}
}

// finish journals a request that never got a response (client gave up, process died).
func (a *accessWriter) finish() {
	if a.stream != nil {
		rec := *a.stream
		rec.Fault, rec.Outcome = a.fault, a.outcome
		a.stream = nil
		a.s.journal.add(rec)
		return
	}
	if a.wrote {
		return
	}
	outcome := a.outcome
	if outcome == "" {
		outcome = "abandoned"
	}
	a.s.journal.add(Record{At: a.s.offsetNow(), Type: RecRequest, Method: a.r.Method, Route: a.r.URL.Path,
		Latency: a.s.offsetNow() - a.begin, Client: a.r.RemoteAddr, Fault: a.fault, Outcome: outcome})
	a.wrote = true // nothing more may be written: the client is gone
}

// clientAddr formats a remote address the way uvicorn prints it: host:port, no brackets.
func clientAddr(remote string) string {
	if !strings.HasPrefix(remote, "[") { // IPv4 host:port is printed as is
		return remote
	}
	host, port, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host + ":" + port
}

func (s *Server) logExternal(stream replay.Stream, ev sglang.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logLocked(s.offsetNow(), stream, ev)
}

// sleep waits d of scenario time; false when ctx ended first.
func (s *Server) sleep(ctx context.Context, d time.Duration) bool {
	return replay.SleepCtx(ctx, s.clock, d) == nil
}

// --- bodies and errors ---------------------------------------------------------------------

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"detail":"encoding error"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// staticJSON is a JSON body encoded once: the model card and model info never change
// during a run, and encoding them per request was most of /v1/models' cost.
type staticJSON struct {
	body []byte
	// length is the Content-Length header value; a header slice set directly (never
	// appended to by net/http) is shared by every response.
	length []string
}

var jsonContentType = []string{"application/json"}

func newStaticJSON(v any) (staticJSON, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return staticJSON{}, fmt.Errorf("fakeserver: encode static body: %w", err)
	}
	return staticJSON{body: b, length: []string{strconv.Itoa(len(b))}}, nil
}

// write sends the body with the same headers writeJSON sets.
func (sj staticJSON) write(w http.ResponseWriter, status int) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = sj.length
	w.WriteHeader(status)
	_, _ = w.Write(sj.body)
}

// staticBodies are the responses that depend only on the configuration.
type staticBodies struct {
	models, card, modelInfo staticJSON
}

func (s *Server) buildStatic() error {
	var err [3]error
	s.static.models, err[0] = newStaticJSON(map[string]any{"object": "list", "data": []modelCard{s.card()}})
	s.static.card, err[1] = newStaticJSON(s.card())
	s.static.modelInfo, err[2] = newStaticJSON(s.modelInfoBody())
	return errors.Join(err[:]...)
}

// empty writes a status with the empty body SGLang's health endpoints return.
func empty(w http.ResponseWriter, status int) {
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(status)
}

// detail is FastAPI's default error body: {"detail":"Not Found"}.
func detail(w http.ResponseWriter, status int) {
	writeJSON(w, status, map[string]string{"detail": http.StatusText(status)})
}

// openAIError is SGLang's error shape for validation (400) and HTTP exceptions.
func openAIError(w http.ResponseWriter, status int, msg string) {
	typ := strconv.Itoa(status)
	if status == http.StatusBadRequest {
		typ = "Bad Request"
	}
	writeJSON(w, status, struct {
		Object  string  `json:"object"`
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	}{"error", msg, typ, nil, status})
}

// nativeError is the /generate ValueError shape.
func nativeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]map[string]string{"error": {"message": msg}})
}

func methodIs(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	detail(w, http.StatusMethodNotAllowed)
	return false
}

// --- health --------------------------------------------------------------------------------

func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	if methodIs(w, r, http.MethodGet, http.MethodHead) {
		empty(w, http.StatusOK)
	}
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodGet, http.MethodHead) {
		return
	}
	aw, _ := w.(*accessWriter)
	ctx := r.Context()
	s.mu.Lock()
	delay, why := s.healthDelay(s.offsetNow(), r.URL.Path)
	s.mu.Unlock()
	if delay > 0 {
		if aw != nil {
			aw.fault = why
		}
		if !s.sleep(ctx, delay) {
			return
		}
	}
	s.mu.Lock()
	ph := s.phase
	s.mu.Unlock()
	p := s.prof
	switch {
	case !p.HealthGatedOnStatus && r.URL.Path == "/health": // era A: "Check the health of the http server."
		empty(w, http.StatusOK)
		return
	case p.HealthGatedOnStatus && ph == phaseStarting:
		empty(w, http.StatusServiceUnavailable)
		return
	case p.HealthEnvToggle && !*s.cfg.Behavior.HealthGeneration && r.URL.Path == "/health":
		empty(w, http.StatusOK)
		return
	}
	s.generatingCheck(ctx, w, aw)
}

// generatingCheck is the 1-token health generation: 200 after the health latency with a
// prefill line when idle, or 503 after the health timeout when the scheduler does not answer.
func (s *Server) generatingCheck(ctx context.Context, w http.ResponseWriter, aw *accessWriter) {
	tic := s.clock.Now()
	s.mu.Lock()
	hung := s.schedWedged
	dead := s.schedDead
	down := s.healthDown(s.offsetNow())
	s.mu.Unlock()
	if hung != nil || dead {
		timer := s.clock.NewTimer(s.cfg.Behavior.HealthTimeout)
		defer timer.Stop()
		var gone, timedOut bool
		vtime.IdleDuring(ctx, s.clock, func() {
			select {
			case <-ctx.Done():
				gone = true
			case <-hung: // nil channel when dead: never
			case <-timer.Chan():
				timedOut = true
			}
		})
		switch {
		case gone:
			return
		case timedOut:
			s.healthFailed(tic)
			empty(w, http.StatusServiceUnavailable)
			return
		}
	}
	if !s.sleep(ctx, s.cfg.Behavior.HealthLatency) {
		return
	}
	if down != "" {
		if aw != nil {
			aw.fault = down
		}
		empty(w, http.StatusServiceUnavailable)
		return
	}
	s.mu.Lock()
	at := s.offsetNow()
	if s.running == 0 {
		s.logLocked(at, replay.Stdout, s.prefillEvent(s.stamp(at), s.cfg.Behavior.ProbeTokens, s.cfg.Behavior.ProbeCUDAGraph))
	}
	s.lastHeartbeat = s.stamp(at)
	if s.unhealthy {
		s.unhealthy = false
		s.state(at, StateHealthy)
	}
	s.mu.Unlock()
	empty(w, http.StatusOK)
}

func (s *Server) healthFailed(tic time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at := s.offsetNow()
	secs := strconv.Itoa(int(s.cfg.Behavior.HealthTimeout / time.Second))
	s.logLocked(at, replay.Stdout, sglang.Event{Kind: sglang.KindHealthFailed, Time: s.stamp(at), Fields: sglang.Fields{
		{Key: "seconds", Value: secs}, {Key: "tic", Value: tic.Format("15:04:05")},
		{Key: "last_heartbeat", Value: s.lastHeartbeat.Format("15:04:05")}}})
	if s.prof.HealthGatedOnStatus && !s.unhealthy {
		s.unhealthy = true
		s.state(at, StateUnhealthy)
	} else if !s.prof.HealthGatedOnStatus {
		s.state(at, StateUnhealthy)
	}
}

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
		gone := false
		vtime.IdleDuring(ctx, s.clock, func() {
			select {
			case <-hung:
			case <-ctx.Done():
				gone = true
			}
		})
		if gone {
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
	if methodIs(w, r, http.MethodPost) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("Garbage collection frozen.\n"))
	}
}

func (s *Server) metricsHandler(w http.ResponseWriter, r *http.Request) {
	if !s.args.EnableMetrics {
		detail(w, http.StatusNotFound)
		return
	}
	if methodIs(w, r, http.MethodGet) {
		s.metrics.handler.ServeHTTP(w, r)
	}
}
