package fakeserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

var epoch = time.Date(2026, 2, 19, 16, 30, 0, 0, time.UTC)

// fast is the time factor of in-process tests: one scenario second is one wall millisecond.
const fast = 1000

type testRun struct {
	*Server
	journal *bytes.Buffer
	stdout  string // the file Config.Stdout wrote (Stderr defaults to it)
}

func start(t testing.TB, cfg Config) *testRun {
	t.Helper()
	if cfg.Timeline.Entries == nil {
		cfg.Timeline = HappyPath(epoch, cfg.Profile, 2*time.Second, 0, 0)
	}
	if cfg.Clock == nil {
		cfg.Clock = replay.Scaled(epoch, fast)
	}
	jr := &bytes.Buffer{}
	stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdout.Close() })
	cfg.Journal, cfg.Stdout = jr, stdout
	s, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return &testRun{Server: s, journal: jr, stdout: stdout.Name()}
}

// waitState polls the journal until a state record appears.
func (r *testRun) waitState(t testing.TB, state string) Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		recs, err := r.Journal(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if rec.Type == RecState && rec.State == state {
				return rec
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("state %q never reached; journal:\n%s", state, r.journal.String())
	return Record{}
}

const (
	refused = -1 // ECONNREFUSED
	hangs   = -2 // no response within the client timeout
	closed  = -3 // accepted, then closed without an HTTP answer
)

func call(t *testing.T, base, method, path, body string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 300 * time.Millisecond} // 300 scenario seconds: longer than every finite wait
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return refused, ""
		}
		// A server that accepts and closes at once can beat the request write; net/http then
		// reports "server closed idle connection" instead of EOF, even on a fresh connection.
		if errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || strings.Contains(err.Error(), "server closed idle connection") {
			return closed, ""
		}
		var ne interface{ Timeout() bool }
		if errors.As(err, &ne) && ne.Timeout() {
			return hangs, ""
		}
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type cell struct {
	method, path, body string
	want               [3]int // era A, B, C
}

const gen = `{"text":"The capital city of France is","sampling_params":{"max_new_tokens":8}}`

func TestEndpointStateMatrix(t *testing.T) {
	rows := map[string][]cell{
		"a-unbound": {
			{"GET", "/health", "", [3]int{refused, refused, refused}},
			{"GET", "/v1/models", "", [3]int{refused, refused, refused}},
		},
		"b-starting": {
			{"GET", "/health", "", [3]int{200, 503, 503}},
			{"GET", "/health_generate", "", [3]int{200, 503, 503}},
			{"GET", "/v1/models", "", [3]int{200, 200, 200}},
			{"GET", "/get_model_info", "", [3]int{200, 200, 200}},
			{"GET", "/model_info", "", [3]int{404, 404, 200}},
			{"GET", "/get_server_info", "", [3]int{200, 200, 200}},
			{"POST", "/generate", gen, [3]int{200, 200, 200}},
			{"GET", "/metrics", "", [3]int{404, 404, 404}},
			{"GET", "/flush_cache", "", [3]int{200, 200, 200}},
			{"GET", "/ping", "", [3]int{200, 200, 200}},
			{"GET", "/nope", "", [3]int{404, 404, 404}},
		},
		"c-up": {
			{"GET", "/health", "", [3]int{200, 200, 200}},
			{"GET", "/health_generate", "", [3]int{200, 200, 200}},
			{"GET", "/v1/models", "", [3]int{200, 200, 200}},
			{"GET", "/server_info", "", [3]int{404, 404, 200}},
			{"POST", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, [3]int{200, 200, 200}},
		},
		"d1-scheduler-wedged": {
			{"GET", "/health", "", [3]int{200, 503, 503}},
			{"GET", "/health_generate", "", [3]int{503, 503, 503}},
			{"GET", "/v1/models", "", [3]int{200, 200, 200}},
			{"GET", "/get_server_info", "", [3]int{hangs, hangs, hangs}},
			{"POST", "/generate", gen, [3]int{hangs, hangs, hangs}},
			{"GET", "/flush_cache", "", [3]int{hangs, hangs, hangs}},
		},
		// A zombie in every era: 0.5.9 has no SubprocessWatchdog yet (TestSchedulerDeadTeardown).
		"d2-scheduler-dead": {
			{"GET", "/health", "", [3]int{200, 503, 503}},
			{"GET", "/health_generate", "", [3]int{503, 503, 503}},
			{"GET", "/v1/models", "", [3]int{200, 200, 200}},
			{"POST", "/generate", gen, [3]int{hangs, hangs, hangs}},
		},
	}
	for ei, era := range []sglang.Era{sglang.EraA, sglang.EraB, sglang.EraC} {
		for state, cells := range rows {
			t.Run(era.String()+"/"+state, func(t *testing.T) {
				cfg := Config{Profile: sglang.ProfileFor(era), Seed: 7}
				switch state {
				case "a-unbound":
					cfg.Timeline = HappyPath(epoch, cfg.Profile, time.Hour, 0, 0)
				case "b-starting":
					cfg.Behavior.WarmupPoll = 10 * time.Hour
				case "d1-scheduler-wedged":
					cfg.Faults = []fault.Spec{{Kind: fault.WedgeScheduler, At: 10 * time.Second}}
				case "d2-scheduler-dead":
					cfg.Faults = []fault.Spec{{Kind: fault.SchedulerDead, At: 10 * time.Second}}
				}
				r := start(t, cfg)
				switch state {
				case "b-starting":
					r.waitState(t, StateBound)
				case "c-up":
					r.waitState(t, StateReady)
				case "d1-scheduler-wedged":
					r.waitState(t, StateSchedulerWedged)
				case "d2-scheduler-dead":
					r.waitState(t, StateSchedulerDead)
				}
				for _, c := range cells {
					got, body := call(t, r.BaseURL(), c.method, c.path, c.body)
					if got != c.want[ei] {
						t.Errorf("%s %s: got %d want %d (body %q)", c.method, c.path, got, c.want[ei], body)
					}
					if strings.HasPrefix(c.path, "/health") && got > 0 && body != "" {
						t.Errorf("%s: health bodies are empty, got %q", c.path, body)
					}
				}
			})
		}
	}
}

// TestSchedulerDeadTeardown: from 0.5.10 the SubprocessWatchdog ends the server when the
// scheduler dies; 0.5.9 keeps serving HTTP as a zombie.
func TestSchedulerDeadTeardown(t *testing.T) {
	for _, tc := range []struct {
		profile  string
		teardown bool
	}{{"0.5.9", false}, {"0.5.10", true}, {"main-2026-07", true}} {
		t.Run(tc.profile, func(t *testing.T) {
			p, err := sglang.LookupProfile(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			r := start(t, Config{Profile: p, Seed: 7, Faults: []fault.Spec{{Kind: fault.SchedulerDead, At: 10 * time.Second}}})
			r.waitState(t, StateSchedulerDead)
			if tc.teardown {
				r.waitState(t, StateDead)
				<-r.Done() // the dead record is journaled before the process counts as exited
				if code, _ := r.ExitCode(); code != 137 {
					t.Errorf("exit %d, want 137", code)
				}
				if !strings.Contains(string(mustLogs(t, r.Server)), "crashed with exit code -9. Triggering SIGQUIT for cleanup...") {
					t.Errorf("no SubprocessWatchdog line in:\n%s", mustLogs(t, r.Server))
				}
				return
			}
			if got, _ := call(t, r.BaseURL(), "GET", "/v1/models", ""); got != 200 {
				t.Errorf("/v1/models on a 0.5.9 zombie: %d, want 200", got)
			}
		})
	}
}

func TestWarmupSequenceAndHealthProbeLines(t *testing.T) {
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Seed: 1})
	r.waitState(t, StateReady)
	if code, _ := call(t, r.BaseURL(), "GET", "/health", ""); code != 200 {
		t.Fatalf("health after ready: %d", code)
	}
	logs := string(mustLogs(t, r.Server))
	order := []string{
		"INFO:     Started server process [",
		"INFO:     Uvicorn running on http://127.0.0.1:",
		`"GET /model_info HTTP/1.1" 200 OK`,
		"Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0",
		`"POST /generate HTTP/1.1" 200 OK`,
		"The server is fired up and ready to roll!",
		"#new-token: 1, #cached-token: 0",
		`- "GET /health HTTP/1.1" 200 OK`,
	}
	pos := 0
	for _, want := range order {
		i := strings.Index(logs[pos:], want)
		if i < 0 {
			t.Fatalf("missing (in order) %q in:\n%s", want, logs)
		}
		pos += i + len(want)
	}
	// The process's stdout carries every line Logs has, byte for byte, in the same order (read
	// second, it may have more).
	out, err := os.ReadFile(r.stdout)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), logs) {
		t.Fatalf("stdout differs from Logs:\n%s\n---\n%s", out, logs)
	}
	truth := GroundTruth(mustJournal(t, r.Server))
	if truth.Bound == nil || truth.Ready == nil || *truth.Ready-*truth.Bound != 1300*time.Millisecond {
		t.Fatalf("truth: %+v", truth)
	}
}

func TestHealthFailedAfterTimeout(t *testing.T) {
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraB), Seed: 1, Env: map[string]string{"SGLANG_HEALTH_CHECK_TIMEOUT": "7"},
		Faults: []fault.Spec{{Kind: fault.WedgeScheduler, At: 10 * time.Second, For: time.Minute}}})
	r.waitState(t, StateSchedulerWedged)
	begin := r.Clock().Now()
	if code, _ := call(t, r.BaseURL(), "GET", "/health_generate", ""); code != 503 {
		t.Fatalf("want 503, got %d", code)
	}
	if took := r.Clock().Since(begin); took < 7*time.Second {
		t.Fatalf("503 came after %v of scenario time, before the 7 s health timeout", took)
	}
	if !strings.Contains(string(mustLogs(t, r.Server)), "Health check failed. Server couldn't get a response from detokenizer for last 7 seconds. tic start time: ") {
		t.Fatal("no Health check failed line")
	}
	r.waitState(t, StateUnhealthy)
	r.waitState(t, StateSchedulerResume)
	if code, _ := call(t, r.BaseURL(), "GET", "/health", ""); code != 200 {
		t.Fatalf("after resume want 200, got %d", code)
	}
	r.waitState(t, StateHealthy)
}

func TestHealthEnvToggleEraC(t *testing.T) {
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Env: map[string]string{"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "false"},
		Faults: []fault.Spec{{Kind: fault.WedgeScheduler, At: 10 * time.Second}}})
	r.waitState(t, StateSchedulerWedged)
	if code, _ := call(t, r.BaseURL(), "GET", "/health", ""); code != 200 {
		t.Fatalf("toggle off: /health must be an instant 200, got %d", code)
	}
	if code, _ := call(t, r.BaseURL(), "GET", "/health_generate", ""); code != 503 {
		t.Fatalf("/health_generate always generates: want 503, got %d", code)
	}
	if _, err := Start(context.Background(), Config{Env: map[string]string{"SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION": "maybe"}}); err == nil {
		t.Fatal("bad env value accepted")
	}
}

func mustLogs(t *testing.T, s *Server) []byte {
	b, _ := s.Logs(context.Background())
	return b
}

func mustJournal(t *testing.T, s *Server) []Record {
	recs, err := s.Journal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// A late loop timer must not hide an event from the journal the harness scores against:
// CatchUp runs what is due by then, in order, and nothing later.
func TestCatchUpRunsWhatIsDue(t *testing.T) {
	clk := replay.Manual(epoch)
	tl := replay.Timeline{Start: epoch, Entries: []replay.Entry{
		{At: 6 * time.Second, Op: replay.OpLog, Stream: replay.Stderr, Event: sglang.Event{Kind: sglang.KindForeign, Text: "RuntimeError: NCCL error"}},
		{At: 7 * time.Second, Op: replay.OpWedge},
		{At: 9 * time.Second, Op: replay.OpExit, Code: 1},
	}}
	r := start(t, Config{Profile: sglang.ProfileFor(sglang.EraC), Clock: clk, Timeline: tl})
	states := func() []string {
		var out []string
		for _, rec := range mustJournal(t, r.Server) {
			if rec.Type == RecState {
				out = append(out, fmt.Sprintf("%s@%v", rec.State, rec.At))
			}
		}
		return out
	}
	before := states()
	r.CatchUp(6500 * time.Millisecond)
	if got := states(); !slices.Equal(got, before) {
		t.Fatalf("CatchUp(6.5s) recorded %v, want no new state (the wedge is due at 7s)", got)
	}
	if !bytes.Contains(mustLogs(t, r.Server), []byte("NCCL error")) {
		t.Fatal("CatchUp(6.5s) did not print the 6s log line")
	}
	r.CatchUp(8 * time.Second)
	got := states()
	if !slices.Contains(got, "wedged@7s") || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "dead@") }) {
		t.Fatalf("after CatchUp(8s) the journal's states are %v, want wedged@7s and no exit (due at 9s)", got)
	}
	if _, exited := r.ExitCode(); exited {
		t.Fatal("CatchUp(8s) ran the exit due at 9s")
	}
}
