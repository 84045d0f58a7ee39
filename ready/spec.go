package ready

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/sglang"
)

// GenerateProbe selects the generation probe that follows a healthy /health.
type GenerateProbe uint8

const (
	// GenerateOff trusts /health alone.
	GenerateOff GenerateProbe = iota
	// GenerateAuto tries POST /generate and falls back to /v1/completions when it is 404.
	GenerateAuto
	// GenerateNative posts one token to SGLang's /generate.
	GenerateNative
	// GenerateOpenAI posts one token to /v1/completions with the served name from /v1/models.
	GenerateOpenAI
)

// ParseGenerateProbe reads off|auto|native|openai.
func ParseGenerateProbe(s string) (GenerateProbe, error) {
	switch s {
	case "off", "none", "false":
		return GenerateOff, nil
	case "auto", "":
		return GenerateAuto, nil
	case "native", "generate":
		return GenerateNative, nil
	case "openai", "completions":
		return GenerateOpenAI, nil
	}
	return 0, fmt.Errorf("unknown generation probe %q: use off, auto, native or openai", s)
}

// LineParser turns one physical log line into typed events (usually one; a parser that
// joins wrapped lines may return none until the line is complete). The default wraps sglang's
// incremental parser; tests and other servers can supply their own.
type LineParser interface {
	Feed(line string) []sglang.Event
}

// Spec says what to wait for and how. The zero value of every field but Endpoint is a safe
// default (see the field comments); Wait rejects values that would make it unsafe.
type Spec struct {
	// Endpoint is the server's base URL, e.g. http://127.0.0.1:30000. The host must be an IP
	// literal or "localhost" (rewritten to 127.0.0.1): dual-stack names and 0.0.0.0 as a client
	// target are how waiters end up probing the wrong socket.
	Endpoint string
	// Clock drives every timer; default the real clock. Tests pass a fake, the harness a
	// scaled clock so scenario time runs S× faster.
	Clock clockwork.Clock

	Timeout         time.Duration           // overall hard deadline; default 30m. Progress does not extend it.
	Stall           time.Duration           // no progress for this long in a phase = stalled; default 5m
	PhaseStall      map[Phase]time.Duration // per-phase overrides of Stall
	Interval        time.Duration           // between probe rounds; default 1s
	Successes       int                     // K consecutive healthy rounds; default 2 (1 once the log printed the ready line)
	RequestTimeout  time.Duration           // per-request floor; default 30s, never below 5s. Adapts to 3× p95 latency.
	Generate        GenerateProbe           // default GenerateOff in the library; the CLI defaults to auto
	GenerateTimeout time.Duration           // first generation call (JIT); default 120s
	FatalConfirm    time.Duration           // confirmation window after a fatal line; default 1s
	APIKey          string                  // sent as a Bearer token
	TLS             *tls.Config             // for https endpoints; nil = system roots
	TailLines       int                     // log lines kept for the failure report; default 20

	// Log is the server's output (a pipe, a followed file, container logs). Optional: without it
	// there is no phase progress, no stall detection and no fatal-line detection.
	Log io.Reader
	// Parser types the log lines; default the SGLang parser.
	Parser LineParser
	// Process is the server process; when it ends before ready, Wait fails at once.
	Process Process
	// Identity binds readiness to our server rather than whatever answers on the port.
	Identity Identity
	// Observe receives progress events (phase, percent, probes, verdict). Called from Wait's
	// goroutine; it must not block.
	Observe func(Progress)
}

// Identity says how to prove the listener is the server we launched, not a stale one still
// answering on the port.
type Identity struct {
	// PID: every listener on the port must belong to this process or its descendants.
	PID int
	// ProcRoot is where procfs is mounted; default /proc.
	ProcRoot string
	// ServerInfo: values /server_info (or /get_server_info) must report, e.g. "port": "30000".
	ServerInfo map[string]string
}

func (s *Spec) stallBudget(p Phase) time.Duration {
	if d, ok := s.PhaseStall[p]; ok {
		return d
	}
	return s.Stall
}

// MinRequestTimeout is the floor for any probe request: SGLang's /health sleeps 1 s before
// answering and takes 20 s+ under load, so sub-second timeouts never pass.
const MinRequestTimeout = 5 * time.Second

// withDefaults validates the spec and fills defaults; the returned copy is what Wait uses.
func (s Spec) withDefaults() (Spec, *url.URL, error) {
	var errs []error
	if s.Clock == nil {
		s.Clock = clockwork.NewRealClock()
	}
	def := func(d *time.Duration, v time.Duration, name string) {
		switch {
		case *d == 0:
			*d = v
		case *d < 0:
			errs = append(errs, fmt.Errorf("%s is negative (%s): give a positive duration or leave it unset", name, *d))
		}
	}
	def(&s.Timeout, 30*time.Minute, "Timeout")
	def(&s.Stall, 5*time.Minute, "Stall")
	def(&s.Interval, time.Second, "Interval")
	def(&s.RequestTimeout, 30*time.Second, "RequestTimeout")
	def(&s.GenerateTimeout, 120*time.Second, "GenerateTimeout")
	def(&s.FatalConfirm, time.Second, "FatalConfirm")
	if s.RequestTimeout > 0 && s.RequestTimeout < MinRequestTimeout {
		errs = append(errs, fmt.Errorf("RequestTimeout %s is below %s: SGLang's /health takes >= 1 s and 20 s+ under load", s.RequestTimeout, MinRequestTimeout))
	}
	for p, d := range s.PhaseStall {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("stall budget for phase %s must be positive, got %s", p, d))
		}
	}
	if s.Successes == 0 {
		s.Successes = 2
	} else if s.Successes < 0 {
		errs = append(errs, fmt.Errorf("Successes must be >= 1, got %d", s.Successes))
	}
	if s.TailLines <= 0 {
		s.TailLines = 20
	}
	if s.Identity.ProcRoot == "" {
		s.Identity.ProcRoot = "/proc"
	}
	u, err := parseEndpoint(s.Endpoint)
	if err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return s, nil, err
	}
	return s, u, nil
}

// parseEndpoint checks the base URL and pins it to an explicit IP.
func parseEndpoint(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("no endpoint: pass the server's base URL, e.g. http://127.0.0.1:30000")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("endpoint %q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("endpoint %q: scheme must be http or https", raw)
	}
	if u.Port() == "" {
		return nil, fmt.Errorf("endpoint %q: give the port explicitly (SGLang's default is 30000)", raw)
	}
	host := u.Hostname()
	switch {
	case host == "localhost":
		// localhost may resolve to ::1 first while the server bound 127.0.0.1 only.
		u.Host = net.JoinHostPort("127.0.0.1", u.Port())
	case host == "0.0.0.0" || host == "::":
		return nil, fmt.Errorf("endpoint %q: %s is a bind address, not a destination; use 127.0.0.1 (or ::1)", raw, host)
	case net.ParseIP(host) == nil:
		return nil, fmt.Errorf("endpoint %q: use an IP literal, not a name (%q may resolve to another address family or host)", raw, host)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}
