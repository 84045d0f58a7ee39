package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// buildGoWaiter compiles internal/testprog/gowaiter into dir.
func buildGoWaiter(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "gowaiter")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/incident-replay/incident-replay/internal/testprog/gowaiter").CombinedOutput(); err != nil {
		t.Fatalf("go build gowaiter: %v\n%s", err, out)
	}
	return bin
}

func TestDetectExec(t *testing.T) {
	dir := t.TempDir()
	buildGoWaiter(t, dir)
	static := ""
	if cc, err := exec.LookPath("cc"); err == nil {
		src := filepath.Join(dir, "s.c")
		if err := os.WriteFile(src, []byte("int main(void){return 0;}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if exec.Command(cc, "-static", "-o", filepath.Join(dir, "cstatic"), src).Run() == nil {
			static = filepath.Join(dir, "cstatic")
		}
	}
	script := filepath.Join(dir, "wait.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := dir + string(os.PathListSeparator) + os.Getenv("PATH")
	cases := []struct {
		name, command string
		want          ExecKind
	}{
		{"a Go binary on PATH", "gowaiter -url http://127.0.0.1:1/health", ExecGo},
		{"a Go binary by path after assignments and exec", "FOO=1 exec " + filepath.Join(dir, "gowaiter") + " -url x", ExecGo},
		{"a dynamic program", "bash -c 'exit 0'", ExecScript},
		{"sh -c with a Go binary inside is not inspected", "sh -c 'gowaiter -url x'", ExecScript},
		{"a shell loop", "until curl -sf x; do sleep 5; done", ExecScript},
		{"a script", script + " x", ExecScript},
		{"a quoted first word", "'gowaiter' -url x", ExecScript},
		{"nothing found", "no-such-tool-i15b x", ExecScript},
	}
	if static != "" {
		cases = append(cases, struct {
			name, command string
			want          ExecKind
		}{"a static C binary", static, ExecStatic})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, got := DetectExec(c.command, path); got != c.want {
				t.Errorf("DetectExec(%q) = %s, want %s", c.command, got, c.want)
			}
		})
	}
}
