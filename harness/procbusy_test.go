package harness

import (
	"bufio"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSignalPending(t *testing.T) {
	for _, c := range []struct {
		name, status string
		want         bool
	}{
		{"none", "Name:\tx\nSigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\t0000000000004000\n", false},
		{"shared", "SigPnd:\t0000000000000000\nShdPnd:\t0000000000004000\n", true},
		{"thread", "SigPnd:\t0000000000000200\nShdPnd:\t0000000000000000\n", true},
		{"blocked is not pending", "SigPnd:\t0000000000000000\nShdPnd:\t0000000000000000\nSigBlk:\tfffffffe7ffbfeff\n", false},
		{"truncated", "SigPnd:", false},
	} {
		if got := signalPending([]byte(c.status)); got != c.want {
			t.Errorf("%s: signalPending = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestExitUnreported(t *testing.T) {
	for _, c := range []struct {
		name, status string
		want         bool
	}{
		{"running", "State:\tS (sleeping)\nTracerPid:\t812\n", false},
		{"zombie, untraced", "State:\tZ (zombie)\nTracerPid:\t0\n", false},
		{"zombie, traced", "State:\tZ (zombie)\nTracerPid:\t812\n", true},
		{"dead, traced", "State:\tX (dead)\nTracerPid:\t812\n", true},
		{"no tracer line", "State:\tZ (zombie)\n", false},
		{"truncated", "State:", false},
	} {
		if got := exitUnreported([]byte(c.status)); got != c.want {
			t.Errorf("%s: exitUnreported = %v, want %v", c.name, got, c.want)
		}
	}
}

// A traced child that has exited is a zombie its parent cannot wait for until the tracer has:
// busy, and not reported, until then. Here the tracer is the parent, so its wait reaps it.
func TestTracedZombie(t *testing.T) {
	runtime.LockOSThread() // ptrace requests come from the thread that traces
	defer runtime.UnlockOSThread()
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Ptrace: true}
	if err := cmd.Start(); err != nil {
		t.Skipf("ptrace: %v", err)
	}
	pid := cmd.Process.Pid
	var ws syscall.WaitStatus
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Stopped() {
		t.Fatalf("no stop at exec: %v %v", ws, err)
	}
	w := newProcWatch(pid)
	defer w.Close()
	if err := syscall.PtraceCont(pid, 0); err != nil {
		t.Fatal(err)
	}
	zombie := false
	for range 500 { // WNOWAIT leaves the zombie as it is
		var info unix.Siginfo
		if err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, nil); err != nil {
			t.Fatal(err)
		}
		if info.Signo == int32(syscall.SIGCHLD) {
			zombie = true
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if !zombie {
		t.Fatal("the traced child did not exit")
	}
	if !w.busy() || exitReported(pid) {
		t.Fatal("a traced zombie counts as an exit its parent has heard of")
	}
	if _, err := syscall.Wait4(pid, &ws, 0, nil); err != nil || !ws.Exited() {
		t.Fatalf("reap: %v %v", ws, err)
	}
	if w.busy() || !exitReported(pid) {
		t.Fatal("a reaped process still counts as running")
	}
}

// start runs argv and waits for its first output line: the process is set up.
func start(t *testing.T, argv ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Skipf("%s: %v", argv[0], err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		t.Fatalf("%s printed nothing: %v", argv[0], err)
	}
	return cmd
}

// quiet waits (bounded) until w reports the process not busy.
func quiet(w *procWatch) bool {
	for range 500 {
		if !w.busy() {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// A process asleep or stopped is quiet; one with a signal it has not taken yet (held pending here by a
// mask) or a thread that runs is busy; one that is gone is not. One watch answers every look,
// from the files it keeps open, as the clock's driver asks it.
func TestProcWatch(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	cmd := start(t, py, "-c", `import signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
print("ready", flush=True)
time.sleep(60)`)
	pid := cmd.Process.Pid
	w := newProcWatch(pid)
	defer w.Close()
	if !quiet(w) {
		t.Fatal("a process asleep in time.sleep stays busy")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if !quiet(w) {
		t.Fatal("a process stopped by SIGSTOP stays busy")
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !quiet(w) {
		t.Fatal("a process asleep again after SIGCONT stays busy")
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if !w.busy() {
			t.Fatal("a process with a signal pending is not busy")
		}
		time.Sleep(10 * time.Millisecond)
	}

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if w.busy() {
		t.Fatal("a process that is gone is busy")
	}
	if !w.gone || len(w.threads) != 0 || w.status >= 0 || w.taskDir >= 0 {
		t.Fatal("the watch of a process that is gone keeps files open")
	}

	// A thread that spins beside one that sleeps: the watch finds it, and then looks at it first.
	// The sleeper needs the GIL once more after it says it started, so while it starts it can
	// run and the spinner wait: the looks are spread over 100 ms, and the last must find the
	// spinner first.
	spin := start(t, py, "-c", `import threading, time
started = threading.Event()
def sleeper():
    started.set()
    time.sleep(60)
threading.Thread(target=sleeper, daemon=True).start()
started.wait()
time.sleep(0.05)
print('ready', flush=True)
while True: pass`)
	sw := newProcWatch(spin.Process.Pid)
	defer sw.Close()
	busy := 0
	for range 20 {
		if sw.busy() {
			busy++
		}
		time.Sleep(5 * time.Millisecond)
	}
	if busy < 15 {
		t.Fatalf("a process that never sleeps was busy in %d of 20 looks", busy)
	}
	if !sw.busy() || sw.hot != spin.Process.Pid {
		t.Fatalf("the watch looks first at thread %d, not at the spinning main thread %d", sw.hot, spin.Process.Pid)
	}
	_ = spin.Process.Kill()
	_ = spin.Wait()
	if sw.busy() {
		t.Fatal("a process that is gone is busy")
	}
}

// BenchmarkProcWatch measures one look at a sleeping multi-threaded process: with the files
// kept open (how the clock's driver asks), and with a watch made for each look (every file
// opened and closed again).
func BenchmarkProcWatch(b *testing.B) {
	py, err := exec.LookPath("python3")
	if err != nil {
		b.Skip("python3 not on PATH")
	}
	cmd := exec.Command(py, "-c", `import threading, time
for _ in range(4):
    threading.Thread(target=lambda: time.sleep(600), daemon=True).start()
print("ready", flush=True)
time.sleep(600)`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil {
		b.Fatal(err)
	}
	pid := cmd.Process.Pid
	b.Run("kept", func(b *testing.B) {
		w := newProcWatch(pid)
		defer w.Close()
		for b.Loop() {
			if w.busy() {
				b.Fatal("a sleeping process is busy")
			}
		}
	})
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			w := newProcWatch(pid)
			if w.busy() {
				b.Fatal("a sleeping process is busy")
			}
			w.Close()
		}
	})
}
