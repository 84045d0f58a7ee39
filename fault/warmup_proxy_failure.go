package fault

import (
	"fmt"
	"net/http"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// WarmupProxyFailure: the warmup requests go through an HTTP proxy that refuses them.
const WarmupProxyFailure Kind = "warmup_proxy_failure"

// Defaults of warmup_proxy_failure.
const (
	DefaultProxyStatus     = http.StatusBadGateway
	DefaultProxyPollWindow = 120 * time.Second
)

func init() {
	register(Def{Kind: WarmupProxyFailure, Summary: "the warmup requests go through an HTTP proxy that answers status (default 502) for for (default 120s of polling), then Initialization failed. warmup error ... and exit code (default 137)",
		Fields: []string{FieldFor, FieldStatus, FieldCode}, DefaultCode: DefaultCrashCode, DefaultStatus: DefaultProxyStatus, EndsBind: true,
		Fault: warmupProxyFailure{}})
}

type warmupProxyFailure struct{}

func (warmupProxyFailure) Check(s Spec) error { return checkStatusAndCode(s) }

// window is how long the warmup polls through the proxy before it gives up.
func (warmupProxyFailure) window(s Spec) time.Duration {
	if s.For == 0 {
		return DefaultProxyPollWindow
	}
	return s.For
}

// Predict: the server binds, polls through the proxy for the window, then exits; it is never
// ready.
func (w warmupProxyFailure) Predict(s Spec, _ time.Duration, f *Forecast) {
	f.WarmupBroken = true
	if f.Truth.Bound != nil {
		at, code := *f.Truth.Bound+w.window(s), s.ExitCode()
		f.Truth.Dead, f.Truth.ExitCode = &at, &code
	}
}

// TakeWarmup: after the window, SGLang's warmup assertion fails and the process exits.
func (w warmupProxyFailure) TakeWarmup(s Spec, srv Server, at time.Duration) {
	srv.After(at+w.window(s), func(at time.Duration) {
		t := srv.Stamp(at)
		lines := []sglang.Event{
			{Kind: sglang.KindInitFailed, Time: t, Text: "warmup error: Traceback (most recent call last):"},
			{Kind: sglang.KindTraceback, Text: `  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/http_server.py", line 1052, in _wait_and_warmup`},
			{Kind: sglang.KindTraceback, Text: `    assert res.status_code == 200, f"{res=}, {res.text=}"`},
			{Kind: sglang.KindException, Fields: sglang.Fields{{Key: "exc", Value: "AssertionError"}}, Text: fmt.Sprintf("res=<Response [%d]>, res.text=''", s.HTTPStatus())},
		}
		for _, ev := range lines {
			srv.Log(at, replay.Stderr, ev)
		}
		srv.Exit(at, s.ExitCode(), WarmupProxyFailure)
	})
}
