package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		t.Run(arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), []string{arg}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, want 0 (stderr %q)", code, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), "usage: fakesglang") || stderr.Len() != 0 {
				t.Errorf("stdout %q, stderr %q: want the usage on stdout only", stdout.String(), stderr.String())
			}
		})
	}
}
