package fakeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

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

// methodIs answers 405 unless r uses one of methods, as a FastAPI route does: FastAPI's
// APIRoute, unlike a plain Starlette Route, does not add HEAD to a GET route, so HEAD gets
// {"detail":"Method Not Allowed"} (headers only) with the route's methods in Allow. Starlette
// joins a set there, so a two-method route's order varies between SGLang processes; the fake
// keeps the order given.
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
