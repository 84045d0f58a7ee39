package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/fakeserver"
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

func TestSGLangVersionFlag(t *testing.T) {
	for _, tc := range []struct {
		argv    []string
		profile string // the profile the launch plays; "" when the flags are refused
	}{
		{[]string{"--model-path", "m", "--sglang-version", "0.5.9"}, "0.5.9"},
		{[]string{"--model-path", "m", "--sglang-version=v0.5.10"}, "0.5.10"},
		{[]string{"--model-path", "m", "--profile", "B"}, "0.5.2"},
		{[]string{"--model-path", "m", "--profile", "C", "--sglang-version", "0.5.9"}, ""},
		{[]string{"--model-path", "m"}, "0.5.9"},
		{[]string{"--model-path", "m", "--sglang-version", "0.9.9"}, ""},
		{[]string{"--model-path", "m", "--sglang-version", "0.5.9", "--scenario", "s0-happy-era-c"}, ""},
	} {
		o, rest, err := splitOwn(tc.argv)
		if err == nil {
			var cfg fakeserver.Config
			cfg, err = config(o, rest)
			if err == nil && cfg.Profile.Name != tc.profile {
				t.Errorf("%q: profile %s, want %s", tc.argv, cfg.Profile.Name, tc.profile)
			}
		}
		if (err != nil) != (tc.profile == "") {
			t.Errorf("%q: err %v, want refused=%v", tc.argv, err, tc.profile == "")
		}
	}
}
