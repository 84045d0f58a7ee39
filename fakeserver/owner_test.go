package fakeserver

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestOwnerGone(t *testing.T) {
	if procStart(os.Getpid()) == "" {
		t.Skip("no /proc: owners carry no start time here")
	}
	if ownerGone(Owner) {
		t.Fatalf("this process (%s) judged gone", Owner)
	}
	host, _ := os.Hostname()
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child := host + "/" + strconv.Itoa(cmd.Process.Pid) + "/" + procStart(cmd.Process.Pid)
	if ownerGone(child) {
		t.Errorf("running child %s judged gone", child)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if !ownerGone(child) {
		t.Errorf("exited child %s not judged gone", child)
	}
	pid := strconv.Itoa(os.Getpid())
	for owner, want := range map[string]bool{
		host + "/" + pid + "/1":      true,  // the PID now belongs to another process
		"another-host/" + pid + "/1": false, // not ours to judge
		host + "/" + pid + "/":       false, // no start time recorded: the PID is alive
		"garbage":                    false,
	} {
		if got := ownerGone(owner); got != want {
			t.Errorf("ownerGone(%q) = %v, want %v", owner, got, want)
		}
	}
}
