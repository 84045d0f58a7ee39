package scenarios

import (
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

func compileNamed(t *testing.T, name string, seed int64) *Compiled {
	t.Helper()
	s, err := Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compile(s, seed)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestFoundingArithmetic pins incident 1's numbers through sglang/memory.go.
func TestFoundingArithmetic(t *testing.T) {
	oom := compileNamed(t, "hicache-300-host-oom", 1)
	m := oom.Memory
	if m == nil || len(m.Ranks) != 8 {
		t.Fatalf("want a host check over 8 ranks, got %+v", m)
	}
	if !m.Passed() {
		t.Errorf("old per-rank check: every rank must pass 300 GB against 449 GiB, got %+v", m.Ranks)
	}
	if !m.HostOOM || m.TotalRequested < 2400*sglang.GB || m.Pinned <= m.Limit {
		t.Errorf("300 GB x 8 must oversubscribe 449 GiB: requested %d, pinned %d, limit %d", m.TotalRequested, m.Pinned, m.Limit)
	}
	fits := compileNamed(t, "hicache-48-cold-start", 1).Memory
	if fits == nil || !fits.Fits() || fits.TotalRequested > fits.Limit-sglang.HiCacheReserve {
		t.Errorf("48 GB x 8 must fit with the 10 GiB reserve: %+v", fits)
	}
	div := compileNamed(t, "hicache-300-divided-check", 1).Memory
	if div == nil || div.Passed() || div.Rule != sglang.CheckDividedPerHost {
		t.Errorf("the divided check must refuse 300 GB per rank: %+v", div)
	}
	if want := "Requesting 300.00 GB but only have 58.92 GB free."; !strings.Contains(div.Ranks[0].Message, want) {
		t.Errorf("ValueError text %q lacks %q", div.Ranks[0].Message, want)
	}
	// The device pool: ~116,000 tokens across the 8 GPUs without HiCache (incidents.md).
	if e, _, ok := oom.Timeline.FirstKind(sglang.KindLimits); !ok {
		t.Error("no limits line")
	} else if n, _ := e.Event.Fields.Int("max_total_num_tokens"); n < 110_000 || n > 122_000 {
		t.Errorf("max_total_num_tokens = %d, want about 116000", n)
	}
}

// TestTimelineShape checks the startup order the reference fixes.
func TestTimelineShape(t *testing.T) {
	c := compileNamed(t, "hicache-48-cold-start", 7)
	var kinds []sglang.Kind
	counts := map[sglang.Kind]int{}
	for _, e := range c.Timeline.Entries {
		if e.Op == replay.OpLog {
			if len(kinds) == 0 || kinds[len(kinds)-1] != e.Event.Kind {
				kinds = append(kinds, e.Event.Kind)
			}
			counts[e.Event.Kind]++
			if (e.Event.Kind == sglang.KindShardProgress || e.Event.Kind == sglang.KindCGProgress) && !e.Event.Time.IsZero() {
				t.Errorf("tqdm line %v has a header", e.Event.Kind)
			}
		}
	}
	order := []sglang.Kind{sglang.KindServerArgs, sglang.KindDistInitBegin, sglang.KindLoadBegin, sglang.KindShardProgress,
		sglang.KindLoadEnd, sglang.KindKVAlloc, sglang.KindCGBegin, sglang.KindCGProgress, sglang.KindCGEnd, sglang.KindLimits,
		sglang.KindHiCacheAlloc, sglang.KindUvicornStarted, sglang.KindUvicornRunning}
	i := 0
	for _, k := range kinds {
		if i < len(order) && k == order[i] {
			i++
		}
	}
	if i != len(order) {
		t.Errorf("startup order broken at %v; got %v", order[i], kinds)
	}
	for _, k := range []sglang.Kind{sglang.KindDistInitBegin, sglang.KindLoadEnd, sglang.KindCGEnd, sglang.KindHiCacheAlloc} {
		if counts[k] != 8 {
			t.Errorf("%v printed %d times, want once per rank (8)", k, counts[k])
		}
	}
	if counts[sglang.KindShardProgress] != 65 || counts[sglang.KindLimits] != 1 {
		t.Errorf("shard lines %d (want 65), limits %d (want 1)", counts[sglang.KindShardProgress], counts[sglang.KindLimits])
	}
	// Capture bars go through batch sizes in descending order.
	last := 1 << 30
	for _, e := range c.Timeline.Entries {
		if e.Event.Kind == sglang.KindCGProgress {
			bs, _ := e.Event.Fields.Int("bs")
			if bs > last {
				t.Fatalf("capture bar bs %d after %d: not descending", bs, last)
			}
			last = bs
		}
	}
}

// TestSeedDeterminism: one seed, one timeline; another seed, other jitter.
func TestSeedDeterminism(t *testing.T) {
	a, b := compileNamed(t, "s0-happy-era-c", 42), compileNamed(t, "s0-happy-era-c", 42)
	if len(a.Timeline.Entries) != len(b.Timeline.Entries) {
		t.Fatal("same seed, different timelines")
	}
	for i := range a.Timeline.Entries {
		if a.Timeline.Entries[i].At != b.Timeline.Entries[i].At || sglang.Render(a.Timeline.Entries[i].Event, a.Profile) != sglang.Render(b.Timeline.Entries[i].Event, b.Profile) {
			t.Fatalf("entry %d differs for the same seed", i)
		}
	}
	if c := compileNamed(t, "s0-happy-era-c", 43); c.Timeline.Duration() == a.Timeline.Duration() {
		t.Error("a different seed gave the same duration: jitter is not seeded")
	}
}

// TestEndings checks each failure path's signature line and exit.
func TestEndings(t *testing.T) {
	cases := []struct {
		name string
		kind sglang.Kind
		exit int // -1: no exit
	}{
		{"hicache-300-host-oom", sglang.KindRankDead, 1},
		{"hicache-300-divided-check", sglang.KindHostMemError, 137},
		{"relaunch-gpu-held", sglang.KindCUDAOOM, 137},
		{"cuda-oom-capture", sglang.KindCUDAOOM, 137},
		{"sm120-kernel-image", sglang.KindException, 137},
		{"nccl-init-error", sglang.KindNCCLError, 137},
		{"s5-fatal-but-alive", sglang.KindNCCLError, -1},
		{"errno98-after-load", sglang.KindErrno98, 137},
		{"watchdog-warmup-hang", sglang.KindWatchdog, 137},
		{"crash-running-era-c", sglang.KindSubprocessCrash, 137},
		{"s18-hicache-cgroup-oom", sglang.KindHiCacheAlloc, 137},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := compileNamed(t, tc.name, 1)
			if _, _, ok := c.Timeline.FirstKind(tc.kind); !ok {
				t.Errorf("no %v line", tc.kind)
			}
			e, _, ok := c.Timeline.FirstOp(replay.OpExit)
			switch {
			case tc.exit < 0 && ok:
				t.Errorf("exited with %d, want the process to stay alive", e.Code)
			case tc.exit >= 0 && (!ok || e.Code != tc.exit):
				t.Errorf("exit %v (found %v), want %d", e.Code, ok, tc.exit)
			}
		})
	}
	if _, _, ok := compileNamed(t, "crash-running-era-b-zombie", 1).Timeline.FirstOp(replay.OpSchedulerDead); !ok {
		t.Error("era B crash must leave a zombie (OpSchedulerDead), not a teardown")
	}
}

// TestReleaseEndings: what the launcher prints on its way out depends on the release.
func TestReleaseEndings(t *testing.T) {
	lines := func(c *Compiled) map[string]bool {
		seen := map[string]bool{}
		for _, e := range c.Timeline.Entries {
			if e.Op == replay.OpLog {
				seen[sglang.Render(e.Event, c.Profile)] = true
			}
		}
		return seen
	}
	for _, tc := range []struct {
		scenario, profile string
		line              string
		want              bool
	}{
		// From 0.5.9 the lifespan's finally joins the warmup thread: "complete" never prints.
		{"errno98-after-load", "0.5.2", "INFO:     Application shutdown complete.", true},
		{"errno98-after-load", "0.5.9", "INFO:     Application shutdown complete.", false},
		{"errno98-after-load", "0.5.9", "INFO:     Waiting for application shutdown.", true},
		// 0.5.10's _wait_for_scheduler_ready raises a RuntimeError instead of logging the death.
		{"hicache-300-host-oom", "0.5.9", "Rank 0 scheduler is dead. Please check if there are relevant logs.", true},
		{"hicache-300-host-oom", "0.5.10", "Rank 0 scheduler is dead. Please check if there are relevant logs.", false},
		{"hicache-300-host-oom", "0.5.10", "RuntimeError: Rank 0 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", true},
	} {
		s, err := Lookup(tc.scenario)
		if err != nil {
			t.Fatal(err)
		}
		s.Profile = tc.profile
		c, err := Compile(s, 1)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for l := range lines(c) {
			if strings.HasSuffix(l, tc.line) {
				found = true
			}
		}
		if found != tc.want {
			t.Errorf("%s at %s: line %q printed %v, want %v", tc.scenario, tc.profile, tc.line, found, tc.want)
		}
	}
}
