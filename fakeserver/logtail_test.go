package fakeserver

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestLogTail(t *testing.T) {
	cases := []struct {
		name  string
		limit int
		lines []string
		want  string
	}{
		{"under the limit keeps all", 100, []string{"a\n", "b\n"}, "a\nb\n"},
		{"up to twice the limit keeps all", 4, []string{"aaa\n", "bbb\n"}, "aaa\nbbb\n"},
		{"over twice the limit cuts at a line start", 6, []string{"aaa\n", "bbbbb\n", "cc\n", "dd\n"}, "cc\ndd\n"},
		{"a cut on a line boundary keeps that line", 6, []string{"aaaaa\n", "bbbbb\n", "ccccc\n"}, "ccccc\n"},
		{"one line longer than the limit is kept cut", 4, []string{"0123456789\n"}, "789\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tail := logTail{limit: c.limit}
			for _, l := range c.lines {
				tail.Write([]byte(l))
			}
			if got := string(tail.Bytes()); got != c.want {
				t.Errorf("kept %q, want %q", got, c.want)
			}
		})
	}
}

// TestLogTailBounded: a long run keeps at most twice the limit, ending with the newest line.
func TestLogTailBounded(t *testing.T) {
	tail := logTail{limit: 1000}
	var last string
	for i := range 100000 {
		last = "line " + strconv.Itoa(i) + "\n"
		tail.Write([]byte(last))
		if len(tail.buf) > 2*tail.limit {
			t.Fatalf("holds %d bytes after %d lines, limit %d", len(tail.buf), i, tail.limit)
		}
	}
	got := tail.Bytes()
	if !bytes.HasSuffix(got, []byte(last)) || !strings.HasPrefix(string(got), "line ") {
		t.Fatalf("tail does not run from a line start to the newest line: %q...%q", got[:20], got[len(got)-20:])
	}
}
