package author

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// parsedKinds parses a rendered log and returns its kinds with the offsets a recorded
// timeline gives them.
func parsedKinds(t *testing.T, log []byte) []KindAt {
	t.Helper()
	lines, err := sglang.Parse(bytes.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := replay.FromLog(lines)
	if err != nil {
		t.Fatal(err)
	}
	return KindsOf(tl)
}

func firstKindDiff(a, b []KindAt) string {
	for i := range min(len(a), len(b)) {
		if a[i].Kind != b[i].Kind {
			return fmt.Sprintf("entry %d: %s vs %s", i, a[i].Kind, b[i].Kind)
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("%d entries vs %d", len(a), len(b))
	}
	return ""
}

// TestAuthorRoundTripCatalogue: every catalogue scenario's log → author → load → compile →
// render → parse gives the same kinds in the same order and the same phases.
func TestAuthorRoundTripCatalogue(t *testing.T) {
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			c, err := scenarios.Compile(s, 1)
			if err != nil {
				t.Fatal(err)
			}
			log := RenderLog(c.Timeline, c.Profile)
			a, err := FromLog(context.Background(), bytes.NewReader(log), Options{Name: s.Name, Source: s.Name + ".log"})
			if err != nil {
				t.Fatal(err)
			}
			s2, err := scenarios.Load(s.Name+".yaml", a.YAML)
			if err != nil {
				t.Fatalf("authored scenario does not load: %v\n%s", err, a.YAML)
			}
			c2, err := scenarios.Compile(s2, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, got := parsedKinds(t, log), parsedKinds(t, RenderLog(c2.Timeline, c2.Profile))
			if d := firstKindDiff(want, got); d != "" {
				t.Fatalf("kinds differ: %s", d)
			}
			if m := phaseMismatch(LogPhases(want), LogPhases(got)); m != "" {
				t.Fatal(m)
			}
			// --check's own comparison agrees.
			res, err := Check(log, a.YAML, s.Name+".yaml", 5)
			if err != nil || !res.OK() {
				t.Fatalf("check: %v %+v", err, res)
			}
			if len(a.Report.Unparsed) > 0 {
				t.Errorf("a generated log has unparsed lines: %v", a.Report.Unparsed)
			}
			// The flags read back from server_args are the scenario's own.
			if a.Report.Flags != strings.Join(c.Args.Argv(), " ") {
				t.Errorf("flags %q, want %q", a.Report.Flags, strings.Join(c.Args.Argv(), " "))
			}
			if a.Report.Ranks != c.Args.Ranks() {
				t.Errorf("ranks %d, want %d", a.Report.Ranks, c.Args.Ranks())
			}
			// The release the scenario plays is the one its log's formats point to.
			// (0.4.6 and 0.5.2 print the same load-phase lines: a log that ends there may read as either.)
			if a.Report.Profile != c.Profile.Name && (c.Profile.Era == sglang.EraC || a.Report.Era == sglang.EraC) {
				t.Errorf("profile %s, want %s (evidence %q)", a.Report.Profile, c.Profile.Name, a.Report.Evidence)
			}
			// A log that shows how the process ended gives the same exit code.
			if p := c.Predict(); p.ExitCode != nil && a.Report.ExitCode != nil && *p.ExitCode != *a.Report.ExitCode {
				t.Errorf("exit code %d, want %d", *a.Report.ExitCode, *p.ExitCode)
			}
		})
	}
}

// TestAuthorDeterministic: the same input gives the same file, byte for byte.
func TestAuthorDeterministic(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "probes-era-c.log"))
	if err != nil {
		t.Fatal(err)
	}
	a1, err := FromLog(context.Background(), bytes.NewReader(data), Options{Source: "probes-era-c.log"})
	if err != nil {
		t.Fatal(err)
	}
	a2, err := FromLog(context.Background(), bytes.NewReader(data), Options{Source: "probes-era-c.log"})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a1.YAML, a2.YAML) {
		t.Fatal("two runs on the same log differ")
	}
}

// TestAuthorVariants: hand-made logs in each known variant family of real logs author into
// valid scenarios, and whatever could not be parsed is reported with its line number.
func TestAuthorVariants(t *testing.T) {
	cases := []struct {
		file         string
		profile      string
		ranks        int
		flags        []string // substrings of launch.flags
		ending       string   // prefix
		verdict      scenarios.Verdict
		exit         int // -1: none
		unparsed     []int
		notes        []string // substrings that must be among the notes
		probeRoute   string
		probeEvery   time.Duration
		probeTokens  int
		mustNotMatch []string // text that redaction must have removed
		evidence     string   // a substring of one of the report's profile evidence lines
	}{
		{file: "probes-era-c.log", profile: "0.5.9", ranks: 8, flags: []string{"--model-path /redacted/dir1/GLM-5-NVFP4", "--tp-size 8", "--port 8000", "--disable-cuda-graph"},
			ending: "ready", verdict: scenarios.ReadyOK, exit: -1, probeRoute: "/health", probeEvery: 10 * time.Second, probeTokens: 64,
			mustNotMatch: []string{"10.20.30.40", "alice", "/data/models"}},
		{file: "compose-era-b.log", profile: "0.5.2", ranks: 2, flags: []string{"--tp-size 2"}, ending: "ready", verdict: scenarios.ReadyOK, exit: -1,
			notes: []string{"compose wrapper"}},
		{file: "docker-desktop-era-a.log", profile: "0.3.6", evidence: `"Load weight end" without mem usage=`, ranks: 1, ending: "ready", verdict: scenarios.ReadyOK, exit: -1,
			notes: []string{"host_ts wrapper"}},
		{file: "glued-bars-crlf.log", profile: "0.5.2", ranks: 1, ending: "cuda_oom", verdict: scenarios.FailedFast, exit: 137,
			notes: []string{"CRLF", "split onto lines"}},
		{file: "truncated-tail.log", profile: "0.5.9", ranks: 8, flags: []string{"--enable-hierarchical-cache", "--hicache-size 300"},
			ending: "log ends", verdict: scenarios.FailedSlow, exit: -1, notes: []string{"no newline"}, unparsed: []int{1, 26}},
		{file: "time-only.log", profile: "0.3.6", evidence: "cache hit rate", ranks: 1, ending: "ready", verdict: scenarios.ReadyOK, exit: -1,
			notes: []string{"time-only headers", "no readable server_args"}, unparsed: []int{3}},
		{file: "host-oom-kill.log", profile: "0.5.9", ranks: 8, flags: []string{"--hicache-size 300"}, ending: "rank_dead", verdict: scenarios.FailedFast, exit: 1,
			mustNotMatch: []string{"gpu-node-17"}},
		{file: "fatal-alive-loki.log", profile: "0.5.9", ranks: 2, ending: "nccl_error", verdict: scenarios.FailedFast, exit: 137, notes: []string{"loki wrapper"},
			mustNotMatch: []string{"10.0.0.2", "node-7"}},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			a, err := FromLog(context.Background(), bytes.NewReader(data), Options{Source: tc.file})
			if err != nil {
				t.Fatal(err)
			}
			rep := a.Report
			s, err := scenarios.Load(tc.file+".yaml", a.YAML)
			if err != nil {
				t.Fatalf("authored file does not load: %v", err)
			}
			if _, err := scenarios.Compile(s, 1); err != nil {
				t.Fatal(err)
			}
			if rep.Profile != tc.profile || rep.Ranks != tc.ranks {
				t.Errorf("profile %s ranks %d, want %s %d (evidence %q)", rep.Profile, rep.Ranks, tc.profile, tc.ranks, rep.Evidence)
			}
			if len(rep.Evidence) == 0 || (tc.evidence != "" && !strings.Contains(strings.Join(rep.Evidence, "\n"), tc.evidence)) {
				t.Errorf("profile evidence %q, want a line with %q", rep.Evidence, tc.evidence)
			}
			for _, f := range tc.flags {
				if !strings.Contains(rep.Flags, f) {
					t.Errorf("flags %q lack %q", rep.Flags, f)
				}
			}
			if !strings.HasPrefix(rep.Ending, tc.ending) {
				t.Errorf("ending %q, want %s...", rep.Ending, tc.ending)
			}
			if s.Expect.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", s.Expect.Verdict, tc.verdict)
			}
			switch {
			case tc.exit < 0 && s.Expect.ExitCode != nil:
				t.Errorf("exit code %d, want none", *s.Expect.ExitCode)
			case tc.exit >= 0 && (s.Expect.ExitCode == nil || *s.Expect.ExitCode != tc.exit):
				t.Errorf("exit code %v, want %d", s.Expect.ExitCode, tc.exit)
			}
			var got []int
			for _, u := range rep.Unparsed {
				got = append(got, u.Line)
				if !strings.Contains(string(a.YAML), fmt.Sprintf("#   line %d", u.Line)) {
					t.Errorf("unparsed line %d is not reported in the file", u.Line)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.unparsed) && !(len(got) == 0 && len(tc.unparsed) == 0) {
				t.Errorf("unparsed lines %v, want %v", got, tc.unparsed)
			}
			notes := strings.Join(rep.Notes, "\n")
			for _, n := range tc.notes {
				if !strings.Contains(notes, n) {
					t.Errorf("notes lack %q:\n%s", n, notes)
				}
			}
			if tc.probeRoute != "" {
				if len(rep.Probes) == 0 || rep.Probes[0].Route != tc.probeRoute || rep.Probes[0].Interval != tc.probeEvery {
					t.Errorf("probes %+v, want %s every %s first", rep.Probes, tc.probeRoute, tc.probeEvery)
				}
				if s.Server.ProbeTokens != tc.probeTokens {
					t.Errorf("probe_tokens %d, want %d", s.Server.ProbeTokens, tc.probeTokens)
				}
			}
			for _, m := range tc.mustNotMatch {
				if strings.Contains(string(a.YAML), m) {
					t.Errorf("%q survived redaction", m)
				}
			}
			// Every input line is in the embedded log: none dropped.
			if n := strings.Count(a.Log, "\n"); n != rep.Segments {
				t.Errorf("embedded log has %d lines, parser saw %d", n, rep.Segments)
			}
		})
	}
}

// TestCheckAuthoredMismatch: --check finds a replay that departs from the log and says where.
func TestCheckAuthoredMismatch(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "host-oom-kill.log"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := FromLog(context.Background(), bytes.NewReader(data), Options{Source: "host-oom-kill.log"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(data, a.YAML, "x.yaml", 3)
	if err != nil || !res.OK() {
		t.Fatalf("unchanged log: %v %+v", err, res)
	}
	// The input gains a line the scenario does not have (line 3), and loses its ending.
	lines := strings.Split(string(data), "\n")
	edited := append(append([]string{}, lines[:2]...), "[2026-02-24 11:18:05] Killed")
	edited = append(edited, lines[2:len(lines)-4]...)
	res, err = Check([]byte(strings.Join(edited, "\n")), a.YAML, "x.yaml", 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK() || len(res.Diffs) != 3 || res.Diffs[0].Line != 3 || res.Diffs[0].Want != sglang.KindKilled || res.PhaseMismatch == "" {
		t.Fatalf("diffs %v, phases %q", res.Diffs, res.PhaseMismatch)
	}
	if !strings.Contains(res.Diffs[0].String(), `line 3: input killed`) {
		t.Errorf("diff reads %q", res.Diffs[0])
	}
}

func TestAuthorRejects(t *testing.T) {
	cases := []struct {
		name, log string
		opts      Options
		want      string
	}{
		{"empty", "  \n\n", Options{}, "the log is empty"},
		{"bad name", "[2026-01-01 00:00:00] Init torch distributed begin.\n", Options{Name: "Bad_Name"}, "not an id"},
		{"bad rule", "[2026-01-01 00:00:00] x\n", Options{Rules: []scenarios.RedactRule{{Name: "x", Regex: "("}}}, "bad regex"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FromLog(context.Background(), strings.NewReader(tc.log), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A recorded log whose ready line comes well after the bind (a slow warmup) authors into a
// scenario whose expect block its own compiled timeline agrees with: the fake server is
// ready at the recorded line, and so is the prediction.
func TestAuthorLateReadyLineValidates(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "probes-era-c.log"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	var out []string
	var ready string
	for _, l := range lines {
		switch {
		case strings.Contains(l, "fired up and ready to roll"):
			ready = strings.Replace(l, "09:01:35", "09:01:45", 1) // 12 s after uvicorn's 09:01:33
		case ready != "" && ready != "placed" && strings.HasPrefix(l, "[") && l > "[2026-02-25 09:01:45]":
			out, ready = append(out, ready, l), "placed"
		default:
			out = append(out, l)
		}
	}
	if ready != "placed" {
		t.Fatal("the test log has no ready line followed by later lines to move it among")
	}
	a, err := FromLog(context.Background(), strings.NewReader(strings.Join(out, "\n")+"\n"), Options{Source: "late-ready.log"})
	if err != nil {
		t.Fatal(err)
	}
	if err := checkAuthored(t, "late-ready.yaml", a.YAML); err != nil {
		t.Fatalf("authored expect block and compiled timeline disagree: %v", err)
	}
}

// A scenario whose recorded log is a file beside it still loads once written elsewhere (the
// shim's cache, a container) after SelfContained inlines the log.
func TestSelfContainedInlinesARecordedLog(t *testing.T) {
	logText, err := os.ReadFile(filepath.Join("testdata", "probes-era-c.log"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := FromLog(context.Background(), bytes.NewReader(logText), Options{Source: "probes.log"})
	if err != nil {
		t.Fatal(err)
	}
	inline, err := scenarios.Load("probes.yaml", a.YAML)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probes.log"), []byte(inline.Timeline.Recorded.Inline), 0o644); err != nil {
		t.Fatal(err)
	}
	byFile := *inline
	byFile.Timeline.Recorded = &scenarios.Recorded{Log: "probes.log"}
	b, err := yaml.Marshal(&byFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probes.yaml"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.LoadFile(filepath.Join(dir, "probes.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.Load("moved.yaml", b); err == nil {
		t.Fatal("the scenario naming its log file loaded without its directory; the test proves nothing")
	}
	sc, err := s.SelfContained()
	if err != nil {
		t.Fatal(err)
	}
	moved, err := yaml.Marshal(sc)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := scenarios.Load("moved.yaml", moved)
	if err != nil {
		t.Fatalf("the self-contained copy does not load on its own: %v", err)
	}
	c1, err1 := scenarios.Compile(s, 1)
	c2, err2 := scenarios.Compile(s2, 1)
	if err1 != nil || err2 != nil || len(c1.Timeline.Entries) != len(c2.Timeline.Entries) {
		t.Fatalf("compiled differently: %v %v", err1, err2)
	}
}

// TestAuthorInvalidUTF8: a captured log with bytes that are not UTF-8 is authored (they read
// back as U+FFFD, with a note) instead of failing the byte-exact read-back.
func TestAuthorInvalidUTF8(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "probes-era-c.log"))
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.IndexByte(data, '\n')
	bad := append(append(append([]byte{}, data[:i]...), " caf\xe9 \xff\xfe"...), data[i:]...)
	a, err := FromLog(context.Background(), bytes.NewReader(bad), Options{Source: "probes-era-c.log"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scenarios.Load("x.yaml", a.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Timeline.Recorded.Inline; !utf8.ValidString(got) || !strings.Contains(got, " caf\uFFFD \uFFFD") || got != a.Log {
		t.Errorf("embedded log does not carry the replaced bytes: %q", strings.SplitN(got, "\n", 2)[0])
	}
	if !slices.ContainsFunc(a.Report.Notes, func(n string) bool { return strings.Contains(n, "U+FFFD") }) {
		t.Errorf("no note about the replaced bytes: %q", a.Report.Notes)
	}
}

// checkAuthored loads and compiles an authored scenario and returns what validate would say
// of its expect block against the compiled prediction.
func checkAuthored(t *testing.T, name string, yaml []byte) error {
	t.Helper()
	s, err := scenarios.Load(name, yaml)
	if err != nil {
		t.Fatal(err)
	}
	c, err := scenarios.Compile(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	return s.Expect.Check(c.Predict())
}

// TestAuthorUntimedLog: a log without timestamps is authored in file order at a stated spacing
// (or spread over a given duration), and validates.
func TestAuthorUntimedLog(t *testing.T) {
	log := "Traceback (most recent call last):\n  File \"<frozen runpy>\", line 198, in _run_module_as_main\nRuntimeError: Rank 0 scheduler died during initialization (exit code: 255).\n"
	for _, tc := range []struct {
		d       time.Duration
		spacing string
	}{{0, "spacing: 100ms"}, {4 * time.Second, "spacing: 2s"}} {
		a, err := FromLog(context.Background(), strings.NewReader(log), Options{Source: "untimed.log", Duration: tc.d})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(a.YAML), tc.spacing) || !strings.Contains(strings.Join(a.Report.Notes, "\n"), "no timestamps") {
			t.Errorf("duration %v: no %q or no note in\n%s", tc.d, tc.spacing, a.YAML)
		}
		if err := checkAuthored(t, "untimed.yaml", a.YAML); err != nil {
			t.Error(err)
		}
		if a.Report.ExitCode == nil || *a.Report.ExitCode != 1 {
			t.Errorf("exit code %v, want 1", a.Report.ExitCode)
		}
	}
	// Compiling such a log without a spacing says what to set.
	lines, err := sglang.Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scenarios.LogTimeline(lines, 0); err == nil || !strings.Contains(err.Error(), "timeline.recorded.spacing") {
		t.Errorf("err %v, want one naming timeline.recorded.spacing", err)
	}
}
