package fakeserver

import (
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

func mustProfile(t *testing.T, name string) sglang.Profile {
	t.Helper()
	p, err := sglang.LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exitAt waits (idle on the clock) for the process to exit and returns when and with what code.
func (c *vclient) exitAt(t *testing.T, r *testRun) (time.Duration, int) {
	t.Helper()
	vtime.IdleDuring(c.ctx, c.clk, func() {
		select {
		case <-r.Done():
		case <-time.After(10 * time.Second):
		}
	})
	code, ok := r.ExitCode()
	if !ok {
		t.Fatal("the process did not exit")
	}
	for _, rec := range mustJournal(t, r.Server) {
		if rec.Type == RecState && rec.State == StateDead {
			return rec.At, code
		}
	}
	t.Fatal("no dead record")
	return 0, 0
}

// SIGTERM as each release handles it on a ready, idle server (bound at 2 s, the warmup's
// generate at 3 s starts the tokenizer loop and its watchdog): the handler's line, /health
// during the drain, the watchdog's drain line at its next look, exit 137.
func TestSigtermDrain(t *testing.T) {
	const sigterm = "SIGTERM received. signum=None frame=None. Draining requests and shutting down..."
	cases := []struct {
		profile  string
		exit     time.Duration // the watchdog's first look after 10 s
		health   int           // GET /health at 11 s
		drain    string
		shutdown bool // the "during shutdown" line
	}{
		{"0.3.6", 63 * time.Second, 200, "Gracefully exiting... remaining number of requests 0", false},
		{"0.4.6", 13 * time.Second, 200, "Gracefully exiting... remaining number of requests 0", false},
		{"0.5.2", 13 * time.Second, 503, "Gracefully exiting... remaining number of requests 0", true},
		{"0.5.9", 13 * time.Second, 503, "Gracefully exiting... Remaining number of requests 0. Remaining requests remaining_rids=[].", true},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			clk := vtime.New(epoch, vtime.Options{})
			t.Cleanup(clk.Close)
			c := newVClient(t, clk)
			r := start(t, Config{Profile: mustProfile(t, tc.profile), Clock: clk, Seed: 2})
			c.sleepUntil(10*time.Second, epoch)
			r.Terminate()
			c.sleepUntil(11*time.Second, epoch)
			code, took, _ := c.do("GET", r.BaseURL()+"/health", 5*time.Second)
			if code != tc.health || (code == 503 && took != 0) {
				t.Errorf("/health during the drain: %d after %v, want %d (503 at once)", code, took, tc.health)
			}
			at, exit := c.exitAt(t, r)
			if at != tc.exit || exit != 137 {
				t.Errorf("exit %d at %v, want 137 at %v", exit, at, tc.exit)
			}
			logs := string(mustLogs(t, r.Server))
			for _, want := range []string{"[2026-02-19 16:30:10] " + sigterm, "] " + tc.drain + "\n"} {
				if !strings.Contains(logs, want) {
					t.Errorf("log lacks %q:\n%s", want, logs)
				}
			}
			if got := strings.Contains(logs, "Health check request received during shutdown. Returning 503."); got != tc.shutdown {
				t.Errorf("during-shutdown line printed: %v, want %v", got, tc.shutdown)
			}
		})
	}
}

// Before the tokenizer manager's loop exists (no generate yet) SIGTERM has its default
// action: exit 143 at once, nothing logged.
func TestSigtermBeforeFirstGenerate(t *testing.T) {
	for _, name := range []string{"0.4.6", "0.5.2", "0.5.9"} {
		t.Run(name, func(t *testing.T) {
			clk := vtime.New(epoch, vtime.Options{})
			t.Cleanup(clk.Close)
			c := newVClient(t, clk)
			r := start(t, Config{Profile: mustProfile(t, name), Clock: clk})
			c.sleepUntil(time.Second, epoch)
			r.Terminate()
			if at, code := c.exitAt(t, r); at != time.Second || code != ExitSIGTERM {
				t.Errorf("exit %d at %v, want 143 at 1s", code, at)
			}
			if logs := string(mustLogs(t, r.Server)); strings.Contains(logs, "SIGTERM") {
				t.Errorf("logged the signal without a handler:\n%s", logs)
			}
		})
	}
}

// The drain waits for requests in flight, here a health check whose client left while the
// scheduler hangs: "remaining 1" every 5 s until the check fails at 6 s + 20 s and sets
// UnHealthy; the watchdog's next look then exits without draining (0.5.2+).
func TestSigtermDrainWaitsThenUnhealthyExits(t *testing.T) {
	cases := []struct {
		profile, remaining, unhealthy string
	}{
		{"0.5.2", "Gracefully exiting... remaining number of requests 1",
			"Signal SIGTERM received while health check failed. Exiting... remaining number of requests: 0"},
		{"0.5.9", "Gracefully exiting... Remaining number of requests 1. Remaining requests remaining_rids=['HEALTH_CHECK_1771518606.0'].",
			"Signal SIGTERM received while health check failed. Force exiting."},
	}
	for _, tc := range cases {
		t.Run(tc.profile, func(t *testing.T) {
			clk := vtime.New(epoch, vtime.Options{})
			t.Cleanup(clk.Close)
			c := newVClient(t, clk)
			r := start(t, Config{Profile: mustProfile(t, tc.profile), Clock: clk,
				Faults: []fault.Spec{{Kind: fault.WedgeScheduler, At: 5 * time.Second}}})
			c.sleepUntil(6*time.Second, epoch)
			if code, _, _ := c.do("GET", r.BaseURL()+"/health", time.Second); code != 0 {
				t.Fatalf("a hung check answered %d", code)
			}
			c.sleepUntil(7*time.Second, epoch)
			r.Terminate()
			if at, code := c.exitAt(t, r); at != 28*time.Second || code != 137 {
				t.Errorf("exit %d at %v, want 137 at 28s (the first look after UnHealthy at 26 s)", code, at)
			}
			logs := string(mustLogs(t, r.Server))
			if n := strings.Count(logs, tc.remaining+"\n"); n != 4 {
				t.Errorf("%d drain lines %q, want 4 (8, 13, 18, 23 s):\n%s", n, tc.remaining, logs)
			}
			if !strings.Contains(logs, "[2026-02-19 16:30:28] "+tc.unhealthy+"\n") {
				t.Errorf("log lacks %q at 28 s:\n%s", tc.unhealthy, logs)
			}
		})
	}
}
