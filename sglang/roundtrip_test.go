package sglang

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// testSeed drives every random choice in this package's tests.
const testSeed = 20260224

// genEvent builds a random event of kind k the way a startup model would, through the
// constructors and the profile. headless kinds never carry a header.
func genEvent(r *rand.Rand, p Profile, k Kind) (e Event, headless bool) {
	f := func(lo, hi float64) float64 { return lo + r.Float64()*(hi-lo) }
	d := func(max int) time.Duration { return time.Duration(r.IntN(max)) * time.Second }
	switch k {
	case KindUnknown:
		return Event{Kind: k, Text: fmt.Sprintf("zz custom message %d", r.IntN(1000))}, false
	case KindBlank:
		return Event{Kind: k}, true
	case KindServerArgs:
		a := DefaultServerArgs()
		a.ModelPath = "org/model-" + fmt.Sprint(r.IntN(99))
		a.TPSize = 1 << r.IntN(4)
		return ServerArgsLine(a), false
	case KindLaunchWarning:
		return ServeWarning("/usr/lib/python3/sglang/launch_server.py", 1+r.IntN(90)), true
	case KindDistInitBegin:
		return DistInitBegin(), false
	case KindDistInitEnd:
		return DistInitEnd(p, d(30), f(0, 4)), false
	case KindLoadBegin:
		return LoadBegin(p, f(10, 140)), false
	case KindWeightsFormat:
		return WeightsFormat("*.safetensors"), false
	case KindShardProgress:
		total := 1 + r.IntN(64)
		return ShardProgress(r.IntN(total+1), total, d(300), d(300)), true
	case KindLoadEnd:
		return LoadEnd(p, "Qwen2ForCausalLM", "torch.bfloat16", d(300), f(10, 140), f(1, 80)), false
	case KindKVDtype:
		return KVDtype("torch.float8_e4m3fn"), false
	case KindKVAvailable:
		return KVAvailable(f(1, 80)), false
	case KindKVAlloc:
		return KVAlloc(p, "torch.bfloat16", r.IntN(1_000_000), f(1, 60), f(1, 60)), false
	case KindMemPoolEnd:
		return MemPoolEnd(f(1, 80)), false
	case KindCGBegin:
		return CGBegin(p, f(1, 80), []int{1, 2, 4, 8, 16 * (1 + r.IntN(16))}), false
	case KindCGBatchSizes:
		return CGBatchSizes([]int{1, 2, 4, 8, 16 * (1 + r.IntN(16))}), false
	case KindCGProgress:
		total := 1 + r.IntN(40)
		return CGProgress(p, 1+r.IntN(512), r.IntN(total+1), total, f(1, 80), d(60), d(60)), true
	case KindCGEnd:
		return CGEnd(p, time.Duration(f(1, 90)*float64(time.Second)), f(0, 3), f(1, 80)), false
	case KindLimits:
		return Limits(p, LimitsInfo{r.IntN(1e6), 8192, 16384, 2048, 1 << (10 + r.IntN(8)), f(1, 20)}), false
	case KindHiCacheAlloc:
		return HiCacheAlloc(float64(r.IntN(400))), false
	case KindHostMemError:
		return HostMemError(f(10, 500), f(-5, 400)), true
	case KindStartupTimings:
		return Event{Kind: k, Text: fmt.Sprintf("load_weight=%.2f, tokenizer_e2e=%.2f", f(1, 200), f(1, 300))}, false
	case KindUvicornStarted:
		return UvicornStarted(1 + r.IntN(1<<22)), false
	case KindUvicornWaiting:
		return UvicornWaiting(), false
	case KindUvicornComplete:
		return UvicornComplete(), false
	case KindUvicornRunning:
		return UvicornRunning("0.0.0.0", 1024+r.IntN(60000)), false
	case KindUvicornShutdown:
		return UvicornShutdown(r.IntN(2) == 0), false
	case KindAccess:
		paths := []string{"/health", "/health_generate", "/v1/models", p.WarmupInfoPath, "/generate"}
		codes := []int{200, 503, 404, 400}
		return Access(fmt.Sprintf("127.0.0.1:%d", 30000+r.IntN(30000)), "GET", paths[r.IntN(len(paths))], codes[r.IntN(len(codes))]), false
	case KindDeprecated:
		return Deprecated("/get_model_info", "/model_info"), false
	case KindFreezeGC:
		return FreezeGC("Freezing GC in Scheduler process. gen0: 48->0"), false
	case KindReady:
		return Ready(), false
	case KindPrefill:
		return Prefill(p, PrefillStats{Iter: r.IntN(3) * r.IntN(100), NewSeq: 1 + r.IntN(8), NewToken: r.IntN(9000), CachedToken: r.IntN(100),
			CacheHitRate: f(0, 100), TokenUsage: f(0, 1), RunningReq: r.IntN(50), QueueReq: r.IntN(9), PendingToken: r.IntN(2048),
			CUDAGraph: r.IntN(2) == 0, InputThroughput: f(0, 9000)}), false
	case KindDecode:
		return Decode(p, DecodeStats{Iter: r.IntN(3) * r.IntN(100), RunningReq: r.IntN(50), Token: r.IntN(1e5), TokenUsage: f(0, 1),
			CUDAGraph: r.IntN(2) == 0, GenThroughput: f(0, 900), QueueReq: r.IntN(9)}), false
	case KindHealthFailed:
		base := time.Date(2026, 2, 24, 11, 0, 0, 0, time.UTC)
		return HealthFailed(20, base.Add(d(3600)), base.Add(d(3600))), false
	case KindSchedulerExc:
		return SchedulerException(), false
	case KindTracebackStart:
		return TracebackStart(), false
	case KindTraceback:
		return TracebackFrame("/opt/sglang/python/sglang/srt/managers/scheduler.py", r.IntN(3000), "run_scheduler_process", "")[0], true
	case KindException:
		return Exception("RuntimeError", fmt.Sprintf("Not enough memory. Please try to increase --mem-fraction-static. (%d)", r.IntN(9))), true
	case KindSigquitChild:
		return SigquitChild(p), false
	case KindSigquitReceived:
		return SigquitReceived(3, "<frame at 0x7f>"), false
	case KindSubprocessCrash:
		return SubprocessCrash("scheduler_0", 1+r.IntN(99999), -9), false
	case KindRankDead:
		return RankDead(r.IntN(8)), false
	case KindExitCode:
		return ExitCode(-r.IntN(10)), false
	case KindWatchdog:
		return Watchdog(p, time.Duration(1+r.IntN(1800))*time.Second), false
	case KindCUDAOOM:
		return CUDAOOM("torch.OutOfMemoryError", "", f(1, 1000), r.IntN(8), f(20, 140), f(0, 100)), true
	case KindInitFailed:
		return InitFailed("warmup error: Traceback (most recent call last):"), false
	case KindErrno98:
		return Errno98("0.0.0.0", 1024+r.IntN(60000)), false
	case KindNCCLError:
		return NCCLError("unhandled system error"), true
	case KindKilled:
		return Killed(), true
	case KindInfo:
		e, _ := knownInfo(fmt.Sprintf("Registering %d cuda graph addresses", r.IntN(9999)))
		return e, false
	case KindForeign:
		return foreign("glog", fmt.Sprintf("W0412 07:33:05.218000 %d torch/utils/cpp_extension.py:2356] arch list not set", r.IntN(9999))), true
	}
	panic("no generator for " + k.String())
}

func genHeader(r *rand.Rand, p Profile) (time.Time, []Rank) {
	t := time.Date(2024+r.IntN(3), time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60), 0, time.UTC)
	switch r.IntN(5) {
	case 0:
		return t, p.SingleGPURanks()
	case 1:
		return t, []Rank{{"TP", r.IntN(8)}}
	case 2:
		return t, []Rank{{"DP", r.IntN(8)}, {"TP", r.IntN(8)}}
	case 3:
		return t, []Rank{{"PP", r.IntN(2)}, {"ATTN_CP", r.IntN(8)}, {"TP", r.IntN(8)}, {"EP", r.IntN(8)}}
	}
	return t, []Rank{{"DisaggregationMode.IGPUDECODE", -1}, {"TP", r.IntN(8)}}
}

// TestRoundTrip: for every kind and profile, Parse(Render(e)) yields e.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(testSeed, 1))
	for _, p := range Profiles() {
		for _, k := range Kinds() {
			for i := 0; i < 20; i++ {
				e, headless := genEvent(r, p, k)
				if !headless {
					e.Time, e.Ranks = genHeader(r, p)
				}
				line := Render(e, p)
				ps := NewParser()
				if k == KindTraceback {
					ps.Feed("Traceback (most recent call last):")
				}
				got := ps.Feed(line)
				if len(got) != 1 {
					t.Fatalf("%s/%s: %q parsed into %d lines", p.Name, k, line, len(got))
				}
				if !reflect.DeepEqual(got[0].Event, e) {
					t.Fatalf("%s/%s: round trip of %q\n got %#v\nwant %#v", p.Name, k, line, got[0].Event, e)
				}
				if again := Render(got[0].Event, ProfileFor(EraA)); again != line {
					t.Fatalf("%s/%s: re-render under another profile %q, want %q", p.Name, k, again, line)
				}
			}
		}
	}
}

// TestProfilesDiffer checks that the eras really print differently where the reference says.
func TestProfilesDiffer(t *testing.T) {
	a, b, c := ProfileFor(EraA), ProfileFor(EraB), ProfileFor(EraC)
	old, late := mustProfile(t, "0.3.6"), mustProfile(t, "main-2026-07")
	st := PrefillStats{NewSeq: 1, NewToken: 1, InputThroughput: 0.30}
	cases := []struct {
		name string
		p    Profile
		e    Event
		want string
	}{
		{"A prefill", a, Prefill(a, st), "Prefill batch. #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0"},
		{"C prefill (incident)", c, Prefill(c, st), "Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, input throughput (token/s): 0.30, cuda graph: False"},
		{"B decode trailing comma", b, Decode(b, DecodeStats{RunningReq: 1, Token: 48, CUDAGraph: true, GenThroughput: 1.88}), "Decode batch. #running-req: 1, #token: 48, token usage: 0.00, cuda graph: True, gen throughput (token/s): 1.88, #queue-req: 0, "},
		{"A-2024 KV", old, KVAlloc(old, "x", 5, 30.11, 30.11), "KV Cache is allocated. K size: 30.11 GB, V size: 30.11 GB"},
		{"C-late KV", late, KVAlloc(late, "torch.bfloat16", 387968, 5.92, 5.92), "KV Cache is allocated. dtype: torch.bfloat16, #tokens: 387968, K size: 5.92 GB, V size: 5.92 GB"},
		{"A-2024 sigquit typo", old, SigquitChild(old), "Received sigquit from a child proces."},
		{"C watchdog", c, Watchdog(c, 300*time.Second), "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"},
		{"A-2024 watchdog", a, Watchdog(a, 300*time.Second), "Watchdog timeout (self.watchdog_timeout=300)"},
		{"A-2024 CG bar", old, CGProgress(old, 8, 19, 19, 0, 5*time.Second, 0), "100%|██████████| 19/19 [00:05<00:00,  3.80it/s]"},
		{"B CG bar", b, CGProgress(b, 64, 5, 12, 30.02, 2*time.Second, 3*time.Second), "Capturing batches (bs=64 avail_mem=30.02 GB):  41%|████▏     | 5/12 [00:02<00:03,  2.50it/s]"},
		{"shards first redraw", a, ShardProgress(0, 4, 0, 0), "Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]"},
		{"shards", a, ShardProgress(1, 4, 3*time.Second, 9*time.Second), "Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:03<00:09,  3.00s/it]"},
		{"access", c, Access("127.0.0.1:45890", "GET", "/health", 200), `INFO:     127.0.0.1:45890 - "GET /health HTTP/1.1" 200 OK`},
		{"header", c, func() Event {
			e := Ready()
			e.Time = time.Date(2026, 2, 24, 11, 39, 23, 0, time.UTC)
			e.Ranks = []Rank{{"DP", 1}, {"TP", 1}}
			return e
		}(), "[2026-02-24 11:39:23 DP1 TP1] The server is fired up and ready to roll!"},
	}
	for _, tc := range cases {
		if got := Render(tc.e, tc.p); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
	if a.WarmupInfoPath == c.WarmupInfoPath || a.HealthGatedOnStatus || !b.HealthGatedOnStatus || c.TeardownOnChildCrash || !late.TeardownOnChildCrash {
		t.Errorf("endpoint semantics not distinct: A %+v C %+v", a, c)
	}
}

func TestLookupProfile(t *testing.T) {
	for _, tc := range []struct {
		in   string
		era  Era
		fail bool
		name string
	}{{"A", EraA, false, "0.4.6"}, {"b", EraB, false, "0.5.2"}, {"C", EraC, false, "0.5.9"}, {"0.5.9", EraC, false, "0.5.9"},
		{"v0.4.6", EraA, false, "0.4.6"}, {"0.5.10", EraC, false, "0.5.10"}, {"v0.5.15", EraC, false, "main-2026-07"},
		{"C-late", EraC, false, "main-2026-07"}, {"MAIN-2026-07", EraC, false, "main-2026-07"}, {"A-2024", EraA, false, "0.3.6"},
		{"D", 0, true, ""}, {"", 0, true, ""}, {"0.5", 0, true, ""}} {
		p, err := LookupProfile(tc.in)
		if tc.fail {
			if err == nil || !strings.Contains(err.Error(), "use one of") {
				t.Errorf("LookupProfile(%q) = %v, want a helpful error", tc.in, err)
			}
			continue
		}
		if err != nil || p.Era != tc.era || p.Name != tc.name {
			t.Errorf("LookupProfile(%q) = %s era %v, %v; want %s era %v", tc.in, p.Name, p.Era, err, tc.name, tc.era)
		}
	}
	var e Era
	if err := e.UnmarshalText([]byte("c")); err != nil || e != EraC {
		t.Errorf("UnmarshalText c: %v %v", e, err)
	}
	if b, _ := EraB.MarshalText(); string(b) != "B" {
		t.Errorf("MarshalText = %q", b)
	}
	if err := e.UnmarshalText([]byte("Z")); err == nil {
		t.Error("era Z accepted")
	}
}

func TestDetectEra(t *testing.T) {
	for _, tc := range []struct {
		file string
		era  Era
	}{{"incidents.log", EraC}, {"kinds.log", EraC}} {
		lines := mustParseFile(t, "testdata/corpus/"+tc.file)
		if got, _ := DetectRelease(lines); got.Era != tc.era {
			t.Errorf("%s: era %v, want %v", tc.file, got.Era, tc.era)
		}
	}
	// Logs rendered by each era's profile are recognised as that era, with its field order.
	r := rand.New(rand.NewPCG(testSeed, 2))
	for _, era := range []Era{EraA, EraB, EraC} {
		p := ProfileFor(era)
		var lines []Line
		ps := NewParser()
		for _, k := range []Kind{KindServerArgs, KindLoadEnd, KindKVAlloc, KindPrefill, KindDecode} {
			e, _ := genEvent(r, p, k)
			e.Time, e.Ranks = genHeader(r, p)
			e.Ranks = p.SingleGPURanks()
			lines = append(lines, ps.Feed(Render(e, p))...)
		}
		got, _ := DetectRelease(lines)
		if got.Name != p.Name || !reflect.DeepEqual(got.PrefillFields, p.PrefillFields) || got.BatchSep != p.BatchSep {
			t.Errorf("era %v (%s) detected as %s (%v %q)", era, p.Name, got.Name, got.PrefillFields, got.BatchSep)
		}
	}
}

func mustProfile(t *testing.T, name string) Profile {
	t.Helper()
	p, err := LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func mustParseFile(t *testing.T, path string) []Line {
	t.Helper()
	in, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// TestEraGolden renders every kind with every profile into testdata/eras/<profile>.log (the
// checked-in reference of what each version prints) and parses the file back kind by kind.
func TestEraGolden(t *testing.T) {
	for i, p := range Profiles() {
		r := rand.New(rand.NewPCG(testSeed, uint64(10+i)))
		var b strings.Builder
		var kinds []Kind
		start := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
		for j, k := range Kinds() {
			e, headless := genEvent(r, p, k)
			if !headless {
				e.Time, e.Ranks = start.Add(time.Duration(j)*time.Second), p.SingleGPURanks()
			}
			if k == KindTraceback {
				b.WriteString(Render(TracebackStart(), p) + "\n")
				kinds = append(kinds, KindTracebackStart)
			}
			b.WriteString(Render(e, p) + "\n")
			kinds = append(kinds, k)
		}
		path := "testdata/eras/" + p.Name + ".log"
		if *update {
			if err := os.MkdirAll("testdata/eras", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if string(want) != b.String() {
			t.Errorf("%s: rendering differs from %s:\n%s", p.Name, path, diffLines(string(want), b.String()))
		}
		lines, err := Parse(strings.NewReader(string(want)))
		if err != nil {
			t.Fatal(err)
		}
		if len(lines) != len(kinds) {
			t.Fatalf("%s: %d lines, want %d", p.Name, len(lines), len(kinds))
		}
		for j, l := range lines {
			if l.Event.Kind != kinds[j] {
				t.Errorf("%s line %d: kind %v, want %v: %q", p.Name, j+1, l.Event.Kind, kinds[j], l.Raw)
			}
			checkLine(t, l)
		}
	}
}
