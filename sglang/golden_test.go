package sglang

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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

// sourceRecord is one line format quoted from SGLang's source at a profile's commit, with the
// line the fake renders for it (testdata/source/<profile>.txt).
type sourceRecord struct {
	kind, mode, from, src, fake string
}

func readSourceRecords(t *testing.T, path string) []sourceRecord {
	t.Helper()
	text, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []sourceRecord
	var r sourceRecord
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "kind: "):
			f := strings.Fields(l[len("kind: "):])
			if len(f) != 2 {
				t.Fatalf("%s: bad record %q", path, l)
			}
			r = sourceRecord{kind: f[0], mode: f[1]}
		case strings.HasPrefix(l, "from: "):
			r.from = l[len("from: "):]
		case strings.HasPrefix(l, "src: "):
			r.src = l[len("src: "):]
		case strings.HasPrefix(l, "fake: "):
			r.fake = l[len("fake: "):]
			out = append(out, r)
		}
	}
	return out
}

// sourceLine renders the line of kind a profile's constructors build, with fixed values.
func sourceLine(p Profile, kind string) (string, bool) {
	var e Event
	switch kind {
	case "dist_init_end":
		e = DistInitEnd(p, 3200*time.Millisecond, 0.51)
	case "load_end":
		e = LoadEnd(p, "Qwen2ForCausalLM", "torch.bfloat16", 38020*time.Millisecond, 60.1, 15.3)
	case "kv_dtype":
		e = KVDtype("torch.bfloat16")
	case "kv_alloc":
		e = KVAlloc(p, "torch.bfloat16", 961863, 59.68, 46.12)
	case "cg_begin":
		e = CGBegin(p, 40.25, []int{1, 2, 4, 8})
	case "cg_bs":
		e = CGBatchSizes([]int{1, 2, 4, 8})
	case "cg_progress":
		e = CGProgress(p, 8, 1, 4, 40.1, time.Second, 3*time.Second)
	case "cg_end":
		e = CGEnd(p, 4100*time.Millisecond, 0.75, 39.5)
	case "limits":
		e = Limits(p, LimitsInfo{914934, 8192, 16384, 2048, 32768, 17.95})
	case "prefill":
		e = Prefill(p, PrefillStats{NewSeq: 1, NewToken: 6, TokenUsage: 0.01, InputThroughput: 12.5, PendingToken: 0})
	case "decode":
		e = Decode(p, DecodeStats{RunningReq: 1, Token: 48, TokenUsage: 0.01, CUDAGraph: true, GenThroughput: 1.88})
	case "watchdog":
		e = Watchdog(p, 300*time.Second)
	case "rank_dead":
		e = RankDead(0)
	case "rank_died":
		e = RankDiedInit(0, -9)
	case "subprocess_crash":
		e = SubprocessCrash("scheduler_0", 5000, -9)
	case "launch_warning":
		e = ServeWarning("/usr/local/lib/python3.12/dist-packages/sglang/launch_server.py", 52)
	default:
		return "", false
	}
	return Render(e, p), true
}

// printsKind says whether a profile prints a kind whose presence differs between releases;
// every profile prints the others.
func printsKind(p Profile, kind string) bool {
	switch kind {
	case "kv_dtype":
		return p.KVDtypeLine
	case "cg_bs":
		return p.CGBatchSizesLine
	case "rank_dead":
		return !p.RankDiedRuntimeErr
	case "rank_died":
		return p.RankDiedRuntimeErr
	case "subprocess_crash":
		return p.TeardownOnChildCrash
	case "launch_warning":
		return p.ServeEntrypointWarn
	}
	return true
}

var (
	rePyLiteral = regexp.MustCompile(`(f?)"((?:[^"\\]|\\.)*)"`)
	pyUnescape  = strings.NewReplacer(`\n`, "\n", `\'`, "'", `\"`, `"`, `\\`, `\`)
)

// formatPattern turns the adjacent Python string literals of a source line into a regexp of
// the text they print: literal text as is, each {expr} replacement field as any text, a
// {expr:.2f} field as a two-decimal number, {expr=} as "expr=" and the value.
func formatPattern(src string) (string, error) {
	lits := rePyLiteral.FindAllStringSubmatch(src, -1)
	if len(lits) == 0 {
		return "", fmt.Errorf("no string literal in %q", src)
	}
	var b strings.Builder
	for _, lit := range lits {
		s := pyUnescape.Replace(lit[2])
		if lit[1] != "f" {
			b.WriteString(regexp.QuoteMeta(s))
			continue
		}
		for i := 0; i < len(s); i++ {
			switch {
			case strings.HasPrefix(s[i:], "{{") || strings.HasPrefix(s[i:], "}}"):
				b.WriteString(regexp.QuoteMeta(s[i : i+1]))
				i++
			case s[i] == '{':
				depth, j := 0, i
				for ; j < len(s); j++ {
					if s[j] == '{' || s[j] == '[' || s[j] == '(' {
						depth++
					} else if s[j] == '}' || s[j] == ']' || s[j] == ')' {
						depth--
						if depth == 0 {
							break
						}
					}
				}
				if j == len(s) {
					return "", fmt.Errorf("unclosed replacement field in %q", s)
				}
				field := s[i+1 : j]
				expr, spec, _ := strings.Cut(field, ":")
				if strings.Contains(expr, "'") { // a conditional with string literals: {x if c else 'y'}
					spec = ""
				}
				if name, ok := strings.CutSuffix(expr, "="); ok {
					b.WriteString(regexp.QuoteMeta(name + "="))
				}
				if spec == ".2f" {
					b.WriteString(`-?\d+\.\d{2}`)
				} else {
					b.WriteString(`.*?`)
				}
				i = j
			default:
				b.WriteString(regexp.QuoteMeta(s[i : i+1]))
			}
		}
	}
	return b.String(), nil
}

// TestSourceFormats checks each profile's lines against the formats quoted from SGLang's
// source at the profile's commit (testdata/source/<profile>.txt): the fake renders the golden
// line, the golden line matches the source's format, and the profile prints exactly the
// release-dependent kinds the source has.
func TestSourceFormats(t *testing.T) {
	for _, p := range Profiles() {
		if p.Name == "0.3.6" {
			continue // modelled on 2024 logs; its formats are not quoted here
		}
		t.Run(p.Name, func(t *testing.T) {
			path := "testdata/source/" + p.Name + ".txt"
			recs := readSourceRecords(t, path)
			seen := map[string]bool{}
			var updated []string
			for _, r := range recs {
				seen[r.kind] = true
				if !strings.HasPrefix(r.from, p.Source.Commit+":") {
					t.Errorf("%s: quoted from %s, not the profile's commit %s", r.kind, r.from, p.Source.Commit)
				}
				if !printsKind(p, r.kind) {
					t.Errorf("%s: the source at %s prints it, the profile does not", r.kind, r.from)
				}
				got, ok := sourceLine(p, r.kind)
				if !ok {
					t.Fatalf("%s: no constructor for this kind", r.kind)
				}
				updated = append(updated, got)
				if !*update && got != r.fake {
					t.Errorf("%s: the fake renders\n %q\nthe golden line is\n %q", r.kind, got, r.fake)
				}
				pat, err := formatPattern(r.src)
				if err != nil {
					t.Fatalf("%s: %v", r.kind, err)
				}
				switch r.mode {
				case "full":
					pat = "^" + pat + "$"
				case "prefix": // a tqdm description: the bar follows
					pat = "^" + pat + ": "
				case "exception": // Python prints "Type: message"
					pat = `^\w+: ` + pat + "$"
				case "warning": // warnings.warn prints "file:line: Category: " and the message's first line
					first, _, _ := strings.Cut(pat, `\n`)
					first, _, _ = strings.Cut(first, "\n")
					pat = `^\S+:\d+: UserWarning: ` + first + "$"
				default:
					t.Fatalf("%s: unknown mode %q", r.kind, r.mode)
				}
				if !regexp.MustCompile(pat).MatchString(got) {
					t.Errorf("%s: the fake's line\n %q\ndoes not match %s's format\n %s\n(pattern %s)", r.kind, got, r.from, r.src, pat)
				}
			}
			for _, k := range []string{"kv_dtype", "cg_bs", "rank_dead", "rank_died", "subprocess_crash", "launch_warning"} {
				if printsKind(p, k) && !seen[k] {
					t.Errorf("%s: the profile prints it, but %s quotes no source line for it", k, path)
				}
			}
			if *update {
				text, err := readFile(path)
				if err != nil {
					t.Fatal(err)
				}
				var out []string
				i := 0
				for _, l := range strings.Split(text, "\n") {
					if strings.HasPrefix(l, "fake: ") {
						l = "fake: " + updated[i]
						i++
					}
					out = append(out, l)
				}
				if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
