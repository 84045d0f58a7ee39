package sglang

import (
	"strings"
	"testing"
	"time"
)

// releaseLog renders a startup log the way profile p prints it: the lines every release has,
// with the release's own fields and wording, plus the release-only lines it prints.
func releaseLog(p Profile) string {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	var b strings.Builder
	add := func(e Event, headed bool) {
		if headed {
			e.Time, e.Ranks = at, p.SingleGPURanks()
			at = at.Add(time.Second)
		}
		b.WriteString(Render(e, p) + "\n")
	}
	if p.ServeEntrypointWarn {
		add(ServeWarning("/usr/lib/python3/sglang/launch_server.py", 52), false)
	}
	add(ServerArgsLine(DefaultServerArgs()), true)
	add(DistInitEnd(p, 3*time.Second, 0.5), true)
	add(LoadEnd(p, "Qwen2ForCausalLM", "torch.bfloat16", 40*time.Second, 60, 15), true)
	if p.KVDtypeLine {
		add(KVDtype("torch.bfloat16"), true)
	}
	add(KVAlloc(p, "torch.bfloat16", 90000, 5, 5), true)
	add(CGBegin(p, 40, []int{1, 2, 4}), true)
	if p.CGBatchSizesLine {
		add(CGBatchSizes([]int{1, 2, 4}), true)
	}
	add(CGProgress(p, 4, 1, 3, 39, time.Second, 2*time.Second), false)
	add(CGEnd(p, 3*time.Second, 0.7, 39), true)
	add(Limits(p, LimitsInfo{90000, 8192, 16384, 2048, 32768, 30}), true)
	add(Prefill(p, PrefillStats{NewSeq: 1, NewToken: 6}), true)
	add(Decode(p, DecodeStats{RunningReq: 1, Token: 7, CUDAGraph: true}), true)
	return b.String()
}

func TestDetectRelease(t *testing.T) {
	for _, p := range Profiles() {
		t.Run(p.Name, func(t *testing.T) {
			lines, err := Parse(strings.NewReader(releaseLog(p)))
			if err != nil {
				t.Fatal(err)
			}
			got, ev := DetectRelease(lines)
			if got.Name != p.Name {
				t.Fatalf("detected %s, want %s; evidence %v", got.Name, p.Name, ev)
			}
			if len(ev) == 0 {
				t.Fatal("no evidence named")
			}
			for _, e := range ev {
				if !strings.Contains(strings.Join(e.Releases, " "), p.Name) {
					t.Errorf("evidence %v does not fit %s", e, p.Name)
				}
			}
		})
	}
	// A version string decides over the line formats; a dev build belongs to its release line.
	for _, tc := range []struct{ line, want string }{
		{"sglang: 0.5.11.dev20260512+g339e36e", "0.5.10"},
		{"pip install sglang==0.5.2", "0.5.2"},
		{"image lmsysorg/sglang:v0.5.15-cu130", "main-2026-07"},
		{"sglang: 0.4.1", "0.4.6"},
	} {
		lines, err := Parse(strings.NewReader(tc.line + "\n" + releaseLog(ProfileFor(EraC))))
		if err != nil {
			t.Fatal(err)
		}
		got, ev := DetectRelease(lines)
		if got.Name != tc.want || len(ev) == 0 || !ev[0].Decisive || ev[0].Line != 1 {
			t.Errorf("%q: detected %s (evidence %v), want %s decided by line 1", tc.line, got.Name, ev, tc.want)
		}
	}
	// A log without markers is 0.5.9 and names no evidence.
	if got, ev := DetectRelease(nil); got.Name != "0.5.9" || len(ev) != 0 {
		t.Errorf("empty log: %s %v", got.Name, ev)
	}
}
