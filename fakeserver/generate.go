package fakeserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"mime"
	"net"
	"net/http"
	"reflect"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// vocab is what the fake "model" says; the words are picked by a generator seeded from the
// run seed and the prompt, so the same request always gets the same answer.
var vocab = strings.Fields("the a of to and in is that it for on with as was at by this be from are an or model server " +
	"token cache ready Paris capital France graph batch prefill decode health replay incident")

const eosToken = 151645

type genOut struct {
	texts       []string // one token text per generated token
	ids         []int
	finish      string // "stop" or "length"
	promptToks  int
	rid         string
	reset       int    // chunks after which the stream is reset (0: never)
	resetBy     string // the fault that resets it
	ttft, total time.Duration
}

// job runs one generation on the fake scheduler: it waits for a hung scheduler, logs the
// prefill line, paces tokens by TokenLatency and logs a Decode line every
// --decode-log-interval tokens. emit is called per token (streaming); it returns false to stop.
func (s *Server) job(ctx context.Context, route, prompt string, promptToks, maxTokens int, stream bool, emit func(i int, o *genOut) bool) (*genOut, bool) {
	if !s.awaitScheduler(ctx) {
		return nil, false
	}
	begin := s.clock.Now()
	h := fnv.New64a()
	_, _ = h.Write([]byte(prompt))
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), h.Sum64()))
	s.mu.Lock()
	s.reqSeq++
	seq := s.reqSeq
	s.running++
	running := s.running
	at := s.offsetNow()
	o := &genOut{promptToks: promptToks, rid: fmt.Sprintf("%016x%016x", uint64(s.cfg.Seed), seq*0x9e3779b97f4a7c15)}
	s.tokenizerLoopLocked(at)
	s.beginRequestLocked(o.rid)
	if stream {
		o.reset, o.resetBy = s.streamReset(at, route)
	}
	s.logLocked(at, replay.Stdout, s.prefillEvent(s.stamp(at), promptToks, false))
	s.mu.Unlock()
	s.metrics.begin(running, promptToks)
	defer func() {
		s.mu.Lock()
		s.running--
		s.endRequestLocked(o.rid)
		s.lastHeartbeat = s.clock.Now()
		r := s.running
		s.mu.Unlock()
		s.metrics.end(r, len(o.ids), o.ttft.Seconds(), s.clock.Since(begin).Seconds())
	}()
	natural := 4 + rng.IntN(28)
	n := min(natural, maxTokens)
	o.finish = "length"
	if natural <= maxTokens {
		o.finish = "stop"
	}
	for i := 0; i < n; i++ {
		if s.cfg.Behavior.TokenLatency > 0 && !s.sleep(ctx, s.cfg.Behavior.TokenLatency) {
			return o, false
		}
		if !s.awaitScheduler(ctx) {
			return o, false
		}
		w := vocab[rng.IntN(len(vocab))]
		if i > 0 {
			w = " " + w
		}
		o.texts = append(o.texts, w)
		o.ids = append(o.ids, 100+rng.IntN(150000))
		if i == 0 {
			o.ttft = s.clock.Since(begin)
		}
		if iv := s.args.DecodeLogInterval; iv > 0 && (i+1)%iv == 0 {
			s.logExternal(replay.Stdout, s.decodeEvent(promptToks+i+1))
		}
		if emit != nil && !emit(i, o) {
			return o, false
		}
	}
	o.total = s.clock.Since(begin)
	return o, ctx.Err() == nil
}

// decodeEvent is the scheduler's Decode line for one running request at tokens tokens.
func (s *Server) decodeEvent(tokens int) sglang.Event {
	ev := sglang.Decode(s.prof, sglang.DecodeStats{RunningReq: 1, Token: tokens, CUDAGraph: true})
	ev.Time, ev.Ranks = s.clock.Now(), s.schedRanks()
	return ev
}

// approxTokens stands in for a tokenizer: about four bytes per token, at least one.
func approxTokens(s string) int { return max(1, (len(s)+3)/4) }

// --- SSE -----------------------------------------------------------------------------------

type sse struct {
	w      http.ResponseWriter
	rc     *http.ResponseController
	chunks int
	reset  int
	by     string // the fault behind reset
}

const sseContentType = "text/event-stream"

func newSSE(w http.ResponseWriter, reset int, by string) *sse {
	w.Header().Set("Content-Type", sseContentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return &sse{w: w, rc: http.NewResponseController(w), reset: reset, by: by}
}

// send writes one "data: ..." event; false when the client is gone or a reset_stream fault
// cut the connection (TCP RST, as a killed server gives).
func (e *sse) send(v any) bool {
	var b []byte
	if raw, ok := v.(string); ok {
		b = []byte(raw)
	} else {
		var err error
		if b, err = json.Marshal(v); err != nil {
			return false
		}
	}
	if _, err := fmt.Fprintf(e.w, "data: %s\n\n", b); err != nil {
		return false
	}
	if err := e.rc.Flush(); err != nil {
		return false
	}
	e.chunks++
	if e.reset > 0 && e.chunks >= e.reset {
		if aw, ok := e.w.(*accessWriter); ok {
			aw.fault, aw.outcome = e.by, "reset"
		}
		if conn, _, err := e.rc.Hijack(); err == nil {
			if tc, ok := conn.(*net.TCPConn); ok {
				_ = tc.SetLinger(0)
			}
			conn.Close()
		}
		return false
	}
	return true
}

// --- request parsing -----------------------------------------------------------------------

// decodeBody reads a JSON body, enforcing Content-Type for the OpenAI routes as SGLang's
// validate_json_request does. It writes the 400/413 itself and returns false on failure.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, requireJSON bool) bool {
	if requireJSON {
		mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if mt != "application/json" {
			openAIError(w, http.StatusBadRequest, "Unsupported Media Type: Only 'application/json' is allowed")
			return false
		}
	}
	dec := json.NewDecoder(r.Body)
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			openAIError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit))
			return false
		}
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			openAIError(w, http.StatusBadRequest, validationMessage(typeErr))
			return false
		}
		openAIError(w, http.StatusBadRequest, "invalid request body: "+err.Error())
		return false
	}
	if dec.More() {
		openAIError(w, http.StatusBadRequest, "invalid request body: trailing data after the JSON value")
		return false
	}
	return true
}

// validationMessage words a field of the wrong JSON type as SGLang's validation handler
// does: pydantic's error list, naming the field by its JSON path and the type it wants.
func validationMessage(e *json.UnmarshalTypeError) string {
	kind, want := "dict_type", "a valid dictionary"
	switch t := e.Type; {
	case t == nil:
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		kind, want = "int_type", "a valid integer"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		kind, want = "float_type", "a valid number"
	case t.Kind() == reflect.String:
		kind, want = "string_type", "a valid string"
	case t.Kind() == reflect.Bool:
		kind, want = "bool_type", "a valid boolean"
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
		kind, want = "list_type", "a valid list"
	}
	loc := "'body'"
	for _, part := range strings.Split(e.Field, ".") {
		if part != "" {
			loc += ", '" + part + "'"
		}
	}
	return fmt.Sprintf("1 validation error: [{'type': '%s', 'loc': (%s), 'msg': 'Input should be %s'}]", kind, loc, want)
}

func (s *Server) maxTokens(field string, v *int) (int, error) {
	if v == nil {
		return s.cfg.Behavior.DefaultMaxTokens, nil
	}
	if *v < 0 || *v > s.args.ContextLength {
		return 0, fmt.Errorf("%s must be between 0 and the context length %d, got %d", field, s.args.ContextLength, *v)
	}
	return min(*v, MaxTokensCap), nil
}

// --- /generate -----------------------------------------------------------------------------

type generateReq struct {
	Text           json.RawMessage `json:"text"`
	InputIDs       json.RawMessage `json:"input_ids"`
	SamplingParams *struct {
		MaxNewTokens *int     `json:"max_new_tokens"`
		Temperature  *float64 `json:"temperature"`
	} `json:"sampling_params"`
	Stream bool `json:"stream"`
}

func (s *Server) generate(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodPost, http.MethodPut) {
		return
	}
	var req generateReq
	if !decodeBody(w, r, &req, false) {
		return
	}
	prompt, toks, err := generatePrompt(req)
	if err != nil {
		nativeError(w, http.StatusBadRequest, err.Error())
		return
	}
	var mt *int
	if req.SamplingParams != nil {
		mt = req.SamplingParams.MaxNewTokens
		if t := req.SamplingParams.Temperature; t != nil && (*t < 0 || *t > 2) {
			nativeError(w, http.StatusBadRequest, fmt.Sprintf("temperature must be in [0, 2], got %v", *t))
			return
		}
	}
	n, err := s.maxTokens("max_new_tokens", mt)
	if err != nil {
		nativeError(w, http.StatusBadRequest, err.Error())
		return
	}
	meta := func(o *genOut) map[string]any {
		fr := map[string]any{"type": o.finish}
		if o.finish == "length" {
			fr["length"] = len(o.ids)
		} else {
			fr["matched"] = eosToken
		}
		return map[string]any{"id": o.rid, "finish_reason": fr, "prompt_tokens": o.promptToks, "weight_version": "default",
			"total_retractions": 0, "completion_tokens": len(o.ids), "cached_tokens": 0, "cached_tokens_details": nil,
			"dp_rank": nil, "e2e_latency": o.total.Seconds()}
	}
	if req.Stream {
		var ev *sse
		o, ok := s.job(r.Context(), r.URL.Path, prompt, toks, n, true, func(i int, o *genOut) bool {
			if ev == nil {
				ev = newSSE(w, o.reset, o.resetBy)
			}
			m := meta(o)
			if i < n-1 || len(o.ids) < n && o.finish == "length" {
				m["finish_reason"] = nil
			}
			return ev.send(map[string]any{"text": strings.Join(o.texts, ""), "output_ids": o.ids, "meta_info": m})
		})
		if !ok || o == nil {
			return
		}
		if ev == nil {
			ev = newSSE(w, o.reset, o.resetBy)
		}
		ev.send("[DONE]")
		return
	}
	o, ok := s.job(r.Context(), r.URL.Path, prompt, toks, n, false, nil)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"text": strings.Join(o.texts, ""), "output_ids": o.ids, "meta_info": meta(o)})
}

func generatePrompt(req generateReq) (string, int, error) {
	if len(req.Text) > 0 && string(req.Text) != "null" {
		var one string
		if err := json.Unmarshal(req.Text, &one); err == nil {
			return one, approxTokens(one), nil
		}
		var many []string
		if err := json.Unmarshal(req.Text, &many); err != nil || len(many) == 0 {
			return "", 0, errors.New("text must be a string or a non-empty list of strings")
		}
		return strings.Join(many, "\n"), approxTokens(strings.Join(many, "")), nil
	}
	if len(req.InputIDs) > 0 && string(req.InputIDs) != "null" {
		var ids []int
		if err := json.Unmarshal(req.InputIDs, &ids); err != nil || len(ids) == 0 {
			return "", 0, errors.New("input_ids must be a non-empty list of token ids")
		}
		return string(req.InputIDs), len(ids), nil
	}
	return "", 0, errors.New("Either text, input_ids or input_embeds should be provided.")
}
