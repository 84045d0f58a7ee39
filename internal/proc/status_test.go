package proc

import (
	"os"
	"strconv"
	"testing"
)

func TestStatusValue(t *testing.T) {
	status := []byte("Name:\tbash\nState:\tS (sleeping)\nTgid:\t4001\nPid:\t4002\nSigPnd:\t0000000000000000\nVmRSS:\t    3456 kB\n")
	for _, c := range []struct{ key, want string }{
		{"Tgid", "4001"},
		{"Pid", "4002"},
		{"SigPnd", "0000000000000000"},
		{"VmRSS", "3456 kB"},
		{"Ppid", ""}, // keys match whole and case-sensitively
		{"Tgi", ""},
		{"NSpid", ""},
	} {
		if got := string(StatusValue(status, c.key)); got != c.want {
			t.Errorf("StatusValue(%q) = %q, want %q", c.key, got, c.want)
		}
	}
	if got := StatusValue([]byte("Tgid:\t7"), "Tgid"); string(got) != "7" {
		t.Errorf("a last line without a newline: %q, want 7", got)
	}
}

func TestStatusValueOfSelf(t *testing.T) {
	b, err := os.ReadFile("/proc/self/status")
	if os.IsNotExist(err) {
		t.Skip("no procfs")
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := Atoi(StatusValue(b, "Tgid")); got != os.Getpid() {
		t.Errorf("Tgid %d, want %d (%s)", got, os.Getpid(), strconv.Quote(string(b[:min(len(b), 200)])))
	}
}
