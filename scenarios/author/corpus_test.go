package author

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
)

// corpusDir holds real SGLang logs (outside the repository, beside it): *.log files, and
// FATES.tsv mapping each log's two-digit prefix to the fate its replay must have.
const corpusDir = "../../../shared/corpus/sglang-logs"

// Fates a replayed log can have.
const (
	fateReady = "ready" // port bound, /health 200, still running
	fateExit  = "exit"  // the process ends with a non-zero code
	fateAlive = "alive" // never bound, still running
)

// corpusUserLines are lines in the corpus that the reporter's own code printed through the
// logging format SGLang configured in the same process (an sglang.Engine user's logger.info),
// so they carry SGLang's header without being SGLang's.
var corpusUserLines = map[string][]string{
	"07": {"Prompts loaded.", "SGLang Generating!"},
}

// sglangOwnUnparsed reports whether an unparsed line counts against the parser: every line
// does, except the log's last line (captures and pastes end mid-line, with or without a
// newline after the cut) and lines listed as the user's own. Lines of other printers (libraries, clients, wrappers, paste furniture) are
// not unparsed at all: the parser names their printer (KindForeign), so they never get here.
func sglangOwnUnparsed(u LineIssue, last bool, user []string) bool {
	if last {
		return false
	}
	for _, m := range user {
		if strings.HasSuffix(u.Text, "] "+m) || u.Text == m {
			return false
		}
	}
	return true
}

func TestSGLangOwnUnparsed(t *testing.T) {
	user := []string{"Prompts loaded."}
	cases := []struct {
		text string
		last bool
		own  bool
	}{
		{"[16:43:29] Prompts loaded.", false, false},
		{"Prompts loaded.", false, false},
		{"[16:43:29] Prompts loaded. 3 left", false, true},
		{"[2026-04-05 20:02:49] Something SGLang said", false, true},
		{"[2026-0", true, false},
	}
	for _, tc := range cases {
		if got := sglangOwnUnparsed(LineIssue{Text: tc.text}, tc.last, user); got != tc.own {
			t.Errorf("%q (last %v): own %v, want %v", tc.text, tc.last, got, tc.own)
		}
	}
}

// readFates reads FATES.tsv: "NN<TAB>fate" per line.
func readFates(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "FATES.tsv"))
	if err != nil {
		t.Fatalf("corpus without FATES.tsv: %v", err)
	}
	fates := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		id, fate, ok := strings.Cut(strings.TrimSpace(sc.Text()), "\t")
		if !ok || id == "" {
			continue
		}
		fates[id] = strings.TrimSpace(fate)
	}
	return fates
}

// replayFate reads a compiled scenario's fate off its prediction and its timeline's ops.
func replayFate(c *scenarios.Compiled) (string, string) {
	p := c.Predict()
	var bind, exit bool
	code := 0
	for _, e := range c.Timeline.Entries {
		switch e.Op {
		case replay.OpBind:
			bind = true
		case replay.OpExit:
			exit, code = true, e.Code
		}
	}
	switch {
	case exit && code != 0 && p.ExitCode != nil && *p.ExitCode == code:
		return fateExit, ""
	case exit:
		return "", "the timeline exits with code 0 or the prediction disagrees"
	case bind && p.Bound != nil && p.Ready != nil && p.Dead == nil:
		return fateReady, ""
	case !bind && p.Bound == nil:
		return fateAlive, ""
	}
	return "", "bound but never ready, or dead without an exit"
}

// TestCorpusFates: every real log in the corpus authors, validates (compile, the authored
// expect block against the compiled prediction) and replays with the fate FATES.tsv gives,
// with no unparsed line that SGLang itself printed.
func TestCorpusFates(t *testing.T) {
	if _, err := os.Stat(corpusDir); errors.Is(err, fs.ErrNotExist) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("corpus %s is missing: CI must check out the shared corpus beside the repository", corpusDir)
		}
		t.Skipf("corpus %s is absent (it lives beside the repository, not in it)", corpusDir)
	}
	fates := readFates(t, corpusDir)
	logs, err := filepath.Glob(filepath.Join(corpusDir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no logs in %s: %v", corpusDir, err)
	}
	seen := 0
	for _, path := range logs {
		base := filepath.Base(path)
		id, _, _ := strings.Cut(base, "-")
		want, ok := fates[id]
		if !ok {
			continue
		}
		seen++
		t.Run(base, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			a, err := FromLog(context.Background(), bytes.NewReader(data), Options{Source: base})
			if err != nil {
				t.Fatalf("author: %v", err)
			}
			s, err := scenarios.Load(base+".yaml", a.YAML)
			if err != nil {
				t.Fatalf("the authored scenario does not load: %v", err)
			}
			c, err := scenarios.Compile(s, 1)
			if err != nil {
				t.Fatalf("the authored scenario does not compile: %v", err)
			}
			if err := s.Expect.Check(c.Predict()); err != nil {
				t.Errorf("the authored scenario fails its own validation: %v", err)
			}
			if got, why := replayFate(c); got != want {
				t.Errorf("fate %q (%s), want %q; ending %q", got, why, want, a.Report.Ending)
			}
			own := 0
			for _, u := range a.Report.Unparsed {
				if sglangOwnUnparsed(u, u.Line == a.Report.Lines, corpusUserLines[id]) {
					t.Errorf("unparsed: %s", u)
					own++
				}
			}
			t.Logf("fate %s; %d unparsed lines, %d of them SGLang's own", want, len(a.Report.Unparsed), own)
		})
	}
	if seen != len(fates) {
		t.Errorf("FATES.tsv lists %d logs, %d found in %s", len(fates), seen, corpusDir)
	}
}
