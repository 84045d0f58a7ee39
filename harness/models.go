package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
)

// These are readiness tools whose semantics are evaluated on the run's clock instead of being
// run for real: the Kubernetes kubelet, Docker/compose health checks and testcontainers-go wait
// strategies all have real-time internals (a hard-coded 1 s client timeout, a 100 ms poll) that
// faketime cannot reach, and running them at S=1 would make the matrix take hours. Each model
// follows the documented rules of the tool it models.

var (
	probeTransport = &http.Transport{Proxy: nil, DisableKeepAlives: true,
		DialContext: vtime.DialContext((&net.Dialer{}).DialContext)}
	probeClient           = &http.Client{Transport: probeTransport}
	probeClientNoRedirect = &http.Client{Transport: probeTransport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
)

// get issues one GET with a scenario-time timeout. Keep-alives are off so every probe dials,
// as a probe process would; proxies are never used (the kubelet and Go ignore them on loopback).
func get(ctx context.Context, clock replay.Clock, url string, timeout time.Duration, follow bool) (int, error) {
	c := probeClient
	if !follow {
		c = probeClientNoRedirect
	}
	return request(ctx, clock, c, url, timeout, true)
}

// request issues one GET through c, cut off after timeout of scenario time (0: none). With
// drain the answer's body (up to 10 KiB) is read within the timeout, as a probe that reads its
// answer does; otherwise it is closed unread.
func request(ctx context.Context, clock replay.Clock, c *http.Client, url string, timeout time.Duration, drain bool) (int, error) {
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if timeout > 0 {
		t := clock.AfterFunc(timeout, func() {
			if task := vtime.TaskFrom(ctx); task != nil {
				task.Wake() // the probe works again from the timeout on
			}
			cancel()
		})
		defer t.Stop()
	}
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	// On a virtual clock the probe is idle while the request is out; the request holds the
	// clock while it or its answer is on the wire (vtime.RequestDuring).
	var (
		resp *http.Response
		body error
	)
	vtime.RequestDuring(ctx, clock, req.URL.Host, func() {
		resp, err = c.Do(req)
		if err == nil {
			if drain {
				_, body = io.Copy(io.Discard, io.LimitReader(resp.Body, 10<<10))
			}
			resp.Body.Close()
		}
	})
	if err != nil {
		if rctx.Err() != nil && ctx.Err() == nil {
			return 0, fmt.Errorf("no answer within %s", timeout)
		}
		return 0, err
	}
	if body != nil && rctx.Err() != nil && ctx.Err() == nil {
		return 0, fmt.Errorf("no answer within %s", timeout)
	}
	return resp.StatusCode, nil
}

// ---- Kubernetes ----

// Probe is one kubelet httpGet probe. Zero fields take the Kubernetes defaults.
type Probe struct {
	Path             string
	InitialDelay     time.Duration // initialDelaySeconds, default 0
	Period           time.Duration // periodSeconds, default 10s
	Timeout          time.Duration // timeoutSeconds, default 1s
	SuccessThreshold int           // default 1
	FailureThreshold int           // default 3
}

// Effective is the probe with Kubernetes' defaults filled in, as the kubelet runs it.
func (p Probe) Effective() Probe { return p.withDefaults() }

func (p Probe) withDefaults() Probe {
	if p.Path == "" {
		p.Path = "/health"
	}
	if p.Period == 0 {
		p.Period = 10 * time.Second
	}
	if p.Timeout == 0 {
		p.Timeout = time.Second
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	return p
}

// Pod is a container's probe set. The pod is Ready once the startup probe (if any) has
// passed and the readiness probe (if any) has passed SuccessThreshold times in a row; with
// no readiness probe the kubelet marks it Ready as soon as startup is done. A startup or
// liveness probe that reaches FailureThreshold restarts the container, and the container
// exiting ends it too: both are failures here (the replayed server cannot be restarted).
type Pod struct {
	Startup, Readiness, Liveness *Probe
}

type probeEvent struct {
	kind string // startup, readiness, liveness
	pass bool   // threshold of successes reached (startup/readiness) vs failures
	msg  string
}

// runProbe runs p on its schedule and reports when a threshold is crossed. stopOnPass ends it
// after the success threshold (startup); a liveness probe only ever reports failure.
func runProbe(ctx context.Context, env Env, kind string, p Probe, out chan<- probeEvent, to *vtime.Task) {
	p = p.withDefaults()
	if replay.SleepCtx(ctx, env.Clock, p.InitialDelay) != nil {
		return
	}
	succ, fail := 0, 0
	// The kubelet's prober runs on a ticker: due times are absolute, so a late wake-up (a busy
	// host at compressed time) does not push every later probe back, and ticks missed while a
	// slow probe ran are dropped, as time.Ticker drops them.
	next := env.Clock.Now()
	for {
		for now := env.Clock.Now(); !next.After(now); {
			next = next.Add(p.Period)
		}
		code, err := get(ctx, env.Clock, env.URL+p.Path, p.Timeout, true)
		if ctx.Err() != nil {
			return
		}
		if err == nil && code >= 200 && code < 400 {
			succ, fail = succ+1, 0
		} else {
			succ, fail = 0, fail+1
		}
		switch {
		case kind != "liveness" && succ >= p.SuccessThreshold:
			to.Wake() // the pod's task has work from here on: no jump before it takes the event
			out <- probeEvent{kind: kind, pass: true}
			return
		case kind != "readiness" && fail >= p.FailureThreshold:
			why := "status " + strconv.Itoa(code)
			if err != nil {
				why = err.Error()
			}
			to.Wake()
			out <- probeEvent{kind: kind, msg: fmt.Sprintf("%s probe failed %d times (last: %s); the kubelet restarts the container", kind, fail, why)}
			return
		}
		if replay.SleepCtx(ctx, env.Clock, env.Clock.Until(next)) != nil {
			return
		}
	}
}

// Wait models the pod becoming Ready.
func (pod Pod) Wait(ctx context.Context, env Env) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	events := make(chan probeEvent, 4)
	exited := exitWatch(ctx, env)
	// Each prober is a goroutine of its own: on a virtual clock, a task of its own.
	pod0 := vtime.TaskFrom(ctx)
	prober := func(kind string, p Probe) {
		task := vtime.NewTask(env.Clock)
		go func() {
			defer task.End()
			runProbe(vtime.WithTask(ctx, task), env, kind, p, events, pod0)
		}()
	}
	startedAfterStartup := func() {
		if pod.Liveness != nil {
			prober("liveness", *pod.Liveness)
		}
		if pod.Readiness != nil {
			prober("readiness", *pod.Readiness)
		}
	}
	if pod.Startup != nil {
		prober("startup", *pod.Startup)
	} else {
		startedAfterStartup()
		if pod.Readiness == nil {
			return nil // no probes gate readiness: Ready as soon as the container runs
		}
	}
	for {
		var (
			ev   probeEvent
			code int
			what int // 0 ctx, 1 exit, 2 event
		)
		// What arrived while the model worked is taken before it goes idle (see await in
		// package ready).
		select {
		case code = <-exited:
			what = 1
		case ev = <-events:
			what = 2
		default:
			vtime.IdleDuring(ctx, env.Clock, func() {
				select {
				case <-ctx.Done():
				case code = <-exited:
					what = 1
				case ev = <-events:
					what = 2
				}
			})
		}
		switch what {
		case 0:
			return ctx.Err()
		case 1:
			return fmt.Errorf("container exited with code %d (CrashLoopBackOff)", code)
		case 2:
			switch {
			case !ev.pass:
				return errors.New(ev.msg)
			case ev.kind == "startup":
				startedAfterStartup()
				if pod.Readiness == nil {
					return nil
				}
			case ev.kind == "readiness":
				return nil
			}
		}
	}
}

// exitWatch delivers the server's exit code once it exits (the kubelet, Docker and
// testcontainers all see the container's state). The task ctx carries is woken before the
// code is handed over, at the exit itself: on virtual time a goroutine that forwarded Done
// could be scheduled after the clock had moved on, and the tool would see the exit only at
// its next timer (compose's next check, 13 s late, under load).
func exitWatch(ctx context.Context, env Env) <-chan int {
	ch := make(chan int, 1)
	if env.OnExit != nil {
		task := vtime.TaskFrom(ctx)
		env.OnExit(func(code int) {
			task.Wake()
			select {
			case ch <- code:
			default:
			}
		})
		return ch
	}
	if env.Exited == nil || env.Done == nil {
		return ch
	}
	go func() {
		select {
		case <-env.Done:
			if code, ok := env.Exited(); ok {
				ch <- code
			}
		case <-ctx.Done():
		}
	}()
	return ch
}

// ---- Docker HEALTHCHECK / compose depends_on: service_healthy ----

// Healthcheck models a compose healthcheck whose test is `curl -f URL || exit 1` (SGLang's
// docker/compose.yaml) and a consumer that depends on it with condition: service_healthy.
type Healthcheck struct {
	Path          string
	Interval      time.Duration // default 30s
	Timeout       time.Duration // default 30s
	Retries       int           // default 3
	StartPeriod   time.Duration // default 0
	StartInterval time.Duration // default 5s (used only during StartPeriod)
	MaxTime       time.Duration // curl --max-time inside the test, 0 = none
	WaitTimeout   time.Duration // `docker compose up --wait-timeout`, 0 = none
}

// Wait returns nil once the container is healthy and an error once compose gives up on it:
// "dependency failed to start: container is unhealthy", the container exiting, or the
// --wait-timeout.
func (h Healthcheck) Wait(ctx context.Context, env Env) error {
	if h.Path == "" {
		h.Path = "/health"
	}
	if h.Interval == 0 {
		h.Interval = 30 * time.Second
	}
	if h.Timeout == 0 {
		h.Timeout = 30 * time.Second
	}
	if h.Retries == 0 {
		h.Retries = 3
	}
	if h.StartInterval == 0 {
		h.StartInterval = 5 * time.Second
	}
	start := env.Clock.Now()
	if h.WaitTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		t := env.Clock.AfterFunc(h.WaitTimeout, cancel)
		defer t.Stop()
	}
	exited := exitWatch(ctx, env)
	fails := 0
	for {
		inStart := env.Clock.Since(start) < h.StartPeriod
		gap := h.Interval
		if inStart {
			gap = h.StartInterval
		}
		// Docker waits one interval before the first check. The timer is armed before the
		// task goes idle: armed after, a goroutine the machine kept waiting let the clock run
		// to the harness limit first (s7-slow-load: no check by 60 s).
		code, exit := 0, false
		gapped := vtime.TaskTimer(vtime.TaskFrom(ctx), env.Clock, gap) // busy from its fire on
		select {
		case code = <-exited:
			exit = true
		default:
			vtime.IdleDuring(ctx, env.Clock, func() {
				select {
				case code = <-exited:
					exit = true
				case <-gapped.Chan():
				case <-ctx.Done():
				}
			})
		}
		gapped.Stop()
		switch {
		case exit:
			return fmt.Errorf("dependency failed to start: container exited (%d)", code)
		case ctx.Err() != nil:
			if h.WaitTimeout > 0 && env.Clock.Since(start) >= h.WaitTimeout {
				return fmt.Errorf("compose --wait-timeout %s reached before the container was healthy", h.WaitTimeout)
			}
			return ctx.Err()
		}
		timeout := h.Timeout
		if h.MaxTime > 0 && h.MaxTime < timeout {
			timeout = h.MaxTime
		}
		code, err := get(ctx, env.Clock, env.URL+h.Path, timeout, false)
		if ctx.Err() != nil {
			continue // the select above reports why
		}
		if err == nil && code < 400 { // curl -f: only >= 400 fails, 3xx is not followed
			return nil
		}
		if env.Clock.Since(start) < h.StartPeriod {
			continue // failures during start_period do not count
		}
		if fails++; fails >= h.Retries {
			return fmt.Errorf("dependency failed to start: container is unhealthy (%d failed checks)", fails)
		}
	}
}
