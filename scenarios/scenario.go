// Package scenarios is the unit users share: one SGLang launch incident as a YAML file (what
// ran, on which host, what the server printed and did, and the ground truth a readiness tool
// is judged against), the embedded catalogue of real incidents, the startup model that turns
// flags and a host into a replay.Timeline, and the redaction rules scenarios/author applies
// when it writes a scenario from a captured log.
//
// Nothing in a scenario file executes: it holds data only (no commands, no hooks).
package scenarios

import (
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/gpu"
)

// Scenario is one parsed scenario file. Field order is the documented order of the format.
type Scenario struct {
	// Name is the scenario's id: lower-case letters, digits and dashes.
	Name string `yaml:"name" json:"name"`
	// Summary says in a sentence or two what happened.
	Summary string `yaml:"summary" json:"summary"`
	// Sources cite where the facts come from; at least one is required.
	Sources []Source `yaml:"sources" json:"sources"`
	// Profile is the SGLang release the server behaves as: a profile name or alias ("0.5.9",
	// "main-2026-07", "C") or a version ("v0.5.10").
	Profile string `yaml:"profile" json:"profile"`
	// Host is a named host profile (see gpu.HostNames) or an inline host block.
	Host HostRef `yaml:"host" json:"host"`
	// Launch holds the server's command-line flags.
	Launch Launch `yaml:"launch" json:"launch"`
	// Timeline is what the server prints and does: recorded from a log, or modelled.
	Timeline TimelineSpec `yaml:"timeline" json:"timeline"`
	// Server tunes HTTP behaviour the timeline does not script.
	Server Behavior `yaml:"server,omitempty" json:"server,omitempty"`
	// Faults are named fault injections applied on top of the timeline.
	Faults []fault.Spec `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Env is the environment the server runs with (e.g. http_proxy for the warmup request).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty"`
	// Expect is the ground truth and the verdict a correct readiness tool must reach.
	Expect Expect `yaml:"expect" json:"expect"`

	// Path is the file the scenario was loaded from ("" when loaded from bytes); a recorded
	// log path is resolved relative to it.
	Path string `yaml:"-" json:"-"`
	// root is the parsed document, kept to turn validation paths into line:col.
	root ast.Node
	// fsys and fsPath locate the file, to read a recorded log next to it.
	fsys   fs.FS
	fsPath string
	// outsideDir, when set, is the directory a recorded log outside fsys is resolved from.
	outsideDir string
}

// Source is one citation: a URL, an issue, or a reference document section.
type Source struct {
	Ref  string `yaml:"ref" json:"ref"`
	Note string `yaml:"note,omitempty" json:"note,omitempty"`
}

// HostRef is either a named host profile or an inline gpu.Host.
type HostRef struct {
	Name   string    `yaml:"-" json:"-"`
	Inline *gpu.Host `yaml:"-" json:"-"`
}

// Resolve returns the host the scenario runs on.
func (h HostRef) Resolve() (gpu.Host, error) {
	if h.Inline != nil {
		return *h.Inline, h.Inline.Validate()
	}
	if h.Name == "" {
		return gpu.Host{}, fmt.Errorf("host is empty: name a profile (%s) or give a host block", strings.Join(gpu.HostNames(), ", "))
	}
	return gpu.LookupHost(h.Name)
}

// MarshalYAML writes the name, or the inline block.
func (h HostRef) MarshalYAML() (any, error) {
	if h.Inline != nil {
		return h.Inline, nil
	}
	return h.Name, nil
}

// Launch is the server's argv after the entrypoint (`python -m sglang.launch_server`).
type Launch struct {
	// Flags are whitespace-separated, without shell quoting, e.g.
	// "--model-path moonshotai/Kimi-K2.5 --tp 8 --port 8000".
	Flags string `yaml:"flags" json:"flags"`
}

// Argv splits Flags into arguments.
func (l Launch) Argv() []string { return strings.Fields(l.Flags) }

// TimelineSpec holds exactly one of Recorded and Modelled.
type TimelineSpec struct {
	Recorded *Recorded `yaml:"recorded,omitempty" json:"recorded,omitempty"`
	Modelled *Modelled `yaml:"modelled,omitempty" json:"modelled,omitempty"`
}

// Recorded replays a captured log as it was, line for line, at its own timestamps.
type Recorded struct {
	// Log is a log file path relative to the scenario file.
	Log string `yaml:"log,omitempty" json:"log,omitempty"`
	// Inline is the log text itself.
	Inline string `yaml:"inline,omitempty" json:"inline,omitempty"`
	// Spacing places the lines of a log that has no timestamps at all: in file order, this
	// far apart, from the modelled default start. Logs with timestamps ignore it.
	Spacing Duration `yaml:"spacing,omitempty" json:"spacing,omitempty"`
}

// Behavior tunes the fake server's HTTP behaviour where the timeline says nothing. Zero values
// mean the fake server's defaults (fakeserver.Behavior, which these fields mirror).
type Behavior struct {
	// WarmupPoll is bind → the warmup's first model-info poll (SGLang sleeps 1 s).
	WarmupPoll Duration `yaml:"warmup_poll,omitempty" json:"warmup_poll,omitempty"`
	// WarmupGenerate is how long the warmup POST /generate takes.
	WarmupGenerate Duration `yaml:"warmup_generate,omitempty" json:"warmup_generate,omitempty"`
	// WarmupTokens is the warmup prefill size (6 or 7 in real logs).
	WarmupTokens int `yaml:"warmup_tokens,omitempty" json:"warmup_tokens,omitempty"`
	// HealthLatency is how long a passing generating health check takes (>= 1s).
	HealthLatency Duration `yaml:"health_latency,omitempty" json:"health_latency,omitempty"`
	// HealthTimeout is SGLANG_HEALTH_CHECK_TIMEOUT (default 20s).
	HealthTimeout Duration `yaml:"health_timeout,omitempty" json:"health_timeout,omitempty"`
	// HealthGeneration is SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (era C; default true).
	HealthGeneration *bool `yaml:"health_generation,omitempty" json:"health_generation,omitempty"`
	// ProbeTokens is the #new-token of the Prefill line each idle health probe logs
	// (1 for /health's own generation; 64 in incident 2).
	ProbeTokens int `yaml:"probe_tokens,omitempty" json:"probe_tokens,omitempty"`
	// ProbeCUDAGraph is "cuda graph:" on probe Prefill lines (default: not --disable-cuda-graph).
	ProbeCUDAGraph *bool `yaml:"probe_cuda_graph,omitempty" json:"probe_cuda_graph,omitempty"`
	// TokenLatency is the time per generated token.
	TokenLatency Duration `yaml:"token_latency,omitempty" json:"token_latency,omitempty"`
}

// Expect is the ground truth a run's journal must match, and the verdict a correct
// readiness tool reaches. Times are offsets from the launch; a nil time means "never".
type Expect struct {
	Bound     *Duration `yaml:"bound,omitempty" json:"bound,omitempty"`
	Ready     *Duration `yaml:"ready,omitempty" json:"ready,omitempty"`
	Dead      *Duration `yaml:"dead,omitempty" json:"dead,omitempty"`
	Tolerance Duration  `yaml:"tolerance" json:"tolerance"`
	// ExitCode is the launcher's exit status when Dead is set by an exit; nil when it keeps
	// running (or wedges).
	ExitCode *int    `yaml:"exit_code,omitempty" json:"exit_code,omitempty"`
	Verdict  Verdict `yaml:"verdict" json:"verdict"`
}

// Verdict is the class of a readiness tool's claim against the ground truth.
type Verdict string

// Verdict classes.
const (
	ReadyOK     Verdict = "ready-ok"     // claimed ready after t_ready, within slack
	ReadyLate   Verdict = "ready-late"   // claimed ready, long after t_ready
	FalseReady  Verdict = "false-ready"  // claimed ready before t_ready, or never-ready server
	MissedReady Verdict = "missed-ready" // gave up although the server was ready
	FailedFast  Verdict = "failed-fast"  // reported failure within seconds of t_dead
	FailedSlow  Verdict = "failed-slow"  // reported failure only at its own timeout
	GaveUp      Verdict = "gave-up"      // gave up before the server's fate was known
	Hung        Verdict = "hung"         // did not return before the harness limit
)

// Verdicts lists every class from the best outcome to the worst.
func Verdicts() []Verdict {
	return []Verdict{ReadyOK, ReadyLate, FalseReady, MissedReady, FailedFast, FailedSlow, GaveUp, Hung}
}

// Valid reports whether v is one of Verdicts.
func (v Verdict) Valid() bool {
	for _, k := range Verdicts() {
		if v == k {
			return true
		}
	}
	return false
}

// Duration is a time.Duration written as Go duration text ("90s", "11m", "1m30s").
type Duration time.Duration

// D returns the value as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Ptr returns a pointer to d (for Expect fields).
func (d Duration) Ptr() *Duration { return &d }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalYAML writes the duration text.
func (d Duration) MarshalYAML() (any, error) { return time.Duration(d).String(), nil }

// UnmarshalYAML reads duration text; bare numbers are rejected because their unit is ambiguous.
func (d *Duration) UnmarshalYAML(node ast.Node) error {
	s, ok := node.(*ast.StringNode)
	if !ok {
		return &fieldError{tok: node.GetToken(), msg: fmt.Sprintf("want a duration such as \"90s\" or \"11m\", got %s", node.String()),
			hint: "durations need a unit"}
	}
	v, err := time.ParseDuration(s.Value)
	if err != nil || v < 0 {
		return &fieldError{tok: node.GetToken(), msg: fmt.Sprintf("bad duration %q", s.Value), hint: "use Go duration text, e.g. 90s, 11m, 1m30s"}
	}
	if v > MaxDuration {
		return &fieldError{tok: node.GetToken(), msg: fmt.Sprintf("duration %s: over the limit MaxDuration = %v", s.Value, MaxDuration),
			hint: "a launch phase, a fault or an expectation lasts less than a day"}
	}
	*d = Duration(v)
	return nil
}
