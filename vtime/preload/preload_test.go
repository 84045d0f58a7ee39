package preload

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/internal/testnet"
)

// start is the scenario time every test's page begins at: 1735689600.
var start = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

var (
	lib    string
	libErr error
)

func TestMain(m *testing.M) {
	if os.Getenv("VTIME_TEST_GO_SLEEPER") != "" {
		time.Sleep(30 * time.Second) // a Go binary in a group: it never sees virtual time
		os.Exit(0)
	}
	if dir := os.Getenv("VTIME_TEST_OWNER_DIR"); dir != "" {
		p, err := NewPage(dir, start) // and exit without Close: a dead owner
		if err != nil {
			os.Exit(1)
		}
		fmt.Println(p.Path())
		os.Exit(0)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	lib, libErr = Library(ctx)
	cancel()
	os.Exit(m.Run())
}

func needLib(t testing.TB) {
	t.Helper()
	if libErr != nil {
		if _, err := exec.LookPath(compiler()[0]); err != nil {
			t.Skip(libErr)
		}
		t.Fatal(libErr)
	}
}

func newPage(t testing.TB) *Page {
	t.Helper()
	p, err := NewPage("", start)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(p.Path()); err == nil {
			t.Errorf("page file %s still there after Close", p.Path())
		}
	})
	return p
}

// python resolves python3 past a pyenv shim, which would add its own processes.
func python(t testing.TB) string {
	out, err := exec.Command("python3", "-c", "import sys;print(sys.executable)").Output()
	if err != nil {
		t.Skip("python3:", err)
	}
	return strings.TrimSpace(string(out))
}

// startGroup starts argv in a new process group on p; the group is killed at cleanup.
func startGroup(t testing.TB, p *Page, stdin io.Reader, stdout io.Writer, argv ...string) (*exec.Cmd, *Group) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	if p != nil {
		cmd.Env = append(os.Environ(), p.Env(lib)...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	if p == nil {
		return cmd, nil
	}
	g := p.Group(pgid)
	t.Cleanup(g.Close)
	return cmd, g
}

// silentPipe is a stdin that never delivers data nor closes until cleanup.
func silentPipe(t testing.TB) *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r
}

type result struct {
	out  string
	code int
	virt time.Duration // virtual time from start to exit
	wall time.Duration
}

// run starts argv on a fresh page and drives the clock until it exits: every ~200 µs,
// when the group is idle, virtual time jumps to the earliest of the group's next
// deadline and extra's (a Go-side participant's). It fails past wallLimit.
func run(t *testing.T, stdin io.Reader, extra func() time.Time, wallLimit time.Duration, argv ...string) result {
	t.Helper()
	needLib(t)
	p := newPage(t)
	return runOn(t, p, stdin, extra, wallLimit, argv...)
}

func runOn(t testing.TB, p *Page, stdin io.Reader, extra func() time.Time, wallLimit time.Duration, argv ...string) result {
	t.Helper()
	var out bytes.Buffer
	wall0 := time.Now()
	cmd, g := startGroup(t, p, stdin, &out, argv...)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for i := 0; ; i++ {
		select {
		case err := <-done:
			r := result{out: out.String(), virt: p.Now().Sub(start), wall: time.Since(wall0)}
			if ee, ok := err.(*exec.ExitError); ok {
				r.code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			return r
		default:
		}
		if time.Since(wall0) > wallLimit || i > 1_000_000 {
			t.Fatalf("%q still running after %v wall, %v virtual; output so far:\n%s", argv, time.Since(wall0), p.Now().Sub(start), out.String())
		}
		step(p, g, extra)
		time.Sleep(200 * time.Microsecond)
	}
}

func step(p *Page, g *Group, extra func() time.Time) {
	idle, next := g.Idle()
	if extra != nil {
		if e := extra(); !e.IsZero() && e.After(p.Now()) && (next.IsZero() || e.Before(next)) {
			next = e
		}
	}
	if idle && !next.IsZero() {
		p.Set(next)
	}
}

func lines(s string) []string { return strings.Fields(s) }

func unix(d time.Duration) string { return strconv.FormatInt(start.Add(d).Unix(), 10) }

func within(t *testing.T, what string, got, lo, hi time.Duration) {
	t.Helper()
	if got < lo || got > hi {
		t.Errorf("%s: %v, want within [%v, %v]", what, got, lo, hi)
	}
}

func TestLibraryBuildsWithoutWarnings(t *testing.T) {
	needLib(t)
	dir := t.TempDir()
	msg, err := build(context.Background(), compiler(), dir, filepath.Join(dir, "v.so"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msg) > 0 {
		t.Errorf("compiler output:\n%s", msg)
	}
	if again, err := Library(context.Background()); err != nil || again != lib {
		t.Errorf("Library again = %q, %v; want the cached %q", again, err, lib)
	}
}

func TestWithoutPageEverythingIsReal(t *testing.T) {
	needLib(t)
	cmd := exec.Command("bash", "-c", "date +%s; sleep 0.05; date +%s")
	cmd.Env = append(os.Environ(), "LD_PRELOAD="+lib, "VTIME_PAGE=/nonexistent")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatal(err, string(out))
	}
	for _, l := range lines(string(out)) {
		if s, _ := strconv.ParseInt(l, 10, 64); time.Since(time.Unix(s, 0)).Abs() > time.Minute {
			t.Errorf("date printed %s, want about now", l)
		}
	}
}

func TestSleep300(t *testing.T) {
	r := run(t, nil, nil, 5*time.Second, "bash", "-c", "date +%s; sleep 300; date +%s")
	if want := []string{unix(0), unix(300 * time.Second)}; !slices.Equal(lines(r.out), want) {
		t.Errorf("output %q, want %q", r.out, want)
	}
	within(t, "virtual", r.virt, 300*time.Second, 301*time.Second)
	within(t, "wall", r.wall, 0, 2*time.Second)
}

func TestPythonSleep(t *testing.T) {
	py := python(t)
	r := run(t, nil, nil, 5*time.Second, py, "-c",
		"import time; a=time.time(); m=time.monotonic(); time.sleep(120); print(time.time()-a, time.monotonic()-m)")
	f := lines(r.out)
	if len(f) != 2 {
		t.Fatalf("output %q", r.out)
	}
	for i, what := range []string{"time.time", "time.monotonic"} {
		s, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			t.Fatal(err)
		}
		within(t, what, time.Duration(s*float64(time.Second)), 120*time.Second, 120*time.Second+10*time.Millisecond)
	}
	within(t, "wall", r.wall, 0, 2*time.Second)
}

// TestPythonWaits: a semaphore wait (threading.Event.wait: sem_clockwait), select and
// epoll on a silent pipe, alarm and setitimer with signal.pause; each prints the seconds
// since the start.
func TestPythonWaits(t *testing.T) {
	py := python(t)
	script := `
import select, signal, sys, threading, time
t0 = time.time()
def at(): print(round(time.time() - t0, 3), flush=True)
threading.Event().wait(4); at()
select.select([sys.stdin], [], [], 3); at()
e = select.epoll(); e.register(sys.stdin.fileno(), select.EPOLLIN); e.poll(2.5); at()
signal.signal(signal.SIGALRM, lambda *a: None)
signal.alarm(7); signal.pause(); at()
signal.setitimer(signal.ITIMER_REAL, 1.5); signal.pause(); at()
`
	r := run(t, silentPipe(t), nil, 5*time.Second, py, "-c", script)
	if want := []string{"4.0", "7.0", "9.5", "16.5", "18.0"}; !slices.Equal(lines(r.out), want) {
		t.Errorf("output %q, want %q", r.out, want)
	}
	within(t, "wall", r.wall, 0, 2*time.Second)
}

// TestAlarmSurvivesExec: an alarm set before exec kills the new image (sleep) at its due
// time, as the kernel's alarm does.
func TestAlarmSurvivesExec(t *testing.T) {
	py := python(t)
	r := run(t, nil, nil, 5*time.Second, py, "-c", "import os, signal; signal.alarm(5); os.execv('/usr/bin/sleep', ['sleep', '100'])")
	if r.code != -1 {
		t.Errorf("exit %d, want killed by SIGALRM; output %q", r.code, r.out)
	}
	within(t, "virtual", r.virt, 5*time.Second, 5*time.Second+50*time.Millisecond)
}

func TestCurlMaxTime(t *testing.T) {
	needLib(t)
	p := newPage(t)
	answer := start.Add(25 * time.Second)
	var waiting atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		waiting.Store(true)
		defer waiting.Store(false)
		for i := 0; i < 100_000 && p.Now().Before(answer); i++ {
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		fmt.Fprintln(w, "ok")
	}))
	t.Cleanup(srv.Close)
	extra := func() time.Time {
		if waiting.Load() {
			return answer
		}
		return time.Time{}
	}
	// bash reports curl's status and the virtual time it exited at: once the group is
	// gone, the driver goes on to the handler's deadline.
	r := runOn(t, p, nil, extra, 5*time.Second, "bash", "-c", `curl -s --max-time 5 "$0"; echo $?; date +%s.%N`, srv.URL)
	f := lines(r.out)
	if len(f) != 2 || f[0] != "28" {
		t.Fatalf("output %q, want curl's exit 28 (timeout) and the time", r.out)
	}
	end, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	within(t, "curl's exit", time.Duration((end-float64(start.Unix()))*float64(time.Second)), 5*time.Second, 6*time.Second)
	within(t, "wall", r.wall, 0, 2*time.Second)
}

func TestTimeoutCat(t *testing.T) {
	r := run(t, silentPipe(t), nil, 5*time.Second, "timeout", "5", "cat")
	if r.code != 124 {
		t.Errorf("timeout exit %d, want 124; output %q", r.code, r.out)
	}
	within(t, "virtual", r.virt, 5*time.Second, 5*time.Second+50*time.Millisecond)
	within(t, "wall", r.wall, 0, 2*time.Second)
}

func TestBashReadTimeout(t *testing.T) {
	r := run(t, silentPipe(t), nil, 5*time.Second, "bash", "-c", "read -t 3 x; echo $?; date +%s")
	if want := []string{"142", unix(3 * time.Second)}; !slices.Equal(lines(r.out), want) {
		t.Errorf("output %q, want %q (read's status past 128 on a timeout)", r.out, want)
	}
	within(t, "virtual", r.virt, 3*time.Second, 3*time.Second+50*time.Millisecond)
	within(t, "wall", r.wall, 0, 2*time.Second)
}

func forkOrder(t *testing.T, p *Page) {
	r := runOn(t, p, nil, nil, 5*time.Second, "bash", "-c", "(sleep 2; date +%s) & sleep 1; date +%s; wait; date +%s")
	if want := []string{unix(time.Second), unix(2 * time.Second), unix(2 * time.Second)}; !slices.Equal(lines(r.out), want) {
		t.Errorf("output %q, want %q", r.out, want)
	}
	within(t, "virtual", r.virt, 2*time.Second, 2*time.Second+50*time.Millisecond)
	within(t, "wall", r.wall, 0, 2*time.Second)
}

func TestForkedChildren(t *testing.T) {
	needLib(t)
	forkOrder(t, newPage(t))
}

func busyNeverIdle(t *testing.T) {
	needLib(t)
	p := newPage(t)
	_, g := startGroup(t, p, nil, io.Discard, "bash", "-c", "while :; do :; done")
	for i := 0; i < 2000; i++ {
		if idle, next := g.Idle(); idle {
			t.Fatalf("busy loop reported idle (next %v) at call %d", next, i)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

func TestBusyLoopNeverIdle(t *testing.T) { busyNeverIdle(t) }

// hogs starts two CPU-bound processes off the clock for the rest of the test.
func hogs(t *testing.T) {
	for range 2 {
		startGroup(t, nil, nil, io.Discard, "bash", "-c", "while :; do :; done")
	}
}

func TestUnderLoad(t *testing.T) {
	needLib(t)
	hogs(t)
	t.Run("fork", func(t *testing.T) { forkOrder(t, newPage(t)) })
	t.Run("busy", busyNeverIdle)
	t.Run("timeout", TestTimeoutCat)
	t.Run("sleep300", TestSleep300)
}

// TestClosedPageRunsFree: after Close a sleeper finishes in real time instead of hanging.
func TestClosedPageRunsFree(t *testing.T) {
	needLib(t)
	p := newPage(t)
	cmd, _ := startGroup(t, p, nil, io.Discard, "sleep", "0.3")
	time.Sleep(50 * time.Millisecond)
	wall0 := time.Now()
	p.Close()
	if err := waitFor(cmd, 3*time.Second); err != nil {
		t.Fatal(err)
	}
	within(t, "wall after Close", time.Since(wall0), 0, 2*time.Second)
}

// TestDeadOwnerRunsFree: a page whose owner died without closing it; a sleeper notices
// (within a second) and finishes in real time.
func TestDeadOwnerRunsFree(t *testing.T) {
	needLib(t)
	self, _ := os.Executable()
	dir := t.TempDir()
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), "VTIME_TEST_OWNER_DIR="+dir)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err, string(out))
	}
	page := strings.TrimSpace(string(out))
	sleeper := exec.Command("bash", "-c", "sleep 0.3; date +%s")
	sleeper.Env = append(os.Environ(), "LD_PRELOAD="+lib, "VTIME_PAGE="+page)
	sleeper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var buf bytes.Buffer
	sleeper.Stdout = &buf
	wall0 := time.Now()
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-sleeper.Process.Pid, syscall.SIGKILL) })
	if err := waitFor(sleeper, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	within(t, "wall", time.Since(wall0), 300*time.Millisecond, 3*time.Second)
	if got := strings.TrimSpace(buf.String()); got != unix(0) {
		t.Errorf("date printed %s, want %s: the free clock goes on from the page's time", got, unix(0))
	}
}

func waitFor(cmd *exec.Cmd, limit time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		return fmt.Errorf("%v still running after %v", cmd.Args, limit)
	}
}

func TestUnvirtualised(t *testing.T) {
	needLib(t)
	dir := t.TempDir()
	static := filepath.Join(dir, "static-sleeper")
	src := filepath.Join(dir, "s.c")
	os.WriteFile(src, []byte("#include <unistd.h>\nint main(void){sleep(30);return 0;}\n"), 0o644)
	if out, err := exec.Command(compiler()[0], "-static", "-O2", "-o", static, src).CombinedOutput(); err != nil {
		t.Skipf("no static C toolchain (libc6-dev's libc.a): %v\n%s", err, out)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := newPage(t)
	script := fmt.Sprintf("%q & VTIME_TEST_GO_SLEEPER=1 %q & exec sleep 30", static, self)
	_, g := startGroup(t, p, nil, io.Discard, "bash", "-c", script)
	want := map[string]bool{static: true, self: true}
	var got []int
	for i := 0; i < 100; i++ {
		time.Sleep(20 * time.Millisecond)
		if got = g.Unvirtualised(); len(got) == 2 {
			break
		}
	}
	if len(got) != 2 {
		t.Fatalf("Unvirtualised = %v (%v), want the static and the Go binary", got, exes(got))
	}
	for _, pid := range got {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if !want[exe] {
			t.Errorf("Unvirtualised has pid %d (%s), want only %v", pid, exe, want)
		}
	}
}

func exes(pids []int) []string {
	var out []string
	for _, pid := range pids {
		exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		out = append(out, exe)
	}
	return out
}

// BenchmarkGroupIdle measures Idle on a two-process group: idle (bash in wait4, sleep on
// the futex: the full path, both reads of every thread) and busy (one spinning bash: the
// early exit).
func BenchmarkGroupIdle(b *testing.B) {
	needLib(b)
	for _, c := range []struct{ name, script string }{
		{"idle", "sleep 1000; true"},
		{"busy", "while :; do :; done; true"},
	} {
		b.Run(c.name, func(b *testing.B) {
			p := newPage(b)
			_, g := startGroup(b, p, nil, io.Discard, "bash", "-c", c.script)
			time.Sleep(100 * time.Millisecond)
			g.Idle()
			n := 0
			for b.Loop() {
				if idle, _ := g.Idle(); idle {
					n++
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "idle/op")
		})
	}
}

// BenchmarkSleepLoop runs a founding loop's sleeps (120 sleep processes) alone and beside
// 600 idle processes off the clock, as many as a scored matrix keeps: every exit of a
// member makes Idle look for orphans among the processes started since.
func BenchmarkSleepLoop(b *testing.B) {
	needLib(b)
	const virt = 120 * 5 * time.Second
	for _, crowd := range []int{0, 600} {
		b.Run(fmt.Sprintf("crowd=%d", crowd), func(b *testing.B) {
			if crowd > 0 {
				base := countProcs(b)
				startGroup(b, nil, nil, io.Discard, "bash", "-c", fmt.Sprintf("for i in $(seq %d); do sleep 1000 & done; wait", crowd))
				for deadline := time.Now().Add(10 * time.Second); countProcs(b) < base+crowd && time.Now().Before(deadline); {
					time.Sleep(10 * time.Millisecond)
				}
			}
			var wall time.Duration
			for b.Loop() {
				p, err := NewPage("", start)
				if err != nil {
					b.Fatal(err)
				}
				r := runOn(b, p, nil, nil, 60*time.Second, "bash", "-c", "for i in $(seq 120); do sleep 5; done")
				p.Close()
				if r.virt < virt || r.virt > virt+time.Second {
					b.Fatalf("virtual %v, want %v", r.virt, virt)
				}
				wall += r.wall
			}
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N)/virt.Minutes(), "wall-ms/virtual-min")
		})
	}
}

func countProcs(b *testing.B) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	return len(ents)
}

// A handshake with a loopback peer that is still on its way (here held up for good: the
// listener's accept queue is full, so the kernel drops the SYN and retries after a second)
// holds the clock: the process is not idle while it waits for it, however it waits. On a
// loaded host the same wait is the milliseconds a deferred softirq takes.
func TestHandshakeOnItsWayHoldsTheClock(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl not installed")
	}
	needLib(t)
	addr := testnet.FullListener(t)

	p := newPage(t)
	_, g := startGroup(t, p, nil, io.Discard, "curl", "-s", "--connect-timeout", "30", "http://"+addr+"/")
	for deadline := time.Now().Add(500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if idle, next := g.Idle(); idle {
			t.Fatalf("curl is idle (next deadline %v) while its SYN has not reached the listener", next.Sub(start))
		}
	}
}

// A thread that Idle found running is looked at first on the next call; once it sleeps
// the group is read in full again and found idle, and a busy thread that exits leaves no
// stale look behind.
func TestHotThreadCools(t *testing.T) {
	needLib(t)
	p := newPage(t)
	_, g := startGroup(t, p, nil, io.Discard, "bash", "-c", "i=0; while ((i < 300000)); do ((i++)); done; sleep 1000")
	sawHot := false
	deadline := time.Now().Add(30 * time.Second)
	for {
		idle, _ := g.Idle()
		g.mu.Lock()
		sawHot = sawHot || g.hot != nil
		g.mu.Unlock()
		if idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group stayed busy after its spinning thread went to sleep")
		}
		time.Sleep(200 * time.Microsecond)
	}
	if !sawHot {
		t.Fatal("Idle never remembered the spinning thread")
	}
}

// A thread started while the group's known threads sleep is found (the thread counts in
// their stats no longer add up, so the task directory is listed again): a process whose
// new thread spins is never idle.
func TestNewThreadIsSeen(t *testing.T) {
	needLib(t)
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	in, feed, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); feed.Close() })
	out, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { out.Close(); w.Close() })
	p := newPage(t)
	// The spinner waits for the line to be out: once it spins, the GIL's timed waits are on
	// the page's clock, which stands still here, so the main thread could not print.
	_, g := startGroup(t, p, in, w, py, "-c", `import os, threading
go = threading.Event()
def spin():
    go.wait()
    while True: pass
print("asleep", flush=True)
os.read(0, 1)
threading.Thread(target=spin, daemon=True).start()
print("spinning", flush=True)
go.set()
os.read(0, 1)`)
	lines := bufio.NewReader(out)
	if l, err := lines.ReadString('\n'); err != nil || l != "asleep\n" {
		t.Fatalf("first line %q, %v", l, err)
	}
	idle := false
	for deadline := time.Now().Add(10 * time.Second); !idle && time.Now().Before(deadline); {
		idle, _ = g.Idle()
		time.Sleep(time.Millisecond)
	}
	if !idle {
		t.Fatal("a process blocked on a read was never idle")
	}
	if _, err := feed.Write([]byte{1}); err != nil {
		t.Fatal(err)
	}
	if l, err := lines.ReadString('\n'); err != nil || l != "spinning\n" {
		t.Fatalf("second line %q, %v", l, err)
	}
	for i := range 300 {
		if idle, _ := g.Idle(); idle {
			t.Fatalf("idle at look %d with a thread spinning", i)
		}
		time.Sleep(time.Millisecond)
	}
}

// An orphan in the group holds the clock. The subshell that starts the spinning loop exits
// between two looks, so no children list ever names the loop: it is found among the
// processes started since the last look, once a member has exited.
func TestOrphanHoldsTheClock(t *testing.T) {
	needLib(t)
	p := newPage(t)
	_, g := startGroup(t, p, nil, io.Discard, "bash", "-c", "sleep 1; ( (while :; do :; done) & ); exec sleep 5")
	var next time.Time
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		var idle bool
		if idle, next = g.Idle(); idle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the group never went idle in its first sleep")
		}
	}
	if want := start.Add(time.Second); !next.Equal(want) {
		t.Fatalf("next deadline %v, want %v", next.Sub(start), time.Second)
	}
	p.Set(next)
	time.Sleep(200 * time.Millisecond) // the subshell forks the loop and exits unseen
	for i := 0; i < 500; i++ {
		if idle, next := g.Idle(); idle {
			t.Fatalf("idle (next %v) at call %d while an orphaned loop spins", next.Sub(start), i)
		}
		time.Sleep(200 * time.Microsecond)
	}
}
