//go:build linux && amd64

package ptrace

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
)

// build compiles the program in testdata/NAME into dir.
func build(t *testing.T, name string, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", append([]string{"build", "-o", bin}, append(args, "./testdata/"+name)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// run traces argv on a fresh virtual clock starting at epoch and returns its output lines
// and exit code.
func run(t *testing.T, epoch time.Time, argv ...string) ([]string, int, time.Duration) {
	t.Helper()
	c := vtime.New(epoch, vtime.Options{})
	defer c.Close()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	tr, err := Start(c, Options{Argv: argv, Env: os.Environ(), Out: pw})
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	pr.Close()
	select {
	case <-tr.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("tracee did not end; output %q", lines)
	}
	wall := time.Since(begin)
	tr.Recorded()
	code := tr.ExitCode()
	tr.Close()
	return lines, code, wall
}

func TestGoSleepsOnVirtualTime(t *testing.T) {
	bin := build(t, "sleeper")
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lines, code, wall := run(t, epoch, bin, "4", "300s")
	t.Logf("wall %v: %q", wall, lines)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if len(lines) != 5 {
		t.Fatalf("want 5 lines, got %q", lines)
	}
	if want := "start " + itoa(epoch.Unix()); lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		wantSec := epoch.Unix() + int64(300*(i+1))
		got := parseInt(f[1])
		if got < wantSec || got > wantSec+1 {
			t.Errorf("line %q: wall %d, want %d", l, got, wantSec)
		}
		el, _ := time.ParseDuration(f[2])
		if el < time.Duration(i+1)*300*time.Second || el > time.Duration(i+1)*300*time.Second+time.Second {
			t.Errorf("line %q: elapsed %v, want %v", l, el, time.Duration(i+1)*300*time.Second)
		}
	}
	if wall > 2*time.Second {
		t.Errorf("4 sleeps of 300 s took %v of wall time", wall)
	}
}
