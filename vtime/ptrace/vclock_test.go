//go:build linux && amd64

package ptrace

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
)

// vclockCode and its offsets are testdata/vclock.s assembled.
func TestVClockCodeMatchesSource(t *testing.T) {
	tools := map[string]string{}
	for _, name := range []string{"as", "objcopy", "nm"} {
		p, err := exec.LookPath(name)
		if err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s not installed (binutils, which the C compiler brings)", name)
			}
			t.Skipf("%s not installed (binutils)", name)
		}
		tools[name] = p
	}
	dir := t.TempDir()
	obj, bin := filepath.Join(dir, "vclock.o"), filepath.Join(dir, "vclock.bin")
	for _, argv := range [][]string{
		{tools["as"], "-o", obj, "testdata/vclock.s"},
		{tools["objcopy"], "-O", "binary", "-j", ".text", obj, bin},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
		}
	}
	code, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(code, vclockCode[:]) {
		t.Errorf("vclockCode differs from testdata/vclock.s assembled (%d bytes): paste the new bytes", len(code))
	}
	out, err := exec.Command(tools["nm"], obj).Output()
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]uint64{}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			labels[f[2]], _ = strconv.ParseUint(f[0], 16, 64)
		}
	}
	for name, want := range map[string]uint64{"clock_gettime": 0, "gettimeofday": vcGettimeofday, "time": vcTime,
		"gen": vcGen, "pub": vcPub, "mono": vcMono, "tai": vcTai} {
		if got, ok := labels[name]; !ok || got != want {
			t.Errorf("label %s at %#x in the source, %#x here", name, got, want)
		}
	}
}

// A Go program's reads of the clock cost no stop, and it sees virtual time.
func TestTimeReadsDoNotStop(t *testing.T) {
	if _, err := ownVDSO(); err != nil {
		t.Skipf("no vDSO to give the virtual clock to: %v", err)
	}
	bin := build(t, "sleeper")
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := vtime.New(epoch, vtime.Options{})
	defer c.Close()
	const reads = 100000
	lines, tr, _ := trace(t, c, bin, "1", "90s", strconv.Itoa(reads))
	tr.mu.Lock()
	stops := tr.stops
	tr.mu.Unlock()
	if len(lines) != 2 || tr.ExitCode() != 0 {
		t.Fatalf("exit %d, output %q", tr.ExitCode(), lines)
	}
	if want := "start " + itoa(epoch.Unix()); lines[0] != want {
		t.Errorf("first line %q, want %q", lines[0], want)
	}
	if got := parseInt(strings.Fields(lines[1])[1]) - epoch.Unix(); got < 90 || got > 91 {
		t.Errorf("woke %d s after the epoch, want 90", got)
	}
	t.Logf("%d reads, %d stops", reads, stops)
	if stops > reads/10 {
		t.Errorf("%d clock reads made %d stops: the reads go through the tracer", reads, stops)
	}
}

// A forked process (a subshell) has a copy of its creator's vDSO block, kept up to date: it
// reads the time after its child's sleep, as its parent does after it.
func TestForkedProcessReadsTheClock(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lines, code, wall := run(t, epoch, bash, "-c", `echo $EPOCHSECONDS; (sleep 100; echo $EPOCHSECONDS; sleep 20); echo $EPOCHSECONDS`)
	t.Logf("wall %v: %q", wall, lines)
	if code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, output %q", code, lines)
	}
	for i, want := range []int64{0, 100, 120} {
		if got := parseInt(lines[i]) - epoch.Unix(); got < want || got > want+1 {
			t.Errorf("line %d: %d s after the epoch, want %d", i+1, got, want)
		}
	}
}
