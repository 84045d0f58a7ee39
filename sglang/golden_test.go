package sglang

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the .golden files from the parser's output")

// dumpLine prints everything a golden file asserts about a Line.
func dumpLine(l Line) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d.%d %s", l.No, l.Seg, l.Event.Kind)
	if !l.Time.IsZero() {
		fmt.Fprintf(&b, " time=%s", l.Time.Format(time.DateTime))
		if l.Inherited {
			b.WriteString("(inherited)")
		}
	}
	if l.TimeForm != TimeNone {
		fmt.Fprintf(&b, " form=%d", l.TimeForm)
	}
	if len(l.Ranks) > 0 {
		fmt.Fprintf(&b, " ranks=%v", l.Ranks)
	}
	for _, w := range l.Wrappers {
		fmt.Fprintf(&b, " wrap=%s:%q", w.Kind, w.Name)
		if w.Level != "" {
			fmt.Fprintf(&b, ":%s", w.Level)
		}
		if !w.Time.IsZero() {
			fmt.Fprintf(&b, "@%s", w.Time.Format(time.RFC3339Nano))
		}
	}
	if l.Lead != "" {
		fmt.Fprintf(&b, " lead=%q", l.Lead)
	}
	if l.Block > 0 {
		fmt.Fprintf(&b, " block=%d", l.Block)
	}
	if l.CRLF {
		b.WriteString(" crlf")
	}
	if l.Truncated {
		b.WriteString(" truncated")
	}
	for _, f := range l.Event.Fields {
		fmt.Fprintf(&b, " %q=%q", f.Key, f.Value)
	}
	if l.Event.Text != "" {
		fmt.Fprintf(&b, " text=%q", l.Event.Text)
	}
	return b.String()
}

// checkLine asserts the invariants every parsed line keeps: the raw text is the input, and the
// event renders back to the text after the wrappers and lead.
func checkLine(t *testing.T, l Line) {
	t.Helper()
	if l.Event.Kind >= numKinds {
		t.Errorf("line %d.%d: invalid kind %d", l.No, l.Seg, l.Event.Kind)
	}
	ansi := strings.ContainsRune(l.Raw, 0x1b) || strings.Contains(l.Raw, "←[")
	if ansi || (l.TimeForm != TimeNone && l.TimeForm != TimeFull) {
		return
	}
	var pre strings.Builder
	for _, w := range l.Wrappers {
		pre.WriteString(w.Text)
	}
	pre.WriteString(l.Lead)
	got := pre.String() + Render(l.Event, Profile{})
	for i := len(l.Wrappers) - 1; i >= 0; i-- {
		got += l.Wrappers[i].Suffix
	}
	want := l.Raw
	if got != want {
		t.Errorf("line %d.%d: wrappers+lead+Render = %q, raw %q", l.No, l.Seg, got, want)
	}
}

func TestGoldenCorpus(t *testing.T) {
	logs, err := filepath.Glob("testdata/corpus/*.log")
	if err != nil || len(logs) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	for _, path := range logs {
		t.Run(filepath.Base(path), func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines, err := Parse(bytes.NewReader(in))
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for _, l := range lines {
				checkLine(t, l)
				out.WriteString(dumpLine(l))
				out.WriteByte('\n')
			}
			checkNoLoss(t, in, lines)
			golden := strings.TrimSuffix(path, ".log") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(out.String()), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./sglang -run TestGoldenCorpus -update to create it)", err)
			}
			if out.String() != string(want) {
				t.Errorf("parse of %s differs from %s:\n%s", path, golden, diffLines(string(want), out.String()))
			}
		})
	}
}

// checkNoLoss asserts that every physical line is accounted for: joining the Raw of its
// segments (with the CRs that split them) gives the line back.
func checkNoLoss(t *testing.T, in []byte, lines []Line) {
	t.Helper()
	phys := strings.Split(string(in), "\n")
	if phys[len(phys)-1] == "" {
		phys = phys[:len(phys)-1]
	}
	byNo := map[int][]Line{}
	for _, l := range lines {
		byNo[l.No] = append(byNo[l.No], l)
	}
	if len(byNo) != len(phys) {
		t.Fatalf("%d physical lines, parsed %d", len(phys), len(byNo))
	}
	for i, p := range phys {
		segs := byNo[i+1]
		p = strings.TrimSuffix(p, "\r")
		var joined strings.Builder
		for _, s := range segs {
			joined.WriteString(s.Raw)
		}
		if got := joined.String(); got != strings.ReplaceAll(p, "\r", "") && !strings.ContainsAny(p, "\x1b←") {
			t.Errorf("line %d: segments join to %q, want %q", i+1, got, p)
		}
	}
}

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "-%s\n+%s\n", a, c)
		}
	}
	return b.String()
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	return string(b), err
}
