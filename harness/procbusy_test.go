package harness

import (
	"bufio"
	"os/exec"
	"syscall"
	"testing"
	"time"
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

// quiet waits (bounded) until processBusy(pid) reports false.
func quiet(pid int) bool {
	for range 500 {
		if !processBusy(pid) {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// A process asleep or stopped is quiet; one with a signal it has not taken yet (held pending here by a
// mask) or a thread that runs is busy; one that is gone is not.
func TestProcessBusy(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not on PATH")
	}
	cmd := start(t, py, "-c", `import signal, time
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
print("ready", flush=True)
time.sleep(60)`)
	pid := cmd.Process.Pid
	if !quiet(pid) {
		t.Fatal("a process asleep in time.sleep stays busy")
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if !quiet(pid) {
		t.Fatal("a process stopped by SIGSTOP stays busy")
	}
	if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if !quiet(pid) {
		t.Fatal("a process asleep again after SIGCONT stays busy")
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if !processBusy(pid) {
			t.Fatal("a process with a signal pending is not busy")
		}
		time.Sleep(10 * time.Millisecond)
	}

	spin := start(t, py, "-c", "print('ready', flush=True)\nwhile True: pass")
	busy := 0
	for range 20 {
		if processBusy(spin.Process.Pid) {
			busy++
		}
	}
	if busy < 15 {
		t.Fatalf("a process that never sleeps was busy in %d of 20 looks", busy)
	}
	_ = spin.Process.Kill()
	_ = spin.Wait()
	if processBusy(spin.Process.Pid) {
		t.Fatal("a process that is gone is busy")
	}
}
