package scenarios

import (
	"strings"
	"testing"
)

const good = `name: t
summary: s
sources: [{ref: incidents.md}]
profile: C
host: h100-x8
launch: {flags: --model-path m --tp 2}
timeline:
  modelled:
    phases:
      per_shard: 1s
expect:
  bound: 20s
  ready: 21s
  tolerance: 2s
  verdict: ready-ok
`

// TestLoadErrors pins each broken file's exact message and position.
func TestLoadErrors(t *testing.T) {
	cases := []struct {
		name, from, to, want string
	}{
		{"unknown field", "      per_shard: 1s", "      per_shrd: 1s", `x.yaml:10:7: unknown field "per_shrd" (did you mean "per_shard"?)`},
		{"typo at top", "profile: C", "profil: C", `x.yaml:4:1: unknown field "profil" (did you mean "profile"?)`},
		{"bad duration", "per_shard: 1s", "per_shard: fast", `x.yaml:10:18: bad duration "fast" (use Go duration text, e.g. 90s, 11m, 1m30s)`},
		{"unitless duration", "per_shard: 1s", "per_shard: 5", `x.yaml:10:18: want a duration such as "90s" or "11m", got 5 (durations need a unit)`},
		{"ready before bound", "ready: 21s", "ready: 10s", `x.yaml:13:10: ready 10s is before bound 20s (ready comes after the port is bound and warmup finishes)`},
		{"unknown verdict", "verdict: ready-ok", "verdict: ok", `x.yaml:15:12: unknown verdict "ok" (one of ready-ok, ready-late, false-ready, missed-ready, failed-fast, failed-slow, gave-up, hung)`},
		{"unknown host", "host: h100-x8", "host: h100", `x.yaml:5:7: gpu: no host profile "h100"; known: b200-x8, h100-x8, h200-x8, rtx-5090-x1, rtx-pro-6000-x8`},
		{"unknown profile", "profile: C", "profile: Z", `x.yaml:4:10: sglang: unknown profile "Z": use one of 0.3.6, A-2024, 0.4.6, A, 0.4, 0.5.2, B, 0.5.9, C, 0.5.10, main-2026-07, C-late, main`},
		{"no sources", "sources: [{ref: incidents.md}]\n", "", `x.yaml:1:1: sources is missing (cite at least one source: ` + "`sources: [{ref: https://github.com/sgl-project/sglang/issues/14282}]`)"},
		{"missing log", "  modelled:\n    phases:\n      per_shard: 1s", "  recorded:\n    log: nope.log", `x.yaml:9:10: recorded log "nope.log": the scenario was loaded from bytes, so there is no directory to read it from (the path is relative to the scenario file)`},
		{"exit without dead", "  verdict: ready-ok", "  verdict: ready-ok\n  exit_code: 1", `x.yaml:16:14: exit_code is set but dead is not (set dead to the time the process exits)`},
		{"bad ending", "      per_shard: 1s", "      per_shard: 1s\n    ending: {kind: boom}", `x.yaml:11:20: unknown ending "boom" (one of [nccl-error fatal-but-alive cuda-oom-load stall-load cuda-oom-capture sm120-kernel errno98 watchdog crash-running], or omit it to let the memory model decide)`},
		{"bad flag", "--model-path m --tp 2", "--model-path m --tpp 2", `x.yaml:6:17: error: unrecognized arguments: --tpp 2`},
		{"type mismatch", "      per_shard: 1s", "      per_shard: 1s\n    jitter: lots", `x.yaml:11:13: want a number, got a string`},
		{"two documents", "name: t\n", "name: t\n---\nname: u\n", `x.yaml:1:1: want exactly one YAML document holding a scenario mapping`},
		{"custom tag", "sources: [{ref: incidents.md}]", "sources: !x [{ref: incidents.md}]", `x.yaml:3:10: YAML tag !x is not allowed (scenario files are plain data: remove the tag)`},
		{"syntax", "profile: C", "profile: [C", `x.yaml:5:1: ',' or ']' must be specified`},
	}
	if _, err := Load("x.yaml", []byte(good)); err != nil {
		t.Fatalf("the good file must load: %v", err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.from) {
				t.Fatalf("bad case: %q not in the good file", c.from)
			}
			_, err := Load("x.yaml", []byte(strings.Replace(good, c.from, c.to, 1)))
			if err == nil {
				t.Fatal("loaded without error")
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("got  %s\nwant %s", err, c.want)
			}
		})
	}
}

func FuzzLoad(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("name: [\n"))
	f.Add([]byte("host: {gpu_count: -1}\n"))
	if b, err := FileText("hicache-300-host-oom"); err == nil {
		f.Add(b)
	}
	// The limits' edges (testdata/fuzz/FuzzLoad holds small depth and map-size seeds too).
	f.Add([]byte(good + "x: " + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + "\n"))
	f.Add([]byte(good + "env: {" + strings.Repeat("K: v, ", MaxMapKeys) + "}\n"))
	f.Add([]byte(good + "sources:\n" + strings.Repeat("- a\n", MaxNodes)))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Load("f.yaml", data)
		if err == nil {
			if s.Name == "" || !s.Expect.Verdict.Valid() {
				t.Fatalf("accepted an invalid scenario: %+v", s)
			}
			return
		}
		var le *LoadError
		if !asLoadError(err, &le) || len(le.Problems) == 0 {
			t.Fatalf("error is not a LoadError with problems: %v", err)
		}
		if !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
