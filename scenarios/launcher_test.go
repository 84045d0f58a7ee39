package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// TestImpliedExit: how the launcher ends a recorded log, line by line.
func TestImpliedExit(t *testing.T) {
	cases := []struct {
		name string
		log  string
		code int
	}{
		{"scheduler traceback, old wording", `[2024-10-22 06:31:49 TP0] Capture cuda graph begin. This can take up to several minutes.
[2024-10-22 06:31:49 TP0] Traceback (most recent call last):
  File "/opt/sglang/srt/model_executor/cuda_graph_runner.py", line 162, in __init__
    self.capture()
RuntimeError: begin_forward failed
`, 137},
		{"scheduler exception, cut mid-frame", `[2025-03-01 10:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/srt/managers/sch`, 137},
		{"scheduler traceback, the process lived on", `[2025-03-01 10:00:00 TP1] Scheduler hit an exception: Traceback (most recent call last):
RuntimeError: NCCL error: unhandled system error
[2025-03-01 10:00:30 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=60.00 GB
`, 0},
		{"launcher traceback", `Traceback (most recent call last):
  File "<frozen runpy>", line 198, in _run_module_as_main
  File "/opt/sglang/launch_server.py", line 69, in <module>
RuntimeError: Rank 0 scheduler died during initialization (exit code: 255).
`, 1},
		{"launcher lines decide", `[2026-04-26 14:38:11] Rank 0 scheduler is dead. Please check if there are relevant logs.
[2026-04-26 14:38:11] Exit code: -3
`, 1},
		{"sigquit", "[2025-06-22 16:14:00] Received sigquit from a child process. It usually means the child failed.\n", 137},
		{"a library's traceback in the main process", `[2025-03-01 10:00:00] Init torch distributed begin.
Traceback (most recent call last):
  File "/opt/lib/thing.py", line 3, in run
ValueError: bad
`, 0},
		{"serving, no failure", "[2025-05-26 07:52:49] INFO:     10.0.0.1:6000 - \"GET /health HTTP/1.1\" 200 OK\n", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			lines, err := sglang.Parse(strings.NewReader(tc.log))
			if err != nil {
				t.Fatal(err)
			}
			tl, err := LogTimeline(lines, 100*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if code, why := impliedExit(lines, tl); code != tc.code {
				t.Errorf("exit %d (%s), want %d", code, why, tc.code)
			}
		})
	}
}

// TestRecordedStartsServing: a log that starts with answered requests binds at 0; an offline
// Engine's Prefill lines and a log from launch do not.
func TestRecordedStartsServing(t *testing.T) {
	cases := []struct {
		log    string
		bindAt time.Duration // -1: never
	}{
		{"[2025-05-26 07:52:49] INFO:     10.0.0.1:6000 - \"GET /health_generate HTTP/1.1\" 200 OK\n", 0},
		{"[16:43:29 TP0] Prefill batch. #new-seq: 1, #new-token: 20, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0\n", -1},
		{"[2025-01-01 00:00:00] server_args=ServerArgs(model_path='m')\n[2025-01-01 00:00:09] INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)\n", 9 * time.Second},
	}
	for _, tc := range cases {
		tl, err := recordedTimeline(strings.NewReader(tc.log), 0)
		if err != nil {
			t.Fatal(err)
		}
		got := time.Duration(-1)
		for _, e := range tl.Entries {
			if e.Op == replay.OpBind {
				got = e.At
				break
			}
		}
		if got != tc.bindAt {
			t.Errorf("%.50q: bind at %v, want %v", tc.log, got, tc.bindAt)
		}
	}
}
