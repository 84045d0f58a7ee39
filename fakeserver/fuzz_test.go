package fakeserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// FuzzHTTP throws arbitrary methods, paths, query strings, content types and bodies at the
// full handler of a ready server. It checks the server never panics (the middleware turns
// a panic into a journaled 500, so a 500 fails here too) and always answers with a status.
func FuzzHTTP(f *testing.F) {
	seeds := []struct{ method, path, ctype, body string }{
		{"POST", "/v1/chat/completions", "application/json", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true}}`},
		{"POST", "/v1/completions", "application/json", `{"prompt":[1,2,3],"max_tokens":3,"n":2}`},
		{"POST", "/generate", "", `{"text":["a","b"],"sampling_params":{"max_new_tokens":2},"stream":true}`},
		{"POST", "/generate", "", `{"input_ids":[1],"sampling_params":{"temperature":-1}}`},
		{"GET", "/v1/models/%2e%2e", "", ""},
		{"PUT", "/flush_cache?x=1", "text/plain", "\x00\xff"},
		{"GET", "/health_generate", "", ""},
		{"POST", "/v1/chat/completions", "application/json; charset=utf-8", `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"max_tokens":99999999}`},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.ctype, []byte(s.body))
	}
	r := start(f, Config{Profile: sglang.ProfileFor(sglang.EraC), Seed: 3})
	r.waitState(f, StateReady)
	h := r.handler()
	f.Fuzz(func(t *testing.T, method, path, ctype string, body []byte) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest(method, "http://127.0.0.1"+path, strings.NewReader(string(body)))
		if err != nil {
			return // not a request a client could send
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		req.RemoteAddr = "127.0.0.1:40000"
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req.WithContext(ctx))
		if rec.Code == 0 || rec.Code == http.StatusInternalServerError {
			t.Fatalf("%s %s (%q): status %d body %q", method, path, ctype, rec.Code, rec.Body.String())
		}
	})
}
