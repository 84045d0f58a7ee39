package scenarios

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile are inputs that once crashed the loader, ran it out of memory or took seconds;
// each is generated here (none is checked in) and must fail with the limit's error.
func hostile() []struct{ name, data, want string } {
	var flat, bigMap, flowMap, items strings.Builder
	flat.WriteString(good + "env:\n")
	for i := range 2_000_000 { // 28 MB, 2 M keys
		fmt.Fprintf(&flat, "  K%07d: v\n", i)
	}
	bigMap.WriteString(good + "env:\n")
	for i := 0; bigMap.Len() < 1_300_000; i++ {
		fmt.Fprintf(&bigMap, "  K%d: v\n", i)
	}
	flowMap.WriteString(good + "env: {")
	for i := range 1000 {
		fmt.Fprintf(&flowMap, "K%d: v, ", i)
	}
	flowMap.WriteString("}\n")
	items.WriteString(strings.Replace(good, "sources: [{ref: incidents.md}]\n", "sources:\n", 1))
	for range 5000 {
		items.WriteString("- {ref: a}\n")
	}
	var block strings.Builder
	for i := range 1000 {
		block.WriteString(strings.Repeat(" ", i) + "a:\n")
	}
	return []struct{ name, data, want string }{
		{"28 MB file with a 2 M-key map", flat.String(), `x.yaml:149796:4: the file is 28000243 bytes: over the limit MaxFileBytes = 2097152`},
		{"1.3 MB flat map", bigMap.String(), `x.yaml:529:3: too many keys in one mapping: over the limit MaxMapKeys = 512`},
		{"flow map", flowMap.String(), `x.yaml:16:4503: too many keys in one mapping: over the limit MaxMapKeys = 512`},
		{"5000 list items", items.String(), `x.yaml:2056:1: too many keys and items: over the limit MaxNodes = 4096`},
		{"100k nested flow levels", good + "x: " + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "\n", `x.yaml:16:35: nesting too deep: over the limit MaxDepth = 32`},
		{"1000 nested block levels", block.String(), `x.yaml:33:33: nesting too deep: over the limit MaxDepth = 32`},
		{"10 M shards", strings.Replace(good, "    phases:\n", "    model: {shards: 10000000}\n    phases:\n", 1), `x.yaml:9:21: shards 10000000: over the limit MaxCount = 10000`},
		{"1000000h per shard", strings.Replace(good, "per_shard: 1s", "per_shard: 1000000h", 1), `x.yaml:10:18: duration 1000000h: over the limit MaxDuration = 24h0m0s`},
		{"a fault of 1000000h", good + "faults: [{kind: wedge, at: 1000000h}]\n", `x.yaml:16:28: at 1000000h0m0s: over the limit MaxDuration = 24h0m0s`},
		{"inline host of 10 M GPUs", strings.Replace(good, "host: h100-x8", "host: {gpu_model: H100, gpu_count: 10000000, gpu_memory_gb: 80, host_ram_gb: 100, compute_capability: '9.0'}", 1), `x.yaml:5:36: gpu_count 10000000: over the limit MaxCount = 10000`},
		{"an alias", good + "env: {A: &a x, B: *a}\n", `x.yaml:16:10: YAML anchors and aliases are not allowed`},
		{"a tag hiding a flow collection", good + "x: !t " + strings.Repeat("[", 100) + "\n", `x.yaml:16:38: nesting too deep: over the limit MaxDepth = 32`},
	}
}

func TestLoadLimits(t *testing.T) {
	for _, c := range hostile() {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load("x.yaml", []byte(c.data))
			if err == nil {
				t.Fatal("loaded without error")
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("got  %.300s\nwant %s", err, c.want)
			}
		})
	}
}

// TestPrescanPassesRealStructure: what the pre-scan must not mistake for nesting or keys.
func TestPrescanPassesRealStructure(t *testing.T) {
	brackets := strings.Repeat("[", 100)
	cases := []struct{ name, data string }{
		{"brackets in a block scalar", strings.Replace(good, "  modelled:\n    phases:\n      per_shard: 1s", "  recorded:\n    inline: |\n      "+brackets+"\n      a: b\n\n      "+brackets, 1)},
		{"brackets in quotes and plain text", good + "env: {A: '" + brackets + "', B: \"" + brackets + "\"}\nserver: {}\n# " + brackets + "\n"},
		{"brackets inside a plain scalar", strings.Replace(good, "summary: s", "summary: it's a "+brackets+" mess", 1)},
		{"a long list of keys under the limits", good + "env:\n" + func() string {
			var b strings.Builder
			for i := range MaxMapKeys - 20 {
				fmt.Fprintf(&b, "  K%d: v\n", i)
			}
			return b.String()
		}()},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if p := prescan("x.yaml", []byte(c.data)); p != nil {
				t.Fatalf("pre-scan refused: %v", p)
			}
		})
	}
	all, err := Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range all {
		b, _ := FileText(s.Name)
		if p := prescan(s.Name, b); p != nil {
			t.Errorf("pre-scan refused a catalogue file: %v", p)
		}
	}
}

// TestRecordedLogResolution: a recorded log must be a regular file inside the scenario's
// directory unless the caller opts in.
func TestRecordedLogResolution(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sc")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "logs"), 0o755))
	log := "[2026-02-24 11:18:00] server_args=ServerArgs(model_path='m')\n"
	must(os.WriteFile(filepath.Join(root, "outside.log"), []byte(log), 0o644))
	must(os.WriteFile(filepath.Join(dir, "logs", "in.log"), []byte(log), 0o644))
	must(os.Symlink(filepath.Join(root, "outside.log"), filepath.Join(dir, "link.log")))
	must(os.Symlink(root, filepath.Join(dir, "linkdir")))
	must(os.WriteFile(filepath.Join(dir, "big.log"), make([]byte, MaxRecordedLogBytes+1), 0o644))
	cases := []struct {
		name, log string
		allow     bool
		want      string // substring of the error; "" loads
	}{
		{"a file beside", "logs/in.log", false, ""},
		{"a symlink", "link.log", false, "link.log is a symlink"},
		{"a symlinked directory", "linkdir/outside.log", false, "linkdir is a symlink"},
		{"outside with ..", "../outside.log", false, "must be a relative path inside the scenario's directory"},
		{"absolute", filepath.Join(root, "outside.log"), false, "must be a relative path inside the scenario's directory"},
		{"too big", "big.log", false, "larger than the limit of 8388608 bytes"},
		{"a symlink, opted in", "link.log", true, ""},
		{"outside, opted in", "../outside.log", true, ""},
		{"too big, opted in", "big.log", true, "larger than the limit of 8388608 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(good, "  modelled:\n    phases:\n      per_shard: 1s", "  recorded:\n    log: "+c.log, 1)
			text = strings.Replace(text, "expect:\n  bound: 20s\n  ready: 21s\n", "expect:\n", 1)
			text = strings.Replace(text, "verdict: ready-ok", "verdict: hung", 1)
			file := filepath.Join(dir, "s.yaml")
			must(os.WriteFile(file, []byte(text), 0o644))
			_, err := LoadFileWith(file, LoadOptions{AllowOutsideLog: c.allow})
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			case c.want != "" && !strings.HasPrefix(err.Error(), file+":9:10: "):
				t.Errorf("error %q is not placed at the log field", err)
			}
		})
	}
}

// BenchmarkHostileLoad reports what each hostile input costs the loader (it must stay far
// below 2 s and 512 MB).
func BenchmarkHostileLoad(b *testing.B) {
	for _, c := range hostile() {
		data := []byte(c.data)
		b.Run(strings.ReplaceAll(c.name, " ", "_"), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = Load("x.yaml", data)
			}
		})
	}
}
