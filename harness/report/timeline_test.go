package report

import (
	"reflect"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"

	"github.com/incident-replay/incident-replay/truth"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func logRec(at float64, kind string) fakeserver.Record {
	return fakeserver.Record{Type: fakeserver.RecLog, At: sec(at), Kind: kind}
}

func stateRec(at float64, state string) fakeserver.Record {
	return fakeserver.Record{Type: fakeserver.RecState, At: sec(at), State: state}
}

func deadRec(at float64, code int) fakeserver.Record {
	r := stateRec(at, fakeserver.StateDead)
	r.Code = &code
	return r
}

func reqRec(at float64, route string, status int, outcome string) fakeserver.Record {
	return fakeserver.Record{Type: fakeserver.RecRequest, At: sec(at), Route: route, Status: status, Outcome: outcome, Latency: sec(1), Client: "127.0.0.1:5"}
}

// coldStart is hicache-48-cold-start's journal shape: 8 ranks print each phase line.
func coldStart(end []fakeserver.Record) []fakeserver.Record {
	var j []fakeserver.Record
	for range 8 {
		j = append(j, logRec(6, "load_begin"))
	}
	for range 8 {
		j = append(j, logRec(583, "load_end"), logRec(583, "cg_begin"))
	}
	for range 8 {
		j = append(j, logRec(627, "cg_end"), logRec(627, "hicache_alloc"))
	}
	return append(j, end...)
}

func TestBands(t *testing.T) {
	b := func(p Phase, from, to float64) Band { return Band{Phase: p, From: sec(from), To: sec(to)} }
	tests := []struct {
		name    string
		journal []fakeserver.Record
		want    []Band
		stopped time.Duration
	}{
		{
			name: "cold start with HiCache, ready, stopped by the harness",
			journal: coldStart([]fakeserver.Record{
				stateRec(632, fakeserver.StateBound), stateRec(633, fakeserver.StateReady), stateRec(694, fakeserver.StateStopped),
			}),
			want: []Band{b(PhaseInit, 0, 6), b(PhaseLoad, 6, 583), b(PhaseCapture, 583, 627), b(PhaseHiCache, 627, 632),
				b(PhaseStarting, 632, 633), b(PhaseReady, 633, 694)},
			stopped: sec(694),
		},
		{
			name:    "host OOM while pinning HiCache",
			journal: coldStart([]fakeserver.Record{logRec(632, "rank_dead"), deadRec(633, -9)}),
			want: []Band{b(PhaseInit, 0, 6), b(PhaseLoad, 6, 583), b(PhaseCapture, 583, 627), b(PhaseHiCache, 627, 633),
				b(PhaseDead, 633, 633)},
		},
		{
			name: "flap: unhealthy then healthy again",
			journal: []fakeserver.Record{logRec(6, "load_begin"), logRec(10, "load_end"), stateRec(23, fakeserver.StateBound),
				stateRec(24, fakeserver.StateReady), stateRec(40, fakeserver.StateUnhealthy), stateRec(50, fakeserver.StateHealthy),
				deadRec(70, 1), logRec(71, "exit_code")},
			want: []Band{b(PhaseInit, 0, 6), b(PhaseLoad, 6, 10), b(PhaseInit, 10, 23), b(PhaseStarting, 23, 24), b(PhaseReady, 24, 40),
				b(PhaseUnhealthy, 40, 50), b(PhaseReady, 50, 70), b(PhaseDead, 70, 71)},
		},
		{
			name: "bounded wedge returns to ready",
			journal: []fakeserver.Record{stateRec(5, fakeserver.StateBound), stateRec(6, fakeserver.StateReady),
				stateRec(20, fakeserver.StateWedged), stateRec(30, fakeserver.StateUnwedged), stateRec(40, fakeserver.StateStopped)},
			want:    []Band{b(PhaseInit, 0, 5), b(PhaseStarting, 5, 6), b(PhaseReady, 6, 20), b(PhaseWedged, 20, 30), b(PhaseReady, 30, 40)},
			stopped: sec(40),
		},
		{
			name: "bound before loading: state wins over later log phases",
			journal: []fakeserver.Record{stateRec(1, fakeserver.StateBound), logRec(2, "load_begin"), logRec(9, "load_end"),
				stateRec(12, fakeserver.StateReady), stateRec(15, fakeserver.StateStopped)},
			want:    []Band{b(PhaseInit, 0, 1), b(PhaseStarting, 1, 12), b(PhaseReady, 12, 15)},
			stopped: sec(15),
		},
		{
			name:    "port taken",
			journal: []fakeserver.Record{logRec(3, "errno98"), stateRec(3, fakeserver.StateBindFailed), deadRec(3, 1), logRec(4, "exit_code")},
			want:    []Band{b(PhaseInit, 0, 3), b(PhaseDead, 3, 4)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stopped := bands(tt.journal)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("bands:\n got %v\nwant %v", got, tt.want)
			}
			if stopped != tt.stopped {
				t.Errorf("stopped = %v, want %v", stopped, tt.stopped)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		status  int
		outcome string
		want    ProbeClass
	}{
		{200, "", Probe2xx}, {204, "", Probe2xx}, {307, "", Probe3xx4xx}, {401, "", Probe3xx4xx},
		{503, "", Probe5xx}, {500, "", Probe5xx}, {0, "reset", ProbeNoReply}, {200, "abandoned", ProbeNoReply},
	}
	for _, tt := range tests {
		if got := classify(reqRec(1, "/health", tt.status, tt.outcome)); got != tt.want {
			t.Errorf("classify(%d, %q) = %v, want %v", tt.status, tt.outcome, got, tt.want)
		}
	}
}

// foundingResult is the founding incident's shape: the loop probes a server that is ready at
// 633 s and gives up at 700 s; every probe after 633 s is an ignored 200.
func foundingResult() harness.Result {
	start := time.Date(2026, 2, 24, 11, 18, 0, 0, time.UTC)
	var end []fakeserver.Record
	end = append(end, stateRec(632, fakeserver.StateBound), reqRec(632.5, "/health", 503, ""), stateRec(633, fakeserver.StateReady))
	for at := 635.0; at < 700; at += 5 {
		end = append(end, reqRec(at, "/health", 200, ""))
	}
	end = append(end, stateRec(702, fakeserver.StateStopped))
	return harness.Result{
		Scenario: "hicache-48-cold-start", Tool: "founding-loop-1", Speed: 60, Wall: 12 * time.Second,
		Verdict: harness.MissedReady, Expect: harness.MissedReady, Reason: "gave up at 11m40s although the server had been ready since 10m33s",
		Claim: harness.Claim{Outcome: harness.ClaimFailed, At: start.Add(sec(700))},
		Start: start, Truth: truth.Truth{Bound: truth.At(sec(632)), Ready: truth.At(sec(633)), Dead: truth.At(sec(900))},
		Limit:   30 * time.Minute,
		Journal: coldStart(end),
	}
}

func TestNewTimeline(t *testing.T) {
	r := foundingResult()
	tl := NewTimeline(r, r.Journal)
	if tl.ClaimAt != sec(700) {
		t.Errorf("ClaimAt = %v, want 700s", tl.ClaimAt)
	}
	if len(tl.Probes) != 14 {
		t.Fatalf("%d probes, want 14", len(tl.Probes))
	}
	if tl.Ignored != 13 {
		t.Errorf("Ignored = %d, want the 13 200s after t_ready", tl.Ignored)
	}
	want := []Mark{
		{Name: "bound", At: sec(632), Label: "bound 10m32s"},
		{Name: "ready", At: sec(633), Label: "ready 10m33s"},
		{Name: "dead", At: sec(900), Label: "dead 15m00s, wedged (predicted)", Predicted: true},
	}
	if !reflect.DeepEqual(tl.Marks, want) {
		t.Errorf("marks:\n got %+v\nwant %+v", tl.Marks, want)
	}
	if tl.Duration != sec(900) {
		t.Errorf("Duration = %v, want the predicted death at 900s", tl.Duration)
	}

	// A hung tool has no claim time: the picture puts it at the harness limit.
	r.Claim = harness.Claim{Outcome: harness.NoClaim}
	r.Verdict = harness.Hung
	if tl := NewTimeline(r, r.Journal); tl.ClaimAt != 30*time.Minute || tl.Ignored != 14-1 {
		t.Errorf("hung: ClaimAt = %v Ignored = %d", tl.ClaimAt, tl.Ignored)
	}
	// A tool that claimed ready on time ignored nothing.
	r.Claim = harness.Claim{Outcome: harness.ClaimReady, At: r.Start.Add(sec(636))}
	r.Verdict = harness.ReadyOK
	if tl := NewTimeline(r, r.Journal); tl.Ignored != 0 {
		t.Errorf("ready-ok: Ignored = %d, want 0", tl.Ignored)
	}
}

// A wedged server writes nothing more, so its journal ends at the wedge; the band still runs
// to the harness limit, where the hung tool was killed and the server stopped.
func TestWedgeRunsToTheEndOfTheRun(t *testing.T) {
	start := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	r := harness.Result{
		Scenario: "s3-hang", Tool: "founding-loop-1", Verdict: harness.Hung, Limit: 100 * time.Second,
		Claim: harness.Claim{Outcome: harness.NoClaim},
		Start: start, Truth: truth.Truth{Bound: truth.At(sec(5)), Dead: truth.At(sec(6))},
		Journal: []fakeserver.Record{stateRec(5, fakeserver.StateBound), stateRec(6, fakeserver.StateWedged)},
	}
	tl := NewTimeline(r, r.Journal)
	last := tl.Bands[len(tl.Bands)-1]
	if last.Phase != PhaseWedged || last.To != 100*time.Second {
		t.Errorf("last band = %+v, want wedged to the 100s limit", last)
	}
	if tl.ClaimAt != 100*time.Second || tl.Duration != 100*time.Second {
		t.Errorf("ClaimAt %v Duration %v, want both at the limit", tl.ClaimAt, tl.Duration)
	}
}
