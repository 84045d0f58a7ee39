package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
)

// lockedBuffer is written by the server's goroutines while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var urlLine = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+) `)

func TestServe(t *testing.T) {
	cases := []struct {
		name     string
		scenario string
		speed    float64
		stop     syscall.Signal // 0: run to the scenario's own end
		code     int
		logHas   string
		err      string
	}{
		{name: "crash during load exits 137", scenario: "s4-crash-during-load", speed: 500, code: 137, logHas: "torch.OutOfMemoryError"},
		{name: "SIGTERM stops a ready server", scenario: "s0-happy-era-c", speed: 500, stop: syscall.SIGTERM, code: 143, logHas: "The server is fired up and ready to roll!"},
		{name: "SIGINT", scenario: "s0-happy-era-a", speed: 500, stop: syscall.SIGINT, code: 130, logHas: "Uvicorn running on http://127.0.0.1:"},
		{name: "unknown scenario", scenario: "s0-happy-era-x", speed: 1, err: "did you mean"},
		{name: "bad speed", scenario: "s0-happy-era-c", speed: -1, err: "time factor -1 is invalid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			goroutines := runtime.NumGoroutine()
			dir := t.TempDir()
			o := serveOptions{scenario: c.scenario, speed: c.speed, seed: 3, journal: filepath.Join(dir, "j.jsonl"), logFile: filepath.Join(dir, "server.log")}
			var stdout, stderr lockedBuffer
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			type result struct {
				code int
				err  error
			}
			done := make(chan result, 1)
			go func() {
				code, err := serve(ctx, o, &stdout, &stderr)
				done <- result{code, err}
			}()
			var base string
			if c.stop != 0 {
				base = waitReady(t, &stderr)
				cancel(stopSignal{c.stop})
			}
			var res result
			select {
			case res = <-done:
			case <-time.After(10 * time.Second):
				t.Fatalf("serve did not return; stdout:\n%s", stdout.String())
			}
			if c.err != "" {
				if res.err == nil || !strings.Contains(res.err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", res.err, c.err)
				}
				return
			}
			if res.err != nil || res.code != c.code {
				t.Fatalf("serve = %d, %v; want %d", res.code, res.err, c.code)
			}
			logs := stdout.String()
			if !strings.Contains(logs, c.logHas) {
				t.Errorf("stdout lacks %q:\n%s", c.logHas, logs)
			}
			if file, _ := os.ReadFile(o.logFile); string(file) != logs {
				t.Errorf("--log-file differs from stdout (%d vs %d bytes)", len(file), len(logs))
			}
			jf, err := os.Open(o.journal)
			if err != nil {
				t.Fatal(err)
			}
			defer jf.Close()
			recs, err := fakeserver.ReadJournal(jf)
			if err != nil || len(recs) == 0 {
				t.Fatalf("journal: %d records, %v", len(recs), err)
			}
			if truth := fakeserver.GroundTruth(recs); c.stop == 0 && (truth.ExitCode == nil || *truth.ExitCode != c.code) {
				t.Errorf("journal truth %+v, want exit %d", truth, c.code)
			}
			if base != "" {
				if _, err := net.DialTimeout("tcp", strings.TrimPrefix(base, "http://"), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
					t.Errorf("after stop, dial %s: %v; want connection refused", base, err)
				}
			}
			// Nothing left running: the goroutine count returns to what it was.
			deadline := time.Now().Add(3 * time.Second)
			for runtime.NumGoroutine() > goroutines && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > goroutines {
				buf := make([]byte, 1<<16)
				t.Errorf("%d goroutines left over (had %d):\n%s", n-goroutines, goroutines, buf[:runtime.Stack(buf, true)])
			}
		})
	}
}

// waitReady reads the URL serve printed and polls it until /health answers 200.
func waitReady(t *testing.T, stderr *lockedBuffer) string {
	t.Helper()
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Second}
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if m := urlLine.FindStringSubmatch(stderr.String()); m != nil {
			if resp, err := client.Get(m[1] + "/health"); err == nil {
				resp.Body.Close()
				if resp.StatusCode == 200 {
					return m[1]
				}
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("server never became ready; stderr: %s", stderr.String())
	return ""
}

func TestServeCommandFlags(t *testing.T) {
	root := newRootCmd()
	root.SetArgs([]string{"serve"})
	root.SetOut(&bytes.Buffer{})
	root.SetErr(&bytes.Buffer{})
	if err := root.Execute(); err == nil || !strings.Contains(err.Error(), `"scenario" not set`) {
		t.Fatalf("serve without --scenario: %v", err)
	}
	if got := exitCode(serveExit{code: 137}); got != 137 {
		t.Fatalf("exit code %d, want 137", got)
	}
}
