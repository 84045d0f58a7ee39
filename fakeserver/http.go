package fakeserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path"
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
	if s.prof.FreezeGCRoute {
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
	// On a virtual clock a request is work from its start until its handler returns, except
	// while the handler waits on the clock or on another part of the run.
	return vtime.Handle(s.clock, s.middleware(uncleanNotFound(mux)))
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
			if !wedged.Wait(ctx) {
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
			if ans.Location != "" {
				aw.Header().Set("Location", ans.Location)
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
