package fakeserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
)

// TestStreamsFollowTheRelease: only uvicorn's access lines reach stdout; SGLang's own lines,
// the tqdm bars, uvicorn's lifecycle lines and the failure lines go to stderr.
func TestStreamsFollowTheRelease(t *testing.T) {
	for _, name := range []string{"0.4.6", "main-2026-07"} {
		t.Run(name, func(t *testing.T) {
			p, err := sglang.LookupProfile(name)
			if err != nil {
				t.Fatal(err)
			}
			errPath := filepath.Join(t.TempDir(), "stderr")
			stderr, err := os.Create(errPath)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { stderr.Close() })
			r := start(t, Config{Profile: p, Seed: 3, Stderr: stderr,
				Faults: []fault.Spec{{Kind: fault.WedgeScheduler, At: 10 * time.Second, For: time.Minute}}})
			r.waitState(t, StateReady)
			call(t, r.BaseURL(), "GET", "/v1/models", "")
			r.waitState(t, StateSchedulerWedged)
			out, err := os.ReadFile(r.stdout)
			if err != nil {
				t.Fatal(err)
			}
			errText, err := os.ReadFile(errPath)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if !strings.Contains(l, `HTTP/1.1" `) {
					t.Errorf("stdout has a line that is not an access line: %q", l)
				}
			}
			if !strings.Contains(string(out), `"GET /v1/models HTTP/1.1" 200 OK`) {
				t.Errorf("stdout lacks the access line of the /v1/models call:\n%s", out)
			}
			for _, want := range []string{"Load weight end.", "INFO:     Started server process [", "INFO:     Uvicorn running on ",
				"Prefill batch", "The server is fired up and ready to roll!"} {
				if !strings.Contains(string(errText), want) {
					t.Errorf("stderr lacks %q:\n%s", want, errText)
				}
			}
			if strings.Contains(string(errText), `HTTP/1.1" `) {
				t.Errorf("an access line reached stderr:\n%s", errText)
			}
		})
	}
}
