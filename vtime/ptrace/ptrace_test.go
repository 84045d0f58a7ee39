//go:build linux && amd64

package ptrace

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/internal/testnet"
	"github.com/incident-replay/incident-replay/vtime"
)

// build compiles the program in testdata/NAME into dir.
func build(t testing.TB, name string, args ...string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", append([]string{"build", "-o", bin}, append(args, "./testdata/"+name)...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// buildPkg compiles the main package pkg.
func buildPkg(t *testing.T, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(pkg))
	if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// run traces argv on a fresh virtual clock starting at epoch and returns its output lines,
// exit code and wall time.
func run(t *testing.T, epoch time.Time, argv ...string) ([]string, int, time.Duration) {
	t.Helper()
	c := vtime.New(epoch, vtime.Options{})
	defer c.Close()
	return runOn(t, c, argv...)
}

func runOn(t *testing.T, c *vtime.Clock, argv ...string) ([]string, int, time.Duration) {
	t.Helper()
	lines, tr, wall := trace(t, c, argv...)
	return lines, tr.ExitCode(), wall
}

// trace runs argv traced on c to its end and returns its output lines, the closed tracee
// and the wall time.
func trace(t *testing.T, c *vtime.Clock, argv ...string) ([]string, *Tracee, time.Duration) {
	t.Helper()
	begin := time.Now()
	tr, pr := startPiped(t, c, Options{Argv: argv, Env: os.Environ()})
	var lines []string
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
	}()
	select {
	case <-tr.Done():
	case <-time.After(20 * time.Second):
		tr.Close()
		<-read
		pr.Close()
		t.Fatalf("tracee still runs after 20 s of wall time; output %q", lines)
	}
	<-read
	pr.Close()
	wall := time.Since(begin)
	tr.Recorded()
	tr.Close()
	return lines, tr, wall
}

// startPiped starts o traced on c with its output on a pipe, and returns the tracee and the
// pipe's read end.
func startPiped(t *testing.T, c *vtime.Clock, o Options) (*Tracee, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	o.Out = pw
	tr, err := Start(c, o)
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatal(err)
	}
	return tr, pr
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
	// Measured 0.4-0.5 s; the bound leaves room for a loaded machine and is still a
	// hundredth of the real 20 minutes.
	if wall > 10*time.Second {
		t.Errorf("4 sleeps of 300 s took %v of wall time", wall)
	}
}

// A wait4x-like Go waiter against a server on the same clock: 503 until 40 s, then 200 that
// takes 25 s to answer until 60 s (past the 3 s client timeout), then 200 at once.
func TestGoWaiterAgainstServer(t *testing.T) {
	bin := buildPkg(t, "github.com/incident-replay/incident-replay/internal/testprog/gowaiter")
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := vtime.New(epoch, vtime.Options{})
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var probes []time.Duration
	var mu sync.Mutex
	srv := &http.Server{Handler: vtime.Handle(c, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, task := r.Context(), vtime.TaskFrom(r.Context())
		at := c.Now().Sub(epoch)
		mu.Lock()
		probes = append(probes, at)
		mu.Unlock()
		switch {
		case at < 40*time.Second:
			w.WriteHeader(http.StatusServiceUnavailable)
		case at < 60*time.Second:
			_ = task.Sleep(ctx, 25*time.Second)
		}
	}))}
	vtime.Serve(srv)
	go func() { _ = srv.Serve(vtime.Listen(ln, c)) }()
	defer srv.Close()

	lines, code, wall := runOn(t, c, bin, "-url", "http://"+ln.Addr().String()+"/health", "-timeout", "10m")
	t.Logf("wall %v: %q", wall, lines)
	if code != 0 || len(lines) == 0 || lines[len(lines)-1] != "ready" {
		t.Fatalf("exit %d, output %q", code, lines)
	}
	mu.Lock()
	defer mu.Unlock()
	// Probes start every 5 s after the previous one ended: 0 5 ... 40 (503 until 40), the
	// 25 s answers at 40 and 48 hit the 3 s timeout, then 56 (<60, times out again), 64 ok.
	want := []time.Duration{0, 5, 10, 15, 20, 25, 30, 35, 40, 48, 56, 64}
	if len(probes) != len(want) {
		t.Fatalf("probes at %v, want %v s", probes, want)
	}
	for i, p := range probes {
		if d := p - want[i]*time.Second; d < 0 || d > 100*time.Millisecond {
			t.Errorf("probe %d at %v, want %vs", i, p, want[i])
		}
	}
	if wall > 10*time.Second { // measured 0.7 s
		t.Errorf("64 s of polling took %v of wall time", wall)
	}
}

// A process tree: bash (dynamic, its vDSO hidden too) forks the Go sleeper, then date and a
// static C program that sleeps through libc; every one of them sees virtual time.
func TestTreeOfProcesses(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	bin := build(t, "sleeper")
	script := bin + " 2 300s; date +%s; sleep 60; date +%s"
	if cc, err := exec.LookPath("cc"); err == nil {
		dir := t.TempDir()
		src := filepath.Join(dir, "s.c")
		prog := "#include <stdio.h>\n#include <time.h>\n#include <unistd.h>\nint main(void){sleep(120);printf(\"%ld\\n\",(long)time(0));return 0;}\n"
		if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, "-static", "-o", filepath.Join(dir, "cstatic"), src).CombinedOutput(); err == nil {
			script += "; " + filepath.Join(dir, "cstatic")
		} else {
			t.Logf("no static C binary (%v: %s)", err, out)
		}
	}
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lines, code, wall := run(t, epoch, bash, "-c", script)
	t.Logf("wall %v: %q", wall, lines)
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	want := []int64{600, 660, 780} // after the Go sleeps, the sleep 60, the static sleep(120)
	if len(lines) < 5 {
		t.Fatalf("output %q", lines)
	}
	for i, l := range lines[3:] {
		if got := parseInt(l) - epoch.Unix(); got < want[i] || got > want[i]+1 {
			t.Errorf("line %q: %d s after the epoch, want %d", l, got, want[i])
		}
	}
	if wall > 10*time.Second { // measured 0.4 s
		t.Errorf("13 minutes of sleeps took %v of wall time", wall)
	}
}

// A member that moves to a session of its own (as a launcher's server does) is still traced:
// its sleeps are virtual, and the tree ends when it does.
func TestMemberInItsOwnSession(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Skip("setsid not installed")
	}
	bin := build(t, "sleeper")
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	lines, code, wall := run(t, epoch, bash, "-c", setsid+" --wait "+bin+" 1 300s")
	t.Logf("wall %v: %q", wall, lines)
	if code != 0 || len(lines) != 2 {
		t.Fatalf("exit %d, output %q", code, lines)
	}
	if got := parseInt(strings.Fields(lines[1])[1]) - epoch.Unix(); got < 300 || got > 301 {
		t.Errorf("woke %d s after the epoch, want 300", got)
	}
	if wall > 10*time.Second {
		t.Errorf("a 300 s sleep in its own session took %v of wall time", wall)
	}
}

// A process that execs one of Options.Release leaves virtual time at its exec (it reads the
// real clock and the clock does not wait for it); the rest of the tree stays on it. With the
// seccomp filter the released process stays a tracee that passes through (the filter cannot
// be removed); with every call traced it is detached.
func TestRelease(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("sh not installed")
	}
	date, err := exec.LookPath("date")
	if err != nil {
		t.Skip("date not installed")
	}
	dir := t.TempDir()
	released, kept := filepath.Join(dir, "released"), filepath.Join(dir, "kept")
	b, err := os.ReadFile(date)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{released, kept} {
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, every := range []bool{false, true} {
		t.Run(map[bool]string{false: "filtered", true: "every-call"}[every], func(t *testing.T) {
			c := vtime.New(epoch, vtime.Options{})
			defer c.Close()
			script := kept + " +%s; " + released + " +%s; " + kept + " +%s"
			tr, pr := startPiped(t, c, Options{Argv: []string{sh, "-c", script}, Env: os.Environ(),
				Release: []string{released}, EveryCall: every})
			defer pr.Close()
			defer tr.Close()
			out, _ := io.ReadAll(pr)
			<-tr.Done()
			tr.Recorded()
			f := strings.Fields(string(out))
			if len(f) != 3 {
				t.Fatalf("output %q", out)
			}
			now := time.Now().Unix()
			for i, want := range []int64{epoch.Unix(), now, epoch.Unix()} {
				if got := parseInt(f[i]); got < want-5 || got > want+5 {
					t.Errorf("line %d (%s) reads %d, want %d (virtual %d, real %d)", i+1,
						[]string{"kept", "released", "kept"}[i], got, want, epoch.Unix(), now)
				}
			}
		})
	}
}

// A tracee asleep while a CPU's backlog holds packets may have sent one of them, or be about
// to be woken by one: the clock waits for the backlog to drain before it moves to the
// tracee's deadline.
func TestBacklogHoldsTheTracee(t *testing.T) {
	bin := build(t, "sleeper")
	var queued sync.Mutex // held: the backlog holds packets
	queued.Lock()
	asked := make(chan struct{}) // closed once Idle found all else idle and asked
	var once sync.Once
	backlogged = func() bool {
		once.Do(func() { close(asked) })
		if queued.TryLock() {
			queued.Unlock()
			return false
		}
		return true
	}
	defer func() { backlogged = vtime.Backlogged }()
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := vtime.New(epoch, vtime.Options{})
	defer c.Close()
	done := make(chan []string, 1)
	go func() {
		lines, _, _ := trace(t, c, bin, "1", "300s")
		done <- lines
	}()
	select {
	case <-asked:
	case lines := <-done:
		t.Fatalf("the clock moved past the 300 s sleep without asking about the backlog: %q", lines)
	case <-time.After(20 * time.Second):
		t.Fatal("the tracee never slept with nothing else to wait for")
	}
	time.Sleep(100 * time.Millisecond) // driver looks, each of which would jump without the check
	if moved := c.Now().Sub(epoch); moved >= time.Minute {
		t.Errorf("the clock moved %v while the backlog held packets", moved)
	}
	queued.Unlock()
	select {
	case lines := <-done:
		if len(lines) != 2 || !strings.HasPrefix(lines[1], "woke") {
			t.Fatalf("output %q", lines)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the sleeper did not wake once the backlog drained")
	}
	if got := c.Now().Sub(epoch); got < 300*time.Second {
		t.Errorf("the clock is at %v after a 300 s sleep", got)
	}
}

// A loopback connect whose handshake is on its way holds the clock: here a listener whose
// full accept queue drops the SYN keeps the dialer in SYN-SENT, as a loaded host's deferred
// softirq work does for a moment. The clock stays put although the dialer sleeps in epoll
// with a 5 s timeout, and moves once the hold's real-time bound has passed.
func TestHandshakeHoldsTheClock(t *testing.T) {
	bin := build(t, "dialer")
	addr := testnet.FullListener(t)
	epoch := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c := vtime.New(epoch, vtime.Options{})
	defer c.Close()
	tr, pr := startPiped(t, c, Options{Argv: []string{bin, addr, "5s"}, Env: os.Environ()})
	defer pr.Close()
	defer tr.Close()
	out := bufio.NewScanner(pr)
	if !out.Scan() || out.Text() != "dialing" {
		t.Fatalf("dialer: %q", out.Text())
	}
	time.Sleep(handshakeMax / 3) // the driver's looks, each of which would jump without the hold
	if moved := c.Now().Sub(epoch); moved >= 5*time.Second {
		t.Fatalf("the clock moved %v while the dialer's SYN was unanswered", moved)
	}
	if !out.Scan() || out.Text() != "timeout 5s" {
		t.Fatalf("dialer: %q, want its 5 s timeout once the hold's bound passed", out.Text())
	}
	<-tr.Done()
	tr.Recorded()
}
