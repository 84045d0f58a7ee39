package fakeserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// errorShape is SGLang's OpenAI error body; Param is a json.RawMessage so "null" and a
// missing key are told apart.
type errorShape struct {
	Object  string          `json:"object"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Param   json.RawMessage `json:"param"`
	Code    int             `json:"code"`
}

const chatOK = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`

func TestHTTPErrors(t *testing.T) {
	const key = "sk-test"
	bigBody := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", MaxBodyBytes) + `"}]}`
	cases := []struct {
		name                string
		method, path, ctype string
		auth, body          string
		status              int
		openAI              bool   // body is the {"object":"error",...} shape with this status
		msg                 string // substring of message (openAI) or the exact body
		exact               bool
	}{
		{name: "invalid JSON", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key, body: `{"messages":`, status: 400, openAI: true, msg: "invalid request body"},
		{name: "wrong type names the field, not a Go type", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key,
			body: `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":"x"}`, status: 400, openAI: true,
			msg: `[{'type': 'int_type', 'loc': ('body', 'max_tokens'), 'msg': 'Input should be a valid integer'}]`},
		{name: "wrong type in a list", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key,
			body: `{"model":"m","messages":[{"role":5,"content":"hi"}]}`, status: 400, openAI: true,
			msg: `'loc': ('body', 'messages', 'role'), 'msg': 'Input should be a valid string'`},
		{name: "trailing data", method: "POST", path: "/v1/completions", ctype: "application/json", auth: key, body: `{"prompt":"a"} {}`, status: 400, openAI: true, msg: "trailing data"},
		{name: "text/plain on /v1", method: "POST", path: "/v1/chat/completions", ctype: "text/plain", auth: key, body: chatOK, status: 400, openAI: true, msg: "Only 'application/json' is allowed"},
		{name: "no content type on /v1", method: "POST", path: "/v1/completions", auth: key, body: `{"prompt":"a"}`, status: 400, openAI: true, msg: "Only 'application/json' is allowed"},
		{name: "json with charset is fine", method: "POST", path: "/v1/chat/completions", ctype: "application/json; charset=utf-8", auth: key, body: chatOK, status: 200},
		{name: "no messages", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key, body: `{"model":"m","messages":[]}`, status: 400, openAI: true, msg: "at least one message"},
		{name: "bad role", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key, body: `{"messages":[{"role":"robot","content":"x"}]}`, status: 400, openAI: true, msg: `"robot" is not one of`},
		{name: "temperature out of range", method: "POST", path: "/v1/completions", ctype: "application/json", auth: key, body: `{"prompt":"a","temperature":3}`, status: 400, openAI: true, msg: "temperature must be in [0, 2]"},
		{name: "max_tokens over context", method: "POST", path: "/v1/completions", ctype: "application/json", auth: key, body: `{"prompt":"a","max_tokens":40000}`, status: 400, openAI: true, msg: "context length 32768"},
		{name: "n zero", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key, body: `{"messages":[{"role":"user","content":"x"}],"n":0}`, status: 400, openAI: true, msg: "n must be between 1 and 16"},
		{name: "bad prompt type", method: "POST", path: "/v1/completions", ctype: "application/json", auth: key, body: `{"prompt":{"a":1}}`, status: 400, openAI: true, msg: "prompt: must be"},
		{name: "generate without input", method: "POST", path: "/generate", auth: key, body: `{}`, status: 400, msg: `{"error":{"message":"Either text, input_ids or input_embeds should be provided."}}`, exact: true},
		{name: "body over the limit", method: "POST", path: "/v1/chat/completions", ctype: "application/json", auth: key, body: bigBody, status: 413, msg: "request body exceeds 4194304 bytes"},
		{name: "no bearer", method: "GET", path: "/v1/models", status: 401, msg: `{"error":"Unauthorized"}`, exact: true},
		{name: "wrong bearer", method: "GET", path: "/v1/models", auth: "sk-wrong", status: 401, msg: `{"error":"Unauthorized"}`, exact: true},
		{name: "right bearer", method: "GET", path: "/v1/models", auth: key, status: 200,
			msg: `{"data":[{"id":"qwen/qwen2.5-0.5b-instruct","object":"model","created":1771518600,"owned_by":"sglang","root":"qwen/qwen2.5-0.5b-instruct","max_model_len":32768}],"object":"list"}`, exact: true},
		{name: "health needs no key", method: "GET", path: "/health", status: 200, msg: "", exact: true},
		{name: "unknown route", method: "GET", path: "/v2/nothing", auth: key, status: 404, msg: `{"detail":"Not Found"}`, exact: true},
		{name: "dot-dot path is 404, not a redirect", method: "GET", path: "/../../etc/passwd", auth: key, status: 404, msg: `{"detail":"Not Found"}`, exact: true},
		{name: "double slash is 404", method: "GET", path: "//health", auth: key, status: 404, msg: `{"detail":"Not Found"}`, exact: true},
		{name: "dot segment is 404", method: "GET", path: "/v1/./models", auth: key, status: 404, msg: `{"detail":"Not Found"}`, exact: true},
		{name: "unknown route before auth is 401", method: "GET", path: "/v2/nothing", status: 401, msg: `{"error":"Unauthorized"}`, exact: true},
		{name: "unknown model", method: "GET", path: "/v1/models/other", auth: key, status: 404,
			msg: `{"error":{"code":"model_not_found","message":"The model 'other' does not exist","param":"model","type":"invalid_request_error"}}`, exact: true},
		{name: "wrong method", method: "DELETE", path: "/v1/models", auth: key, status: 405, msg: `{"detail":"Method Not Allowed"}`, exact: true},
	}
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Args: sglang.ServerArgs{APIKey: key}, Seed: 5})
	r.waitState(t, StateReady)
	client := &http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, err := http.NewRequest(c.method, r.BaseURL()+c.path, strings.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.auth != "" {
				req.Header.Set("Authorization", "Bearer "+c.auth)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d (body %s)", resp.StatusCode, c.status, body)
			}
			switch {
			case c.exact && string(body) != c.msg:
				t.Errorf("body\n got %s\nwant %s", body, c.msg)
			case c.openAI || c.status == 413:
				var e errorShape
				if err := json.Unmarshal(body, &e); err != nil {
					t.Fatalf("error body is not JSON: %s", body)
				}
				wantType := strconv.Itoa(c.status)
				if c.status == 400 {
					wantType = "Bad Request"
				}
				if e.Object != "error" || e.Type != wantType || string(e.Param) != "null" || e.Code != c.status || !strings.Contains(e.Message, c.msg) {
					t.Errorf("error body %s: want object=error type=%q param=null code=%d message containing %q", body, wantType, c.status, c.msg)
				}
			}
			if c.status != 200 && c.status != 401 && resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("Content-Type %q, want application/json", resp.Header.Get("Content-Type"))
			}
		})
	}
	// Every one of them got an access line and a journal record; none took the server down.
	statuses := map[int]int{}
	for _, rec := range mustJournal(t, r.Server) {
		if rec.Type == RecRequest && !rec.Internal {
			statuses[rec.Status]++
		}
	}
	for _, st := range []int{400, 401, 404, 405, 413} {
		if statuses[st] == 0 {
			t.Errorf("no journal record with status %d: %v", st, statuses)
		}
	}
	logs := string(mustLogs(t, r.Server))
	for _, line := range []string{`"GET /v2/nothing HTTP/1.1" 401 Unauthorized`, `"GET /v2/nothing HTTP/1.1" 404 Not Found`, `"POST /v1/chat/completions HTTP/1.1" 413 Request Entity Too Large`} {
		if !strings.Contains(logs, line) {
			t.Errorf("no access line %q", line)
		}
	}
}

// TestHeaderLimit sends raw requests, as no well-behaved client exceeds the header limit.
func TestHeaderLimit(t *testing.T) {
	cases := []struct {
		name   string
		header int // bytes of one header value
		status int
	}{
		{"under the limit", MaxHeaderBytes / 2, 200},
		{"over the limit", MaxHeaderBytes + 8192, 431},
	}
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraA)})
	r.waitState(t, StateBound)
	addr := strings.TrimPrefix(r.BaseURL(), "http://")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			go func() {
				_, _ = io.WriteString(conn, "GET /health HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", c.header)+"\r\nConnection: close\r\n\r\n")
			}()
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
		})
	}
	if code, _ := call(t, r.BaseURL(), "GET", "/health", ""); code != 200 {
		t.Fatalf("server did not survive: /health %d", code)
	}
}

// TestResetStream: a reset_stream fault cuts a stream after its chunks. The client sees a
// truncated SSE stream (no [DONE]) ending in a connection error, the journal says "reset",
// and streams past count are whole again.
func TestResetStream(t *testing.T) {
	cases := []struct {
		name, path, body string
		chunks           int
	}{
		{"chat", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":20,"stream":true}`, 3},
		{"completions", "/v1/completions", `{"prompt":"hello there","max_tokens":20,"stream":true}`, 2},
		{"generate", "/generate", `{"text":"hello","sampling_params":{"max_new_tokens":20},"stream":true}`, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Seed: 9,
				Faults: []fault.Spec{{Kind: fault.ResetStream, Route: c.path, Chunks: c.chunks, Count: 1}}})
			r.waitState(t, StateReady)
			stream := func() (events []string, err error) {
				req, _ := http.NewRequest("POST", r.BaseURL()+c.path, strings.NewReader(c.body))
				req.Header.Set("Content-Type", "application/json")
				resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
				if err != nil {
					return nil, err
				}
				defer resp.Body.Close()
				if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
					t.Fatalf("stream answered %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
				}
				sc := bufio.NewScanner(resp.Body)
				for sc.Scan() {
					if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
						events = append(events, d)
					}
				}
				return events, sc.Err()
			}
			events, err := stream()
			if err == nil {
				t.Fatalf("reset stream ended cleanly after %d events; want a connection error", len(events))
			}
			if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("stream error %v, want a connection reset", err)
			}
			if len(events) != c.chunks {
				t.Errorf("got %d events before the reset, want %d: %q", len(events), c.chunks, events)
			}
			for _, e := range events {
				if e == "[DONE]" {
					t.Error("a reset stream carried [DONE]")
				}
			}
			// count: 1 — the next stream is whole.
			events, err = stream()
			if err != nil || len(events) <= c.chunks || events[len(events)-1] != "[DONE]" {
				t.Fatalf("second stream: %d events, err %v; want a whole stream ending in [DONE]", len(events), err)
			}
			// A stream's record is written when its handler returns, which can be just after
			// the client has seen the reset: give the handler a moment (bounded).
			var reset, whole int
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				reset, whole = 0, 0
				var odd []Record
				for _, rec := range mustJournal(t, r.Server) {
					if rec.Type != RecRequest || rec.Route != c.path || rec.Internal {
						continue
					}
					switch {
					case rec.Outcome == "reset" && rec.Fault == string(fault.ResetStream) && rec.Status == 200:
						reset++
					case rec.Outcome == "" && rec.Fault == "" && rec.Status == 200:
						whole++
					default:
						odd = append(odd, rec)
					}
				}
				if len(odd) > 0 {
					t.Fatalf("unexpected records %+v", odd)
				}
				if reset+whole >= 2 || time.Now().After(deadline) {
					break
				}
			}
			if reset != 1 || whole != 1 {
				t.Errorf("journal: %d reset and %d whole streams, want 1 and 1", reset, whole)
			}
			if code, _ := call(t, r.BaseURL(), "GET", "/health", ""); code != 200 {
				t.Fatalf("server did not survive the reset: /health %d", code)
			}
		})
	}
}

// TestSlowHealthOnManualClock measures slow_health in scenario time: on a manual clock the
// answer must not come one millisecond before the configured latency, and must come at it.
func TestSlowHealthOnManualClock(t *testing.T) {
	cases := []struct {
		name   string
		era    sglang.Era
		path   string
		want   time.Duration // scenario time from request to answer
		faults []fault.Spec
	}{
		{"era A /health", sglang.EraA, "/health", 30 * time.Second, []fault.Spec{{Kind: fault.SlowHealth, Latency: 30 * time.Second}}},
		// 4 s + 6 s of faults, then the generating check's own 1 s and its 1 ms overhead.
		{"two faults add up", sglang.EraA, "/health_generate", 11*time.Second + time.Millisecond, []fault.Spec{
			{Kind: fault.SlowHealth, Latency: 4 * time.Second}, {Kind: fault.SlowHealth, Route: "/health_generate", Latency: 6 * time.Second}}},
		{"route restricted", sglang.EraA, "/health", 2 * time.Second, []fault.Spec{
			{Kind: fault.SlowHealth, Latency: 2 * time.Second}, {Kind: fault.SlowHealth, Route: "/health_generate", Latency: time.Hour}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := c.want
			clk := replay.Manual(epoch)
			r := start(t, Config{Profile: sglang.ProfileFor(c.era), Clock: clk, Faults: c.faults,
				Args:     sglang.ServerArgs{SkipServerWarmup: true},
				Behavior: Behavior{HealthOverheadMin: time.Millisecond, HealthOverheadMax: time.Millisecond}})
			clk.Advance(2 * time.Second) // HappyPath binds at 2 s
			r.waitState(t, StateReady)
			type answer struct {
				code int
				at   time.Time
			}
			done := make(chan answer, 1)
			sent := clk.Now()
			go func() {
				resp, err := http.Get(r.BaseURL() + c.path)
				if err != nil {
					done <- answer{code: -1}
					return
				}
				resp.Body.Close()
				done <- answer{resp.StatusCode, clk.Now()}
			}()
			// Wait until the handler sleeps on the clock, then walk up to the latency.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := clk.BlockUntilContext(ctx, 1); err != nil {
				t.Fatal("the health handler never waited on the clock")
			}
			for elapsed := time.Duration(0); elapsed < want; {
				step := min(want-time.Millisecond-elapsed, time.Second)
				if step <= 0 {
					break
				}
				clk.Advance(step)
				elapsed += step
				_ = clk.BlockUntilContext(ctx, 1) // the generating check's second sleep
			}
			select {
			case a := <-done:
				t.Fatalf("answered %d after %v, before the %v latency", a.code, a.at.Sub(sent), want)
			case <-time.After(50 * time.Millisecond):
			}
			clk.Advance(time.Millisecond)
			select {
			case a := <-done:
				if a.code != 200 || a.at.Sub(sent) != want {
					t.Fatalf("answered %d after %v of scenario time, want 200 after %v", a.code, a.at.Sub(sent), want)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no answer once the latency had passed")
			}
			for _, rec := range mustJournal(t, r.Server) {
				if rec.Type == RecRequest && rec.Route == c.path {
					if rec.Latency != want || rec.Fault != string(fault.SlowHealth) {
						t.Errorf("journal latency %v fault %q, want %v slow_health", rec.Latency, rec.Fault, want)
					}
					return
				}
			}
			t.Error("no journal record of the health request")
		})
	}
}

// TestClientGoneGetsNoAnswer: a client that half-closes its write side while a handler blocks
// gets the connection closed with no status line (net/http's default would be 200 with an
// empty body, SGLang's healthy /health), and the journal records the request as abandoned.
func TestClientGoneGetsNoAnswer(t *testing.T) {
	cases := []struct {
		name   string
		era    sglang.Era
		path   string
		faults []fault.Spec
	}{
		{"hung health check", sglang.EraA, "/health", []fault.Spec{{Kind: fault.SlowHealth, Latency: 100 * time.Hour}}},
		{"wedged server /health", sglang.EraC, "/health", []fault.Spec{{Kind: fault.Wedge}}},
		{"wedged server /v1/models", sglang.EraB, "/v1/models", []fault.Spec{{Kind: fault.Wedge}}},
		{"wedged scheduler /get_server_info", sglang.EraC, "/get_server_info", []fault.Spec{{Kind: fault.WedgeScheduler}}},
		{"dead scheduler /flush_cache", sglang.EraA, "/flush_cache", []fault.Spec{{Kind: fault.SchedulerDead}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := start(t, Config{Profile: sglang.ProfileFor(c.era), Faults: c.faults, Args: sglang.ServerArgs{SkipServerWarmup: true}})
			r.waitState(t, StateBound)
			conn, err := net.DialTimeout("tcp", strings.TrimPrefix(r.BaseURL(), "http://"), 2*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(conn, "GET "+c.path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			// Let the handler start blocking, then leave.
			time.Sleep(50 * time.Millisecond)
			if err := conn.(*net.TCPConn).CloseWrite(); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Fatalf("connection neither answered nor closed within 5 s (read %q)", got)
			}
			if len(got) != 0 {
				t.Fatalf("a client that left got an answer: %q", got)
			}
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("read: %v, want EOF or a reset", err)
			}
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
				var found []Record
				for _, rec := range mustJournal(t, r.Server) {
					if rec.Type == RecRequest && rec.Route == c.path && !rec.Internal {
						found = append(found, rec)
					}
				}
				if len(found) == 1 && (found[0].Status != 0 || found[0].Outcome != "abandoned") {
					t.Fatalf("journal: %+v, want the request abandoned with no status", found[0])
				}
				if len(found) > 1 {
					t.Fatalf("journal: %d records of one request: %+v", len(found), found)
				}
				if len(found) == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("no journal record of the abandoned request")
				}
			}
		})
	}
}

// FastAPI answers HEAD 405 on every route (its APIRoute does not add HEAD to a GET route as
// Starlette's Route does), so a HEAD-based waiter (curl -I, wait-on) never sees SGLang ready.
// /metrics is a Mount of prometheus_client's app and answers every method.
func TestHeadIsMethodNotAllowed(t *testing.T) {
	routes := []struct {
		path, allow string
		profiles    []sglang.Era // nil: every era
	}{
		{"/health", "GET", nil}, {"/health_generate", "GET", nil}, {"/ping", "GET", nil},
		{"/get_model_info", "GET", nil}, {"/get_server_info", "GET", nil},
		{"/model_info", "GET", []sglang.Era{sglang.EraC}}, {"/server_info", "GET", []sglang.Era{sglang.EraC}},
		{"/freeze_gc", "GET, POST", []sglang.Era{sglang.EraC}},
		{"/v1/models", "GET", nil}, {"/v1/models/qwen/qwen2.5-0.5b-instruct", "GET", nil},
		{"/generate", "POST, PUT", nil}, {"/v1/completions", "POST", nil}, {"/v1/chat/completions", "POST", nil},
		{"/flush_cache", "GET, POST", nil},
	}
	for _, era := range []sglang.Era{sglang.EraA, sglang.EraB, sglang.EraC} {
		t.Run(era.String(), func(t *testing.T) {
			r := start(t, Config{Profile: sglang.ProfileFor(era), Args: sglang.ServerArgs{EnableMetrics: true}})
			r.waitState(t, StateReady)
			head := func(path string) *http.Response {
				t.Helper()
				req, _ := http.NewRequest(http.MethodHead, r.BaseURL()+path, nil)
				resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
				if err != nil {
					t.Fatalf("HEAD %s: %v", path, err)
				}
				resp.Body.Close()
				return resp
			}
			for _, rt := range routes {
				if rt.profiles != nil && rt.profiles[0] != era {
					continue
				}
				resp := head(rt.path)
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != rt.allow ||
					resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Content-Length") != strconv.Itoa(len(`{"detail":"Method Not Allowed"}`)) {
					t.Errorf("HEAD %s: %d Allow %q Content-Type %q Content-Length %q, want 405 Allow %q application/json 31",
						rt.path, resp.StatusCode, resp.Header.Get("Allow"), resp.Header.Get("Content-Type"), resp.Header.Get("Content-Length"), rt.allow)
				}
			}
			if resp := head("/metrics"); resp.StatusCode != http.StatusOK {
				t.Errorf("HEAD /metrics: %d, want 200 (a mount answers every method)", resp.StatusCode)
			}
			if resp := head("/nothing"); resp.StatusCode != http.StatusNotFound {
				t.Errorf("HEAD /nothing: %d, want 404", resp.StatusCode)
			}
			if logs := string(mustLogs(t, r.Server)); !strings.Contains(logs, `"HEAD /health HTTP/1.1" 405 Method Not Allowed`) {
				t.Errorf("no 405 access line for HEAD /health:\n%s", logs)
			}
		})
	}
}
