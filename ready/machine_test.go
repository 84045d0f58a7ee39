package ready

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func testSpec(mod ...func(*Spec)) *Spec {
	s := Spec{Endpoint: "http://127.0.0.1:30000"}
	for _, f := range mod {
		f(&s)
	}
	d, _, err := s.withDefaults()
	if err != nil {
		panic(err)
	}
	return &d
}

func ev(k sglang.Kind, kv ...string) sglang.Event {
	e := sglang.Event{Kind: k}
	for i := 0; i+1 < len(kv); i += 2 {
		e.Fields = append(e.Fields, sglang.Field{Key: kv[i], Value: kv[i+1]})
	}
	return e
}

// step is one timestamped input to the machine.
type step struct {
	t     float64
	line  *sglang.Event
	raw   string
	round *round
	exit  *ExitStatus
}

func lineAt(t float64, e sglang.Event, raw string) step { return step{t: t, line: &e, raw: raw} }
func roundAt(t float64, k roundKind, detail string) step {
	return step{t: t, round: &round{kind: k, detail: detail}}
}

// run feeds steps, ticking at every step and every 10 ms between them, and returns the
// decision and when it was made (seconds).
func run(m *machine, steps []step, until float64) (decision, float64) {
	ms := func(s float64) int64 { return int64(s*1000 + 0.5) }
	now := int64(0)
	tick := func(to int64) bool {
		for ; now <= to; now += 10 {
			if m.onTick(t0.Add(time.Duration(now) * time.Millisecond)).done {
				return true
			}
		}
		now = to
		return false
	}
	for _, s := range steps {
		if tick(ms(s.t)) {
			return m.d, float64(now) / 1000
		}
		switch {
		case s.line != nil:
			m.onLine(*s.line, s.raw, at(s.t))
		case s.round != nil:
			m.onRound(*s.round, at(s.t))
		case s.exit != nil:
			m.onExit(*s.exit, at(s.t))
		}
		if m.d.done {
			return m.d, s.t
		}
	}
	tick(ms(until))
	return m.d, float64(now) / 1000
}

func TestMachineRules(t *testing.T) {
	oom := "[2026-03-01 12:00:10 TP0] Scheduler hit an exception: Traceback (most recent call last):"
	tests := []struct {
		name     string
		spec     *Spec
		steps    []step
		until    float64
		wantCode Code
		wantDone bool
		atLeast  float64 // decision time window (seconds)
		atMost   float64
		cause    string // substring of the cause
	}{
		{
			name:     "two consecutive healthy rounds are ready",
			spec:     testSpec(),
			steps:    []step{roundAt(1, roundWarming, "503"), roundAt(2, roundOK, "200"), roundAt(2.1, roundOK, "200")},
			until:    10,
			wantCode: CodeReady, wantDone: true, atLeast: 2.1, atMost: 2.1,
		},
		{
			name:  "a 503 between successes resets the count",
			spec:  testSpec(),
			steps: []step{roundAt(1, roundOK, ""), roundAt(2, roundWarming, ""), roundAt(3, roundOK, "")},
			until: 10, wantDone: false,
		},
		{
			name: "after the log's ready line one success is enough",
			spec: testSpec(),
			steps: []step{
				lineAt(1, ev(sglang.KindUvicornRunning), "Uvicorn running"),
				lineAt(2, ev(sglang.KindReady), "The server is fired up and ready to roll!"),
				roundAt(3, roundOK, "200"),
			},
			until: 10, wantCode: CodeReady, wantDone: true, atLeast: 3, atMost: 3,
		},
		{
			name: "era A: a 200 during warmup waits for the log's ready line",
			spec: testSpec(),
			steps: []step{
				lineAt(1, ev(sglang.KindUvicornRunning), "Uvicorn running on http://127.0.0.1:30000"),
				roundAt(2, roundOK, "200"), roundAt(2.1, roundOK, "200"), roundAt(3, roundOK, "200"),
				lineAt(5, ev(sglang.KindReady), "The server is fired up and ready to roll!"),
				roundAt(5.2, roundOK, "200"),
			},
			until: 10, wantCode: CodeReady, wantDone: true, atLeast: 5.2, atMost: 5.2,
		},
		{
			name:     "401 is a configuration error at once",
			spec:     testSpec(),
			steps:    []step{roundAt(4, roundConfig, "GET /health 401")},
			until:    10,
			wantCode: CodeHTTPConfig, wantDone: true, atLeast: 4, atMost: 4, cause: "401",
		},
		{
			name:     "a foreign listener is an identity failure",
			spec:     testSpec(),
			steps:    []step{roundAt(1, roundIdentity, "port 30000 is served by PID 7")},
			until:    10,
			wantCode: CodeIdentity, wantDone: true, atLeast: 1, atMost: 1,
		},
		{
			name: "a strong fatal line fails after the confirmation window, with the exception as cause",
			spec: testSpec(),
			steps: []step{
				lineAt(10, ev(sglang.KindSchedulerExc), oom),
				lineAt(10.2, ev(sglang.KindException, "exc", "torch.OutOfMemoryError"), "torch.OutOfMemoryError: CUDA out of memory."),
			},
			until:    100,
			wantCode: CodeFatalLog, wantDone: true, atLeast: 11, atMost: 11.01, cause: "CUDA out of memory",
		},
		{
			name: "a traceback followed by progress was survived",
			spec: testSpec(),
			steps: []step{
				lineAt(5, ev(sglang.KindTracebackStart), "Traceback (most recent call last):"),
				lineAt(5.1, ev(sglang.KindException), "ImportError: Ignoring mcp import error"),
				lineAt(5.5, ev(sglang.KindLoadBegin), "Load weight begin. avail mem=137.34 GB"),
			},
			until: 30, wantDone: false,
		},
		{
			name: "a traceback with an exception and nothing after is fatal",
			spec: testSpec(),
			steps: []step{
				lineAt(5, ev(sglang.KindTracebackStart), "Traceback (most recent call last):"),
				lineAt(5.1, ev(sglang.KindException), "RuntimeError: boom"),
			},
			until: 30, wantCode: CodeFatalLog, wantDone: true, atLeast: 6.1, atMost: 6.11, cause: "RuntimeError: boom",
		},
		{
			name: "the process exit wins over a pending fatal line and names it",
			spec: testSpec(),
			steps: []step{
				lineAt(10, ev(sglang.KindHostMemError), "ValueError: Not enough host memory available."),
				{t: 10.3, exit: &ExitStatus{Code: -1, Signal: "killed"}},
			},
			until: 30, wantCode: CodeExited, wantDone: true, atLeast: 10.3, atMost: 10.3, cause: "Not enough host memory",
		},
		{
			name: "an exit with no fatal line names the phase and the last line (hicache OOM kill)",
			spec: testSpec(),
			steps: []step{
				lineAt(50, ev(sglang.KindHiCacheAlloc, "size_gb", "180.00"), "[TP0] Allocating 180.00 GB host memory for hierarchical KV cache."),
				{t: 53, exit: &ExitStatus{Code: 137}},
			},
			until: 60, wantCode: CodeExited, wantDone: true, atLeast: 53, atMost: 53, cause: "during phase hicache after: [TP0] Allocating 180.00 GB",
		},
		{
			name: "no progress for the stall budget is stalled",
			spec: testSpec(func(s *Spec) { s.Stall = 60 * time.Second }),
			steps: []step{
				lineAt(1, ev(sglang.KindCGBegin), "Capture cuda graph begin."),
				lineAt(2, ev(sglang.KindCGProgress, "pct", "40"), "Capturing batches 40%"),
				lineAt(30, ev(sglang.KindCGProgress, "pct", "40"), "Capturing batches 40% (redraw, not progress)"),
			},
			until: 200, wantCode: CodeStalled, wantDone: true, atLeast: 62, atMost: 62.01, cause: "cuda_graph at 40%",
		},
		{
			name: "slow but moving is not stalled, and the overall deadline is hard",
			spec: testSpec(func(s *Spec) { s.Stall = 60 * time.Second; s.Timeout = 100 * time.Second }),
			steps: func() []step {
				var st []step
				for i := range 15 { // 50 s per shard, past the 100 s timeout
					st = append(st, lineAt(float64(i*50), ev(sglang.KindShardProgress, "done", strconv.Itoa(i), "total", "30"), "Loading safetensors checkpoint shards"))
				}
				return st
			}(),
			until: 740, wantCode: CodeTimeout, wantDone: true, atLeast: 100, atMost: 100.01,
		},
		{
			name:     "without a log only the overall deadline applies",
			spec:     testSpec(func(s *Spec) { s.Timeout = 20 * time.Second }),
			steps:    []step{roundAt(1, roundRefused, ""), roundAt(2, roundRefused, "")},
			until:    100,
			wantCode: CodeTimeout, wantDone: true, atLeast: 20, atMost: 20.01,
		},
		{
			name:     "per-phase stall budgets override the default",
			spec:     testSpec(func(s *Spec) { s.PhaseStall = map[Phase]time.Duration{PhaseLoading: 10 * time.Second} }),
			steps:    []step{lineAt(1, ev(sglang.KindLoadBegin), "Load weight begin.")},
			until:    100,
			wantCode: CodeStalled, wantDone: true, atLeast: 11, atMost: 11.01, cause: "phase loading",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newMachine(tc.spec, t0)
			d, when := run(m, tc.steps, tc.until)
			if d.done != tc.wantDone {
				t.Fatalf("done = %v (%v %q at %.2fs), want %v", d.done, d.code, d.cause, when, tc.wantDone)
			}
			if !tc.wantDone {
				return
			}
			if d.code != tc.wantCode {
				t.Errorf("code = %v (%q), want %v", d.code, d.cause, tc.wantCode)
			}
			if when < tc.atLeast-1e-9 || when > tc.atMost+1e-9 {
				t.Errorf("decided at %.2fs, want within [%.2f, %.2f]", when, tc.atLeast, tc.atMost)
			}
			if !strings.Contains(d.cause, tc.cause) {
				t.Errorf("cause %q does not contain %q", d.cause, tc.cause)
			}
		})
	}
}

func TestMachineTailSkipsNoise(t *testing.T) {
	m := newMachine(testSpec(func(s *Spec) { s.TailLines = 2 }), t0)
	m.onLine(ev(sglang.KindLoadBegin), "load begin", at(1))
	m.onLine(ev(sglang.KindAccess), `INFO:     127.0.0.1:1 - "GET /health HTTP/1.1" 503`, at(2))
	m.onLine(ev(sglang.KindLoadEnd), "load end", at(3))
	m.onLine(ev(sglang.KindDecode), "Decode batch", at(4))
	m.onLine(ev(sglang.KindKVAlloc), "kv alloc", at(5))
	if got := strings.Join(m.tail, "|"); got != "load end|kv alloc" {
		t.Errorf("tail = %q, want the last two lines that matter", got)
	}
}

func TestMachineNextWake(t *testing.T) {
	m := newMachine(testSpec(func(s *Spec) { s.Stall = time.Minute; s.Timeout = time.Hour }), t0)
	if got := m.nextWake(); !got.Equal(at(3600)) {
		t.Errorf("idle: nextWake = %v, want the deadline", got.Sub(t0))
	}
	m.onLine(ev(sglang.KindLoadBegin), "x", at(10))
	if got := m.nextWake(); !got.Equal(at(70)) {
		t.Errorf("loading: nextWake = %v, want the stall time 70s", got.Sub(t0))
	}
	m.onLine(ev(sglang.KindNCCLError), "NCCL error: unhandled system error", at(20))
	if got := m.nextWake(); !got.Equal(at(21)) {
		t.Errorf("fatal pending: nextWake = %v, want the confirmation end 21s", got.Sub(t0))
	}
}

func TestMachineReadsAPIKeyFromServerArgs(t *testing.T) {
	for _, text := range []string{
		"ServerArgs(model_path='m', port=30000, api_key='sk-1', served_model_name=None)",
		"{'model_path': 'm', 'api_key': 'sk-1', 'port': 30000}",
	} {
		m := newMachine(testSpec(), t0)
		m.onLine(sglang.Event{Kind: sglang.KindServerArgs, Text: text}, "server_args="+text, at(0))
		if m.logAPIKey != "sk-1" {
			t.Errorf("%s: key = %q, want sk-1", text, m.logAPIKey)
		}
	}
	m := newMachine(testSpec(), t0)
	m.onLine(sglang.Event{Kind: sglang.KindServerArgs, Text: "ServerArgs(api_key=None)"}, "", at(0))
	if m.logAPIKey != "" {
		t.Errorf("api_key=None gave key %q", m.logAPIKey)
	}
}

// Attaching to a running server, the first probe round can reach the server before the log
// reader has got through the backlog to the server_args line that carries the key; the
// refusal of that key-less round is not a configuration error (seen in containers: llmwait
// gave up on s19-auth with the key in the log it was reading).
func TestMachineAuthRefusalWaitsForTheLogKey(t *testing.T) {
	withLog := func(s *Spec) { s.Log = strings.NewReader("") }
	refused := func(key string) round {
		return round{kind: roundConfig, auth: true, key: key, detail: "POST /generate 401"}
	}
	args := sglang.Event{Kind: sglang.KindServerArgs, Text: "{'api_key': 'sk-1'}"}

	m := newMachine(testSpec(withLog), t0)
	if d, again := m.onRound(refused(""), at(1)); d.done || again {
		t.Fatalf("first key-less refusal with the log unread: done=%v again=%v, want a retry at the interval", d.done, again)
	}
	m.onLine(args, "server_args=...", at(1.5))
	if d, again := m.onRound(refused(""), at(2)); d.done || !again {
		t.Fatalf("refusal of a round sent before the key arrived: done=%v again=%v, want an immediate retry", d.done, again)
	}
	if d, _ := m.onRound(refused("sk-1"), at(3)); !d.done || d.code != CodeHTTPConfig {
		t.Fatalf("refusal of the log's own key: %+v, want a configuration error", d)
	}

	m = newMachine(testSpec(withLog), t0)
	m.onRound(refused(""), at(1))
	if d, _ := m.onRound(refused(""), at(2)); !d.done || d.code != CodeHTTPConfig {
		t.Fatalf("second key-less refusal, still no server_args line: %+v, want a configuration error", d)
	}
	for name, spec := range map[string]*Spec{
		"no log":    testSpec(),
		"key given": testSpec(withLog, func(s *Spec) { s.APIKey = "sk-given" }),
	} {
		m = newMachine(spec, t0)
		key := spec.APIKey
		if d, _ := m.onRound(refused(key), at(1)); !d.done || d.code != CodeHTTPConfig {
			t.Errorf("%s: refusal = %+v, want a configuration error at once", name, d)
		}
	}
}
