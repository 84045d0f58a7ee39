package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/net/http/httpproxy"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
)

// testcontainers-go wait strategies as testcontainers-go v0.45.0 runs them (wait/http.go,
// wait/all.go, wait/host_port.go, wait/log.go, options.go), on the run's clock. How a test
// attaches a strategy decides its deadline: GenericContainerRequest.WaitingFor runs it with
// its own startup timeout, while testcontainers.WithWaitStrategy(s...) sets WaitingFor to
// wait.ForAll(s...).WithDeadline(60s), whose 60 s cut every startup timeout inside it short.

// TCStrategy is a testcontainers-go wait strategy evaluated on the run's clock.
type TCStrategy interface {
	wait(ctx context.Context, env Env, deadline time.Time) error
}

const (
	tcPoll          = 100 * time.Millisecond // defaultPollInterval
	tcClientTimeout = time.Second            // HTTPStrategy's http.Client Timeout, not configurable
	tcDefaultWait   = 60 * time.Second       // defaultStartupTimeout
	// TCWithWaitStrategyDeadline is the deadline testcontainers.WithWaitStrategy puts on the
	// strategies it is given.
	TCWithWaitStrategyDeadline = 60 * time.Second
)

// tcCheckTarget is testcontainers' checkTarget: a dead container fails the strategy at once.
func tcCheckTarget(env Env) error {
	if env.Exited == nil {
		return nil
	}
	if code, ok := env.Exited(); ok {
		return fmt.Errorf("container exited with code %d", code)
	}
	return nil
}

// TCHTTP is wait.ForHTTP(Path) with no port given (the container's lowest exposed port):
// it waits one poll interval, checks the container and reads its port mapping; then, one poll
// interval after the previous attempt ended, it checks the container again and sends a GET
// through one http.Client for the whole wait: a 1 s Timeout that covers the dial, keep-alive
// connections, redirects followed, the proxy taken from the environment. Only a status Status
// accepts passes; the body is not read. StartupTimeout (default 60 s) bounds the whole wait,
// a request in flight included.
type TCHTTP struct {
	Path           string
	Status         func(int) bool // default: == 200
	StartupTimeout time.Duration  // default 60s
}

func (s TCHTTP) wait(ctx context.Context, env Env, deadline time.Time) error {
	ok := s.Status
	if ok == nil {
		ok = func(c int) bool { return c == http.StatusOK }
	}
	deadline = tcDeadline(env, deadline, s.StartupTimeout)
	client, closeIdle := tcClient(env.ServerEnv)
	defer closeIdle()
	// "We wait one polling interval before we grab the ports."
	if err := tcSleep(ctx, env, deadline); err != nil {
		return fmt.Errorf("ForHTTP(%s): %w before the port mapping was read", s.Path, err)
	}
	if err := tcCheckTarget(env); err != nil {
		return err
	}
	last := "no request made"
	for {
		if err := tcSleep(ctx, env, deadline); err != nil {
			return fmt.Errorf("ForHTTP(%s): %w (last: %s)", s.Path, err, last)
		}
		if err := tcCheckTarget(env); err != nil {
			return err
		}
		// The strategy's context carries the deadline, so it cuts a request short too.
		timeout := min(tcClientTimeout, env.Clock.Until(deadline))
		code, err := request(ctx, env.Clock, client, env.URL+s.Path, timeout, false)
		if err == nil && ok(code) {
			return nil
		}
		last = "status " + strconv.Itoa(code)
		if err != nil {
			last = err.Error()
		}
	}
}

// tcClient is HTTPStrategy's client: keep-alive connections (one wait reuses them), the proxy
// from the environment environ gives the test process, redirects followed. Its 1 s Timeout is
// applied per request on the run's clock. closeIdle drops the connections the wait kept.
func tcClient(environ []string) (c *http.Client, closeIdle func()) {
	tr := &http.Transport{
		Proxy:                 tcProxy(environ),
		DialContext:           vtime.DialContext((&net.Dialer{KeepAlive: 30 * time.Second}).DialContext),
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return &http.Client{Transport: tr}, tr.CloseIdleConnections
}

// tcProxy is http.ProxyFromEnvironment over environ: HTTP_PROXY before http_proxy (likewise
// HTTPS and NO), and never a proxy for localhost or a loopback address.
func tcProxy(environ []string) func(*http.Request) (*url.URL, error) {
	get := func(names ...string) string {
		for _, n := range names {
			for _, kv := range environ {
				if k, v, ok := strings.Cut(kv, "="); ok && k == n && v != "" {
					return v
				}
			}
		}
		return ""
	}
	f := (&httpproxy.Config{
		HTTPProxy:  get("HTTP_PROXY", "http_proxy"),
		HTTPSProxy: get("HTTPS_PROXY", "https_proxy"),
		NoProxy:    get("NO_PROXY", "no_proxy"),
	}).ProxyFunc()
	return func(r *http.Request) (*url.URL, error) { return f(r.URL) }
}

// TCPort is wait.ForListeningPort(p).SkipInternalCheck(): dial until it connects; only
// ECONNREFUSED and timeouts are retried.
type TCPort struct{ StartupTimeout time.Duration }

func (s TCPort) wait(ctx context.Context, env Env, deadline time.Time) error {
	deadline = tcDeadline(env, deadline, s.StartupTimeout)
	addr := net.JoinHostPort(env.Host, strconv.Itoa(env.Port))
	for {
		if err := tcCheckTarget(env); err != nil {
			return err
		}
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			c.Close()
			return nil
		}
		var ne net.Error
		if !errors.Is(err, syscall.ECONNREFUSED) && !(errors.As(err, &ne) && ne.Timeout()) && ctx.Err() == nil {
			return fmt.Errorf("ForListeningPort: %w", err)
		}
		if err := tcSleep(ctx, env, deadline); err != nil {
			return fmt.Errorf("ForListeningPort(%d): %w", env.Port, err)
		}
	}
}

// TCLog is wait.ForLog(pattern).AsRegexp().WithOccurrence(n), optionally with a Submatch that
// returns wait.NewPermanentError for lines matching Fatal. Like v0.45.0 it re-reads the whole
// log on every poll and does not stop on a dead container while the log is readable.
type TCLog struct {
	Pattern        *regexp.Regexp
	Fatal          *regexp.Regexp // nil: no Submatch
	Occurrence     int            // default 1
	StartupTimeout time.Duration
}

func (s TCLog) wait(ctx context.Context, env Env, deadline time.Time) error {
	deadline = tcDeadline(env, deadline, s.StartupTimeout)
	want := max(s.Occurrence, 1)
	for {
		b, err := os.ReadFile(env.LogFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("ForLog: %w", err)
		}
		ms := s.Pattern.FindAll(b, -1)
		for _, m := range ms {
			if s.Fatal != nil && s.Fatal.Match(m) {
				return fmt.Errorf("ForLog: permanent error: fatal line %q", m)
			}
		}
		if len(ms) >= want {
			return nil
		}
		if err := tcSleep(ctx, env, deadline); err != nil {
			return fmt.Errorf("ForLog(%s): %w", s.Pattern, err)
		}
	}
}

// TCAll is wait.ForAll(s...).WithDeadline(d): the strategies run one after another, all
// within d of the start, whatever their own startup timeouts say.
type TCAll struct {
	Strategies []TCStrategy
	Deadline   time.Duration // 0: none (ForAll without WithDeadline)
}

func (s TCAll) wait(ctx context.Context, env Env, deadline time.Time) error {
	if s.Deadline > 0 {
		deadline = tcDeadline(env, deadline, s.Deadline)
	}
	for _, st := range s.Strategies {
		if err := st.wait(ctx, env, deadline); err != nil {
			return err
		}
	}
	return nil
}

// TCWithWaitStrategy is testcontainers.WithWaitStrategy(s...): ForAll(s...) with its 60 s
// deadline.
func TCWithWaitStrategy(s ...TCStrategy) TCStrategy {
	return TCAll{Strategies: s, Deadline: TCWithWaitStrategyDeadline}
}

// TCWait turns a strategy into a tool's wait function.
func TCWait(s TCStrategy) WaitFunc {
	return func(ctx context.Context, env Env) error { return s.wait(ctx, env, time.Time{}) }
}

// tcDeadline is the sooner of the enclosing deadline (zero: none) and own (0: the library's
// 60 s default) from now.
func tcDeadline(env Env, outer time.Time, own time.Duration) time.Time {
	if own == 0 {
		own = tcDefaultWait
	}
	d := env.Clock.Now().Add(own)
	if !outer.IsZero() && outer.Before(d) {
		return outer
	}
	return d
}

// tcSleep is the strategies' wait between attempts: one poll interval, or errGaveUp once the
// deadline comes first (the library's select on time.After and the context's end).
func tcSleep(ctx context.Context, env Env, deadline time.Time) error {
	left := env.Clock.Until(deadline)
	if left <= 0 {
		return errGaveUp
	}
	if left > tcPoll {
		return replay.SleepCtx(ctx, env.Clock, tcPoll)
	}
	if err := replay.SleepCtx(ctx, env.Clock, left); err != nil {
		return err
	}
	return errGaveUp
}
