package ready

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

func proberFor(t *testing.T, srvURL string, mod ...func(*Spec)) *prober {
	t.Helper()
	s := Spec{Endpoint: srvURL}
	for _, f := range mod {
		f(&s)
	}
	d, u, err := s.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return newProber(&d, u)
}

// recorder is a fake SGLang HTTP front whose answers tests set per path.
type recorder struct {
	mu      sync.Mutex
	methods []string
	bodies  []string
	routes  map[string]func(w http.ResponseWriter, r *http.Request)
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	rc.mu.Lock()
	rc.methods = append(rc.methods, r.Method+" "+r.URL.Path)
	rc.bodies = append(rc.bodies, string(b))
	h := rc.routes[r.URL.Path]
	rc.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	h(w, r)
}

func status(code int) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
}

func body(code int, s string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		io.WriteString(w, s)
	}
}

func TestProbeLadderHealthStatus(t *testing.T) {
	tests := []struct {
		name   string
		health func(http.ResponseWriter, *http.Request)
		want   roundKind
	}{
		{"empty-body 200 is healthy (no body matching)", status(200), roundOK},
		{"503 is warming", status(503), roundWarming},
		{"401 needs the api key", status(401), roundConfig},
		{"404 is the wrong server or path", status(404), roundConfig},
		{"405 is the wrong server", status(405), roundConfig},
		{"a redirect is never followed and never ready", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/login", http.StatusFound)
		}, roundConfig},
		{"500 is retried", status(500), roundHTTPOther},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rc := &recorder{routes: map[string]func(http.ResponseWriter, *http.Request){
				"/health": tc.health, "/login": body(200, "<html>login</html>"),
			}}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			p := proberFor(t, srv.URL)
			r := p.run(context.Background())
			if r.kind != tc.want {
				t.Fatalf("round = %v (%s), want %v", r.kind, r.detail, tc.want)
			}
			for _, m := range rc.methods {
				if m != "GET /health" {
					t.Errorf("unexpected request %q: only GET /health (no HEAD, no redirect follow)", m)
				}
			}
		})
	}
}

func TestProbeRefusedIsNotYet(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	p := proberFor(t, "http://"+addr)
	if r := p.run(context.Background()); r.kind != roundRefused {
		t.Fatalf("round = %v (%s), want refused", r.kind, r.detail)
	}
}

func TestProbeGeneration(t *testing.T) {
	native := `{"text":" Paris","meta_info":{"completion_tokens":1}}`
	tests := []struct {
		name   string
		mode   GenerateProbe
		routes map[string]func(http.ResponseWriter, *http.Request)
		want   roundKind
		detail string
	}{
		{"native passes", GenerateNative, map[string]func(http.ResponseWriter, *http.Request){"/generate": body(200, native)}, roundOK, ""},
		{"native 500 is not ready (health 200 is not enough, S17)", GenerateNative,
			map[string]func(http.ResponseWriter, *http.Request){"/generate": body(500, `{"error":"boom"}`)}, roundGenFailed, "500"},
		{"schema: no text", GenerateNative,
			map[string]func(http.ResponseWriter, *http.Request){"/generate": body(200, `{"choices":[]}`)}, roundGenFailed, `no "text"`},
		{"schema: zero tokens", GenerateNative,
			map[string]func(http.ResponseWriter, *http.Request){"/generate": body(200, `{"text":"","meta_info":{"completion_tokens":0}}`)}, roundGenFailed, "completion_tokens is 0"},
		{"auto falls back to /v1/completions with the served name", GenerateAuto, map[string]func(http.ResponseWriter, *http.Request){
			"/v1/models": body(200, `{"object":"list","data":[{"id":"served-name"}]}`),
			"/v1/completions": func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if !strings.Contains(string(b), `"model":"served-name"`) {
					w.WriteHeader(404)
					return
				}
				io.WriteString(w, `{"choices":[{"text":" Paris"}],"usage":{"completion_tokens":1}}`)
			},
		}, roundOK, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.routes["/health"] = status(200)
			rc := &recorder{routes: tc.routes}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			p := proberFor(t, srv.URL, func(s *Spec) { s.Generate = tc.mode })
			r := p.run(context.Background())
			if r.kind != tc.want || !strings.Contains(r.detail, tc.detail) {
				t.Fatalf("round = %v (%s), want %v containing %q", r.kind, r.detail, tc.want, tc.detail)
			}
		})
	}
}

func TestProbeRetrySendsTheBodyAgain(t *testing.T) {
	fail := true
	rc := &recorder{routes: map[string]func(http.ResponseWriter, *http.Request){
		"/health": status(200),
		"/generate": func(w http.ResponseWriter, r *http.Request) {
			if fail {
				fail = false
				w.WriteHeader(503)
				return
			}
			io.WriteString(w, `{"text":"x"}`)
		},
	}}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	p := proberFor(t, srv.URL, func(s *Spec) { s.Generate = GenerateNative })
	if r := p.run(context.Background()); r.kind != roundGenFailed {
		t.Fatalf("first round = %v, want generation failure", r.kind)
	}
	if r := p.run(context.Background()); r.kind != roundOK {
		t.Fatalf("second round = %v (%s), want ok", r.kind, r.detail)
	}
	for i, m := range rc.methods {
		if m == "POST /generate" && !strings.Contains(rc.bodies[i], "max_new_tokens") {
			t.Errorf("request %d %s had body %q: the body must be rebuilt per attempt", i, m, rc.bodies[i])
		}
	}
}

func TestProbeHangTimesOutOnTheSpecClock(t *testing.T) {
	got := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- struct{}{}
		<-r.Context().Done() // accept, never answer (S3)
	}))
	defer srv.Close()
	clk := clockwork.NewFakeClockAt(t0)
	p := proberFor(t, srv.URL, func(s *Spec) { s.Clock = clk; s.RequestTimeout = 7 * time.Second })
	done := make(chan round, 1)
	go func() { done <- p.run(context.Background()) }()
	<-got // connected and sent: only the request's timer is left on the clock
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clk.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal("prober never waited on the clock")
	}
	clk.Advance(6999 * time.Millisecond)
	select {
	case r := <-done:
		t.Fatalf("returned %v (%s) before the 7 s request timeout", r.kind, r.detail)
	case <-time.After(30 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	select {
	case r := <-done:
		if r.kind != roundNetErr || !strings.Contains(r.detail, "no answer within 7s") {
			t.Fatalf("round = %v (%s), want a 7s request timeout", r.kind, r.detail)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the request timeout did not fire at 7s of clock time")
	}
}

func TestAdaptiveTimeout(t *testing.T) {
	p := proberFor(t, "http://127.0.0.1:1")
	if got := p.timeout(); got != 30*time.Second {
		t.Fatalf("no samples: %s, want the 30s floor", got)
	}
	for range 18 {
		p.observe(time.Second)
	}
	p.observe(25 * time.Second) // slow answers under load (health_generate queued behind prefill)
	p.observe(25 * time.Second)
	if got := p.timeout(); got != 75*time.Second {
		t.Errorf("timeout = %s, want 3 × p95 = 75s", got)
	}
}

func TestSpecRejectsUnsafeValues(t *testing.T) {
	tests := []struct {
		spec Spec
		want string
	}{
		{Spec{}, "no endpoint"},
		{Spec{Endpoint: "http://127.0.0.1:30000", RequestTimeout: time.Second}, "below 5s"},
		{Spec{Endpoint: "http://0.0.0.0:30000"}, "bind address"},
		{Spec{Endpoint: "http://myhost:30000"}, "IP literal"},
		{Spec{Endpoint: "http://127.0.0.1"}, "port explicitly"},
		{Spec{Endpoint: "ftp://127.0.0.1:1"}, "scheme"},
		{Spec{Endpoint: "http://127.0.0.1:1", Successes: -1}, "Successes"},
		{Spec{Endpoint: "http://127.0.0.1:1", Timeout: -time.Second}, "negative"},
	}
	for _, tc := range tests {
		if _, _, err := tc.spec.withDefaults(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want it to mention %q", tc.spec, err, tc.want)
		}
	}
	_, u, err := Spec{Endpoint: "http://localhost:30000/"}.withDefaults()
	if err != nil || u.Host != "127.0.0.1:30000" {
		t.Errorf("localhost: %v %v, want pinned to 127.0.0.1", u, err)
	}
	_ = url.URL{}
}
