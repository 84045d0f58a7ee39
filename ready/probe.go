package ready

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/vtime"
)

// prober runs the probe ladder: TCP connect, GET /health by status, optional generation probe,
// identity. One round at a time; the latencies it keeps drive the adaptive timeout.
type prober struct {
	base     *url.URL
	clock    clockwork.Clock
	client   *http.Client
	spec     *Spec
	lat      []time.Duration // recent /health latencies (successful answers)
	genOK    int             // generation probes passed (the first one gets the JIT budget)
	model    string          // served model name from /v1/models
	native   bool            // /generate exists (GenerateAuto resolved)
	resolved bool
	idOK     bool // identity verified once; a listener does not change owner while bound
	requests int
	notes    []string
	logKey   string // api key read from the server's log; set by Wait between rounds
}

func newProber(spec *Spec, base *url.URL) *prober {
	tr := &http.Transport{
		Proxy:             nil, // proxies that catch loopback turn a healthy server into 502/403
		DisableKeepAlives: true,
		TLSClientConfig:   spec.TLS,
		// On a virtual clock the round's task is idle while its request is on the wire.
		DialContext: vtime.DialContext((&net.Dialer{}).DialContext),
	}
	if base.Scheme == "https" && tr.TLSClientConfig == nil {
		tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	return &prober{
		base: base, clock: spec.Clock, spec: spec,
		client: &http.Client{
			Transport: tr,
			// A redirect from /health is a landing or login page, never readiness.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
	}
}

// timeout is the adaptive per-request budget: max(floor, 3 × p95 of recent answers).
func (p *prober) timeout() time.Duration {
	t := p.spec.RequestTimeout
	if len(p.lat) == 0 {
		return t
	}
	s := slices.Clone(p.lat)
	slices.Sort(s)
	p95 := s[(len(s)*95+99)/100-1]
	return max(t, 3*p95)
}

func (p *prober) observe(d time.Duration) {
	const keep = 20
	if len(p.lat) == keep {
		p.lat = p.lat[1:]
	}
	p.lat = append(p.lat, d)
}

// withTimeout bounds ctx on the spec's clock (scaled or fake), not wall time.
func (p *prober) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	task := vtime.TaskFrom(ctx)
	t := p.clock.AfterFunc(d, func() {
		if task != nil {
			task.Wake() // the round works again from its timeout on
		}
		cancel(errRequestTimeout{d})
	})
	return ctx, func() { t.Stop(); cancel(nil) }
}

type errRequestTimeout struct{ d time.Duration }

func (e errRequestTimeout) Error() string { return "no answer within " + e.d.String() }

// do sends one request built fresh for this attempt (a reused body reader is empty on the
// second try) and reads the whole body exactly once.
func (p *prober) do(ctx context.Context, method, path string, body []byte, limit time.Duration) (int, []byte, time.Duration, error) {
	ctx, cancel := p.withTimeout(ctx, limit)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base.String()+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key := cmp.Or(p.spec.APIKey, p.logKey); key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	p.requests++
	t0 := p.clock.Now()
	// On a virtual clock the round is idle while its request is out; the request holds the
	// clock while it or its answer is on the wire (vtime.RequestDuring).
	var (
		resp *http.Response
		b    []byte
		rerr error
	)
	vtime.RequestDuring(ctx, p.clock, p.base.Host, func() {
		resp, err = p.client.Do(req)
		if err == nil {
			b, rerr = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
	})
	if err != nil {
		if c := context.Cause(ctx); c != nil && errors.As(c, new(errRequestTimeout)) {
			err = c
		}
		return 0, nil, p.clock.Since(t0), err
	}
	err = rerr
	lat := p.clock.Since(t0)
	if err != nil {
		if c := context.Cause(ctx); c != nil && errors.As(c, new(errRequestTimeout)) {
			err = c
		}
		return resp.StatusCode, nil, lat, err
	}
	return resp.StatusCode, b, lat, nil
}

// dial is rung (a): refused means "not yet", anything else is counted.
func (p *prober) dial(ctx context.Context) (roundKind, string) {
	ctx, cancel := p.withTimeout(ctx, MinRequestTimeout)
	defer cancel()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", p.base.Host)
	if err == nil {
		c.Close()
		return roundOK, ""
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return roundRefused, "connection refused"
	}
	if c := context.Cause(ctx); c != nil && ctx.Err() != nil {
		return roundNetErr, "connect: " + c.Error()
	}
	return roundNetErr, "connect: " + err.Error()
}

// run performs one ladder round.
func (p *prober) run(ctx context.Context) round {
	r := p.ladder(ctx)
	r.key = cmp.Or(p.spec.APIKey, p.logKey)
	return r
}

// ladder climbs the rungs: dial, health, identity, generation.
func (p *prober) ladder(ctx context.Context) round {
	if k, why := p.dial(ctx); k != roundOK {
		return round{kind: k, detail: why}
	}
	status, _, lat, err := p.do(ctx, http.MethodGet, "/health", nil, p.timeout())
	if err != nil {
		var tlsErr *tls.CertificateVerificationError
		if errors.As(err, &tlsErr) || errors.As(err, new(tls.RecordHeaderError)) {
			return round{kind: roundConfig, detail: "TLS: " + err.Error() + " (pass a CA or the skip-verify option)"}
		}
		return round{kind: roundNetErr, detail: "GET /health: " + err.Error()}
	}
	r := round{status: status, latency: lat}
	switch {
	case status == http.StatusOK:
		p.observe(lat)
	case status == http.StatusServiceUnavailable:
		r.kind, r.detail = roundWarming, "GET /health 503 (warming up)"
		return r
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		r.kind, r.detail, r.auth = roundConfig, fmt.Sprintf("GET /health %d: the server wants credentials; pass its --api-key", status), true
		return r
	case status == http.StatusNotFound || status == http.StatusMethodNotAllowed || (status >= 300 && status < 400):
		r.kind, r.detail = roundConfig, fmt.Sprintf("GET /health %d: this is not an SGLang server, or the URL has the wrong path prefix", status)
		return r
	default:
		r.kind, r.detail = roundHTTPOther, "GET /health "+strconv.Itoa(status)
		return r
	}
	if err := p.identity(ctx); err != nil {
		var mm *mismatchError
		if errors.As(err, &mm) {
			return round{kind: roundIdentity, status: status, latency: lat, detail: mm.Error()}
		}
		return round{kind: roundNetErr, status: status, latency: lat, detail: "identity: " + err.Error()}
	}
	if p.spec.Generate != GenerateOff {
		if why := p.generate(ctx); why != "" {
			k, auth := roundGenFailed, false
			if strings.Contains(why, " 401: ") || strings.Contains(why, " 403: ") {
				k, why, auth = roundConfig, why+" (the server wants credentials; pass its --api-key)", true
			}
			return round{kind: k, status: status, latency: lat, detail: why, auth: auth}
		}
		r.detail = fmt.Sprintf("GET /health 200 in %s, generation probe passed", lat.Round(time.Millisecond))
	} else {
		r.detail = fmt.Sprintf("GET /health 200 in %s", lat.Round(time.Millisecond))
	}
	r.kind = roundOK
	return r
}

// generate is rung (c): one token, schema checked. It returns "" on success, else why not.
func (p *prober) generate(ctx context.Context) string {
	limit := p.spec.GenerateTimeout
	if p.genOK > 0 {
		limit = p.timeout()
	}
	mode := p.spec.Generate
	if mode == GenerateAuto && p.resolved {
		mode = GenerateOpenAI
		if p.native {
			mode = GenerateNative
		}
	}
	if mode == GenerateAuto || mode == GenerateNative {
		body := []byte(`{"text":"The capital of France is","sampling_params":{"max_new_tokens":1,"temperature":0}}`)
		status, b, _, err := p.do(ctx, http.MethodPost, "/generate", body, limit)
		switch {
		case err != nil:
			return "POST /generate: " + err.Error()
		case status == http.StatusNotFound && mode == GenerateAuto:
			p.resolved, p.native = true, false
			return p.generate(ctx)
		case status != http.StatusOK:
			return fmt.Sprintf("POST /generate %d: %s", status, snippet(b))
		}
		p.resolved, p.native = true, true
		if why := checkNative(b); why != "" {
			return "POST /generate: " + why
		}
		p.genOK++
		return ""
	}
	if p.model == "" {
		status, b, _, err := p.do(ctx, http.MethodGet, "/v1/models", nil, p.timeout())
		if err != nil {
			return "GET /v1/models: " + err.Error()
		}
		if status != http.StatusOK {
			return fmt.Sprintf("GET /v1/models %d: %s", status, snippet(b))
		}
		var ml struct {
			Data []struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &ml); err != nil || len(ml.Data) == 0 || ml.Data[0].ID == "" {
			return "GET /v1/models: no served model in " + snippet(b)
		}
		p.model = ml.Data[0].ID
	}
	body, _ := json.Marshal(map[string]any{"model": p.model, "prompt": "The capital of France is", "max_tokens": 1, "temperature": 0})
	status, b, _, err := p.do(ctx, http.MethodPost, "/v1/completions", body, limit)
	switch {
	case err != nil:
		return "POST /v1/completions: " + err.Error()
	case status != http.StatusOK:
		return fmt.Sprintf("POST /v1/completions %d: %s", status, snippet(b))
	}
	if why := checkOpenAI(b); why != "" {
		return "POST /v1/completions: " + why
	}
	p.genOK++
	return ""
}

// checkNative validates a /generate body: a text string and, when reported, one token.
func checkNative(b []byte) string {
	var r struct {
		Text     *string `json:"text"`
		MetaInfo *struct {
			CompletionTokens *int `json:"completion_tokens"`
		} `json:"meta_info"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "body is not JSON: " + snippet(b)
	}
	if r.Text == nil {
		return "no \"text\" in " + snippet(b)
	}
	if r.MetaInfo != nil && r.MetaInfo.CompletionTokens != nil {
		if *r.MetaInfo.CompletionTokens < 1 {
			return "meta_info.completion_tokens is 0: nothing was generated"
		}
		return ""
	}
	if *r.Text == "" {
		return "empty \"text\" and no meta_info.completion_tokens"
	}
	return ""
}

// checkOpenAI validates a /v1/completions body: choices[0].text and, when reported, usage.
func checkOpenAI(b []byte) string {
	var r struct {
		Choices []struct {
			Text *string `json:"text"`
		} `json:"choices"`
		Usage *struct {
			CompletionTokens *int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return "body is not JSON: " + snippet(b)
	}
	if len(r.Choices) == 0 || r.Choices[0].Text == nil {
		return "no choices[0].text in " + snippet(b)
	}
	if r.Usage != nil && r.Usage.CompletionTokens != nil {
		if *r.Usage.CompletionTokens < 1 {
			return "usage.completion_tokens is 0: nothing was generated"
		}
		return ""
	}
	if *r.Choices[0].Text == "" {
		return "empty choices[0].text and no usage"
	}
	return ""
}

func snippet(b []byte) string {
	const n = 120
	if len(b) == 0 {
		return "(empty body)"
	}
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}
