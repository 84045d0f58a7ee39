package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
)

func TestHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		t.Run(arg, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), nil, []string{arg}, &stdout, &stderr); code != 0 {
				t.Fatalf("exit %d, want 0 (stderr %q)", code, stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), "usage: fakesglang") || stderr.Len() != 0 {
				t.Errorf("stdout %q, stderr %q: want the usage on stdout only", stdout.String(), stderr.String())
			}
		})
	}
}

// --scenario keeps the scenario's launch, except for what the command line says: its model
// flags name what /v1/models lists.
func TestScenarioHonoursModelFlags(t *testing.T) {
	cases := []struct {
		argv                []string
		wantPath, wantServe string
	}{
		{nil, "Qwen/Qwen2.5-7B-Instruct", ""},
		{[]string{"--model-path", "my/model"}, "my/model", ""},
		{[]string{"--model=my/model", "--served-model-name", "mine"}, "my/model", "mine"},
		{[]string{"--served-model-name=mine"}, "Qwen/Qwen2.5-7B-Instruct", "mine"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.argv, " "), func(t *testing.T) {
			cfg, err := config(own{scenario: "s13-slow-health-1s", speed: 1}, c.argv)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Args.ModelPath != c.wantPath || cfg.Args.ServedModelName != c.wantServe {
				t.Errorf("model path %q served name %q, want %q %q", cfg.Args.ModelPath, cfg.Args.ServedModelName, c.wantPath, c.wantServe)
			}
		})
	}
}

// SIGTERM reaches the server, which drains as its release does and exits 137; SIGINT (ctx)
// stops it at once with 143.
func TestRunSigterm(t *testing.T) {
	var stdout, stderr bytes.Buffer
	logFile := filepath.Join(t.TempDir(), "log")
	term := make(chan os.Signal, 1)
	done := make(chan int, 1)
	argv := []string{"--model-path", "m", "--port", "0", "--speed", "100", "--bind-after", "1s", "--profile", "0.5.2", "--log-file", logFile}
	go func() { done <- run(context.Background(), term, argv, &stdout, &stderr) }()
	logs := func() string { b, _ := os.ReadFile(logFile); return string(b) }
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(logs(), "fired up"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never ready:\n%s", logs())
		}
	}
	term <- syscall.SIGTERM
	select {
	case code := <-done:
		if code != 137 || !strings.Contains(logs(), "SIGTERM received. signum=None frame=None. Draining requests and shutting down...") {
			t.Errorf("exit %d, want 137 after the drain; log:\n%s", code, logs())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no exit after SIGTERM")
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

// --port-holder-on-vclock takes the holder's socket from the leader, so it needs one.
func TestPortHolderOnVclockNeedsVclock(t *testing.T) {
	_, _, err := splitOwn([]string{"--model-path", "m", "--scenario", "s8-stale-listener", "--port-holder-on-vclock"})
	if err == nil || !strings.Contains(err.Error(), "needs --vclock") {
		t.Fatalf("err %v, want a usage error naming --vclock", err)
	}
	o, rest, err := splitOwn([]string{"--port-holder-on-vclock", "--vclock", "/x.sock", "--model-path", "m"})
	if err != nil || !o.holderOnVclock || o.vclock != "/x.sock" || len(rest) != 2 {
		t.Fatalf("own %+v, rest %q, err %v", o, rest, err)
	}
}
