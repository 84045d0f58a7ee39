package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shardScenarios x shardTools: Go tools on virtual time over a ready, a crashing and the
// founding scenario; their journals repeat exactly. (A 1 s probe timeout against SGLang's 1 s
// health latency, as k8s-kserve and tc-http have, is a tie on virtual time that either side
// can win, so those journals vary from run to run; tc-http's 100 ms polls are also slow here.)
var (
	shardScenarios = "s0-happy-era-c,s4-crash-during-load,hicache-48-cold-start"
	shardTools     = "k8s-ome,compose-sglang,llmwait"
)

// run executes the CLI with args and returns its stdout.
func run(t *testing.T, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	if err := root.Execute(); err != nil {
		t.Fatalf("incident-replay %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	return out.String()
}

// outputs reads every file under dir, keyed by its path below dir.
func outputs(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// Three shards merged give the scorecard, Markdown, JUnit and HTML report of the whole matrix
// run at once, byte for byte.
func TestShardsMergeToTheUnshardedRun(t *testing.T) {
	tmp := t.TempDir()
	common := []string{"score", "--speed", "0", "--quiet", "--reproducible", "--scenario", shardScenarios, "--tool-name", shardTools}
	outs := func(dir string) []string {
		return []string{"--markdown", filepath.Join(dir, "scorecard.md"), "--junit", filepath.Join(dir, "junit.xml"), "--report", filepath.Join(dir, "report")}
	}
	whole, merged, shards := filepath.Join(tmp, "whole"), filepath.Join(tmp, "merged"), filepath.Join(tmp, "shards")
	for _, d := range []string{whole, merged, shards} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	table := run(t, append(append(common, outs(whole)...), "--results", filepath.Join(whole, "results.json"))...)
	for _, sh := range []string{"1/3", "2/3", "3/3"} {
		run(t, append(common, "--shard", sh, "--results", filepath.Join(shards, "shard-"+sh[:1]+".json"))...)
	}
	mergedTable := run(t, append([]string{"merge", "--reproducible"}, append(outs(merged), shards)...)...)

	if mergedTable != table {
		t.Errorf("merged table differs:\n%s\nunsharded:\n%s", mergedTable, table)
	}
	want, got := outputs(t, whole), outputs(t, merged)
	delete(want, "results.json")
	if len(want) < 4 {
		t.Fatalf("the unsharded run wrote only %d files: %v", len(want), want)
	}
	for name, w := range want {
		if g, ok := got[name]; !ok {
			t.Errorf("merge did not write %s", name)
		} else if !bytes.Equal(g, w) {
			t.Errorf("%s differs between the merged shards and the unsharded run", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("merge wrote %s, which the unsharded run did not", name)
		}
	}
	// The unsharded run's own results file merges on its own into the same table.
	if again := run(t, "merge", "--reproducible", filepath.Join(whole, "results.json")); again != table {
		t.Errorf("merging the unsharded results file changed the table:\n%s", again)
	}
}

func TestMergeRefusesAnIncompleteOrMixedSet(t *testing.T) {
	tmp := t.TempDir()
	common := []string{"score", "--speed", "0", "--quiet", "--scenario", "s4-crash-during-load", "--tool-name", "k8s-kserve,llmwait"}
	run(t, append(common, "--shard-index", "0/2", "--results", filepath.Join(tmp, "a1.json"))...)
	run(t, append(common, "--shard", "2/2", "--seed", "7", "--results", filepath.Join(tmp, "b2.json"))...)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a shard missing", []string{filepath.Join(tmp, "a1.json")}, "shard 2/2 missing"},
		{"another seed", []string{filepath.Join(tmp, "a1.json"), filepath.Join(tmp, "b2.json")}, "of another matrix"},
		{"a shard twice", []string{filepath.Join(tmp, "a1.json"), filepath.Join(tmp, "a1.json")}, "given twice"},
		{"not a results file", []string{filepath.Join(tmp)}, "not a results file"},
	}
	if err := os.WriteFile(filepath.Join(tmp, "c.json"), []byte("[]"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRootCmd()
			root.SetArgs(append([]string{"merge"}, c.args...))
			root.SetOut(&bytes.Buffer{})
			root.SetErr(&bytes.Buffer{})
			err := root.Execute()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("merge %v: error %v, want one saying %q", c.args, err, c.want)
			}
		})
	}
	for _, args := range [][]string{{"--shard", "1/2"}, {"--shard", "3/2", "--results", "x.json"},
		{"--shard-index", "2/2", "--results", "x.json"}, {"--shard", "1/2", "--shard-index", "0/2", "--results", "x.json"}} {
		root := newRootCmd()
		root.SetArgs(append(common, args...))
		root.SetOut(&bytes.Buffer{})
		root.SetErr(&bytes.Buffer{})
		if err := root.Execute(); err == nil || !strings.Contains(err.Error(), "--shard") {
			t.Errorf("score %v: error %v, want one about --shard", args, err)
		}
	}
}
