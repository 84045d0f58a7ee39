package fakeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// --- OpenAI --------------------------------------------------------------------------------

type usage struct {
	PromptTokens        int  `json:"prompt_tokens"`
	TotalTokens         int  `json:"total_tokens"`
	CompletionTokens    int  `json:"completion_tokens"`
	PromptTokensDetails *int `json:"prompt_tokens_details"`
	ReasoningTokens     int  `json:"reasoning_tokens"`
}

func usageOf(o *genOut) usage {
	return usage{PromptTokens: o.promptToks, CompletionTokens: len(o.ids), TotalTokens: o.promptToks + len(o.ids)}
}

type streamOpts struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type chatReq struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOpts     `json:"stream_options"`
	Stop                json.RawMessage `json:"stop"`
}

var roles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true, "developer": true, "function": true}

func chatPrompt(msgs []chatMessage) (string, int, error) {
	if len(msgs) == 0 {
		return "", 0, errors.New("messages: at least one message is required")
	}
	var b strings.Builder
	toks := 3
	for i, m := range msgs {
		if !roles[m.Role] {
			return "", 0, fmt.Errorf("messages[%d].role: %q is not one of system, user, assistant, tool, developer", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return "", 0, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		b.WriteString(m.Role + ": " + text + "\n")
		toks += 4 + approxTokens(text)
	}
	return b.String(), toks, nil
}

func contentText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or a list of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

func (s *Server) checkSampling(temp *float64, n *int) (int, error) {
	if temp != nil && (*temp < 0 || *temp > 2) {
		return 0, fmt.Errorf("temperature must be in [0, 2], got %v", *temp)
	}
	if n == nil {
		return 1, nil
	}
	if *n < 1 || *n > 16 {
		return 0, fmt.Errorf("n must be between 1 and 16, got %d", *n)
	}
	return *n, nil
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodPost) {
		return
	}
	var req chatReq
	if !decodeBody(w, r, &req, true) {
		return
	}
	prompt, toks, err := chatPrompt(req.Messages)
	if err == nil {
		mt := req.MaxCompletionTokens
		if mt == nil {
			mt = req.MaxTokens
		}
		var n, choices int
		if n, err = s.maxTokens("max_tokens", mt); err == nil {
			if choices, err = s.checkSampling(req.Temperature, req.N); err == nil {
				s.openAI(w, r, "chat", prompt, toks, n, choices, req.Stream, req.StreamOptions)
				return
			}
		}
	}
	openAIError(w, http.StatusBadRequest, err.Error())
}

type completionReq struct {
	Model         string          `json:"model"`
	Prompt        json.RawMessage `json:"prompt"`
	MaxTokens     *int            `json:"max_tokens"`
	Temperature   *float64        `json:"temperature"`
	N             *int            `json:"n"`
	Stream        bool            `json:"stream"`
	StreamOptions *streamOpts     `json:"stream_options"`
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	if !methodIs(w, r, http.MethodPost) {
		return
	}
	var req completionReq
	if !decodeBody(w, r, &req, true) {
		return
	}
	prompt, toks, err := generatePrompt(generateReq{Text: req.Prompt})
	if err != nil {
		if len(req.Prompt) > 0 && req.Prompt[0] == '[' { // token ids
			prompt, toks, err = generatePrompt(generateReq{InputIDs: req.Prompt})
		}
		if err != nil {
			err = errors.New("prompt: must be a string, a list of strings or a list of token ids")
		}
	}
	if err == nil {
		var n, choices int
		if n, err = s.maxTokens("max_tokens", req.MaxTokens); err == nil {
			if choices, err = s.checkSampling(req.Temperature, req.N); err == nil {
				s.openAI(w, r, "text", prompt, toks, n, choices, req.Stream, req.StreamOptions)
				return
			}
		}
	}
	openAIError(w, http.StatusBadRequest, err.Error())
}

// openAI serves chat ("chat") and completions ("text") from the same fake scheduler.
func (s *Server) openAI(w http.ResponseWriter, r *http.Request, kind, prompt string, promptToks, maxTokens, choices int, stream bool, so *streamOpts) {
	created := s.clock.Now().Unix()
	if !stream {
		object := "chat.completion"
		if kind == "text" {
			object = "text_completion"
		}
		s.openAIWhole(w, r, kind, object, created, prompt, promptToks, maxTokens, choices)
		return
	}
	chunkObject := "chat.completion.chunk"
	if kind == "text" {
		chunkObject = "text_completion"
	}
	s.openAIStream(w, r, kind, chunkObject, created, prompt, promptToks, maxTokens, choices, so)
}

// openAIWhole answers a non-streaming completion: every choice generated, then one body.
func (s *Server) openAIWhole(w http.ResponseWriter, r *http.Request, kind, object string, created int64, prompt string, promptToks, maxTokens, choices int) {
	model := s.args.ServedModelName
	var out []map[string]any
	var first *genOut
	total := usage{}
	for i := 0; i < choices; i++ {
		o, ok := s.job(r.Context(), r.URL.Path, fmt.Sprintf("%s#%d", prompt, i), promptToks, maxTokens, false, nil)
		if !ok {
			return
		}
		if first == nil {
			first = o
		}
		u := usageOf(o)
		total.CompletionTokens += u.CompletionTokens
		c := map[string]any{"index": i, "logprobs": nil, "finish_reason": o.finish, "matched_stop": nil}
		if o.finish == "stop" {
			c["matched_stop"] = eosToken
		}
		if kind == "chat" {
			c["message"] = map[string]any{"role": "assistant", "content": strings.Join(o.texts, ""), "reasoning_content": nil, "tool_calls": nil}
		} else {
			c["text"] = strings.Join(o.texts, "")
		}
		out = append(out, c)
	}
	total.PromptTokens = promptToks
	total.TotalTokens = total.PromptTokens + total.CompletionTokens
	writeJSON(w, http.StatusOK, map[string]any{"id": first.rid, "object": object, "created": created, "model": model,
		"choices": out, "usage": total, "metadata": map[string]any{"weight_version": "default"}})
}

// openAIStream answers a streaming completion: SSE chunks per token and per finished choice,
// the usage chunk when asked for, then [DONE].
func (s *Server) openAIStream(w http.ResponseWriter, r *http.Request, kind, chunkObject string, created int64, prompt string, promptToks, maxTokens, choices int, so *streamOpts) {
	model := s.args.ServedModelName
	var ev *sse
	var rid string
	chunk := func(choices []map[string]any, u *usage) map[string]any {
		c := map[string]any{"id": rid, "object": chunkObject, "created": created, "model": model, "choices": choices}
		if u != nil {
			c["usage"] = u
		}
		return c
	}
	total := usage{PromptTokens: promptToks}
	for i := 0; i < choices; i++ {
		o, ok := s.job(r.Context(), r.URL.Path, fmt.Sprintf("%s#%d", prompt, i), promptToks, maxTokens, true, func(t int, o *genOut) bool {
			if ev == nil {
				rid = o.rid
				ev = newSSE(w, o.reset, o.resetBy)
				if kind == "chat" && !ev.send(chunk([]map[string]any{{"index": i, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}}, nil)) {
					return false
				}
			}
			c := map[string]any{"index": i, "logprobs": nil, "finish_reason": nil}
			if kind == "chat" {
				c["delta"] = map[string]any{"content": o.texts[t]}
			} else {
				c["text"] = o.texts[t]
			}
			return ev.send(chunk([]map[string]any{c}, nil))
		})
		if !ok || o == nil {
			return
		}
		if ev == nil {
			rid = o.rid
			ev = newSSE(w, o.reset, o.resetBy)
		}
		total.CompletionTokens += len(o.ids)
		c := map[string]any{"index": i, "logprobs": nil, "finish_reason": o.finish, "matched_stop": nil}
		if o.finish == "stop" {
			c["matched_stop"] = eosToken
		}
		if kind == "chat" {
			c["delta"] = map[string]any{}
		} else {
			c["text"] = ""
		}
		if !ev.send(chunk([]map[string]any{c}, nil)) {
			return
		}
	}
	if so != nil && so.IncludeUsage {
		total.TotalTokens = total.PromptTokens + total.CompletionTokens
		if !ev.send(chunk([]map[string]any{}, &total)) {
			return
		}
	}
	ev.send("[DONE]")
}
