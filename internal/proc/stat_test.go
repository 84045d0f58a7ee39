package proc

import (
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	// A comm with spaces and parentheses, as prctl allows.
	line := "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 7 0 0 5 3 11 13 20 0 1 0 987654 10000 200 18446744073709551615\n"
	st, err := Parse([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := Stat{PID: 4242, State: 'S', PPID: 1, PGRP: 4242, Session: 4242, UTime: 5, STime: 3, CMinFlt: 7, CUTime: 11, CSTime: 13, StartTime: 987654}
	if st != want || !st.Alive() {
		t.Errorf("got %+v, want %+v", st, want)
	}
	zombie := strings.Replace(line, ") S ", ") Z ", 1)
	if st, err := Parse([]byte(zombie)); err != nil || st.Alive() {
		t.Errorf("zombie: %+v %v", st, err)
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x) S 1 2", "x (y) S 1 4242 4242 0 -1 4194560 100 7 0 0 5 3 11 13 20 0 1 0 987654"} {
		if _, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) = nil error", bad)
		}
	}
}

func TestReadSelf(t *testing.T) {
	if _, err := os.Stat(Root); err != nil {
		t.Skip("no procfs here")
	}
	st, err := Read("", os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.PID != os.Getpid() || st.PPID != os.Getppid() || !st.Alive() || st.StartTime == 0 {
		t.Errorf("self: %+v", st)
	}
	pids, err := PIDs("")
	if err != nil || len(pids) == 0 {
		t.Fatalf("PIDs: %v %v", pids, err)
	}
}

func TestFields(t *testing.T) {
	line := []byte("4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 7 0 0 5 3 11 13 20 0 3 0 987654 10000\n")
	l := Fields(line)
	if l.State() != 'S' || l.Int(4) != 1 || l.Int(5) != 4242 || l.Int(20) != 3 || l.Int(22) != 987654 {
		t.Errorf("state %q ppid %d pgrp %d threads %d start %d", l.State(), l.Int(4), l.Int(5), l.Int(20), l.Int(22))
	}
	if l.Field(2) != nil || l.Field(23) != nil || l.Int(23) != -1 {
		t.Error("fields outside 3..22 must read as missing")
	}
	for _, bad := range []string{"", "4242 (x", "4242 (x)", "4242 (x) ", "4242 (x) SS 1"} {
		if st := Fields([]byte(bad)).State(); st != 0 {
			t.Errorf("Fields(%q).State() = %q, want 0", bad, st)
		}
	}
	for in, want := range map[string]int{"": -1, "0": 0, "123": 123, "-1": -1, "1x": -1} {
		if got := Atoi([]byte(in)); got != want {
			t.Errorf("Atoi(%q) = %d, want %d", in, got, want)
		}
	}
}

func FuzzFields(f *testing.F) {
	f.Add([]byte("4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 7 0 0 5 3 11 13 20 0 3 0 987654 10000\n"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := Fields(b)
		for n := 3; n <= 22; n++ {
			_ = l.Int(n)
		}
		if st, err := Parse(b); err == nil && st.State != l.State() {
			t.Errorf("Parse's state %q, Fields' %q", st.State, l.State())
		}
	})
}
