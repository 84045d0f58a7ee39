package sglang

// Phase is a stage of SGLang's startup, in the order a launch passes through them.
type Phase uint8

// Startup phases in the order SGLang goes through them.
const (
	PhaseStarting  Phase = iota // spawned: server_args and launch warnings, nothing else yet
	PhaseDistInit               // torch distributed init
	PhaseLoading                // weight load (shards n/m)
	PhaseKVPool                 // KV cache allocation
	PhaseCUDAGraph              // CUDA graph capture (bs, %)
	PhaseHiCache                // pinning the HiCache host pool
	PhaseHTTP                   // uvicorn starting; the port is about to be bound
	PhaseWarmup                 // port bound, /health 503 until the warmup request returns
	PhaseReady                  // the ready line: the warmup request returned
	numPhases
)

var phaseNames = [numPhases]string{
	"starting", "dist_init", "loading", "kv_pool", "cuda_graph", "hicache", "http", "warmup", "ready",
}

func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return "phase?"
}

// MarshalText writes the phase's stable name.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// Phases lists every phase in startup order.
func Phases() []Phase {
	out := make([]Phase, numPhases)
	for i := range out {
		out[i] = Phase(i)
	}
	return out
}

// ParsePhase looks a phase up by its name.
func ParsePhase(name string) (Phase, bool) {
	for i, n := range phaseNames {
		if n == name {
			return Phase(i), true
		}
	}
	return 0, false
}

// Failure is how much a line kind says the launch has failed.
type Failure uint8

const (
	// NotFailure lines are normal output.
	NotFailure Failure = iota
	// Survivable lines are failure signatures that a server can print and go on serving: a
	// traceback that is caught ("Ignoring mcp import error"), a health check that timed out.
	Survivable
	// Fatal lines are never printed by a server that goes on to serve.
	Fatal
)

// Stage is what one line kind says about startup.
type Stage struct {
	Phase   Phase // the phase the line proves the server has reached (when InPhase)
	InPhase bool  // the line is startup progress
	// Opens: the line can be the first of its phase. End lines (load end, capture end, the
	// limits line, uvicorn's own waiting and complete lines) only follow a phase's start.
	Opens   bool
	Failure Failure
}

// stages is the one table of kind → startup meaning.
var stages = func() [numKinds]Stage {
	var t [numKinds]Stage
	in := func(p Phase, opens bool, ks ...Kind) {
		for _, k := range ks {
			t[k] = Stage{Phase: p, InPhase: true, Opens: opens}
		}
	}
	in(PhaseStarting, true, KindServerArgs, KindLaunchWarning)
	in(PhaseDistInit, true, KindDistInitBegin)
	in(PhaseDistInit, false, KindDistInitEnd)
	in(PhaseLoading, true, KindLoadBegin, KindWeightsFormat, KindShardProgress)
	in(PhaseLoading, false, KindLoadEnd)
	in(PhaseKVPool, true, KindKVDtype, KindKVAvailable, KindKVAlloc)
	in(PhaseKVPool, false, KindMemPoolEnd)
	in(PhaseCUDAGraph, true, KindCGBegin, KindCGBatchSizes, KindCGProgress)
	in(PhaseCUDAGraph, false, KindCGEnd, KindLimits)
	in(PhaseHiCache, true, KindHiCacheAlloc)
	in(PhaseHTTP, true, KindStartupTimings, KindUvicornStarted)
	in(PhaseHTTP, false, KindUvicornWaiting, KindUvicornComplete)
	in(PhaseWarmup, true, KindUvicornRunning)
	in(PhaseReady, true, KindReady)
	for _, k := range []Kind{KindTracebackStart, KindException, KindHealthFailed} {
		t[k].Failure = Survivable
	}
	for _, k := range []Kind{KindHostMemError, KindSchedulerExc, KindSigquitChild, KindSigquitReceived,
		KindSubprocessCrash, KindRankDead, KindExitCode, KindCUDAOOM, KindInitFailed, KindErrno98,
		KindNCCLError, KindKilled, KindWatchdog} {
		t[k].Failure = Fatal
	}
	return t
}()

// StageOf is what a line of kind k says about startup.
func StageOf(k Kind) Stage {
	if k < numKinds {
		return stages[k]
	}
	return Stage{}
}

// IsFailure reports the kinds that are a failure signature, survivable or not.
func IsFailure(k Kind) bool { return StageOf(k).Failure != NotFailure }

// FailureOf is the failure one event signals: its kind's, except that a soft watchdog only
// dumps state (the hard one SIGQUITs the launcher).
func FailureOf(ev Event) Failure {
	f := StageOf(ev.Kind).Failure
	if ev.Kind == KindWatchdog {
		if v, _ := ev.Fields.Get("soft"); v == "True" || v == "true" {
			return NotFailure
		}
	}
	return f
}
