package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/replay"
)

// ClaimRule is how a shell tool says "ready".
type ClaimRule uint8

const (
	// ByExit: exit status 0 means ready, anything else means failure.
	ByExit ClaimRule = iota
	// ByLine: printing a line that matches ReadyLine means ready (the founding loops print
	// "READY ..." and exit 0 either way); exiting without it means failure.
	ByLine
	// ByBoth: the ready line and exit status 0.
	ByBoth
)

var claimRuleNames = [...]string{ByExit: "exit", ByLine: "line", ByBoth: "both"}

func (r ClaimRule) String() string {
	if int(r) < len(claimRuleNames) {
		return claimRuleNames[r]
	}
	return "claim(" + strconv.Itoa(int(r)) + ")"
}

// ParseClaimRule reads "exit", "line" or "both" (tools.yaml and --tool also take
// line:REGEX and both:REGEX, the rule with its ready line).
func ParseClaimRule(s string) (ClaimRule, error) {
	for i, n := range claimRuleNames {
		if n == s {
			return ClaimRule(i), nil
		}
	}
	return 0, fmt.Errorf("unknown claim rule %q: use exit, line:REGEX or both:REGEX", s)
}

// Env is what a Go wait function is given: the server's coordinates and the run's clock.
// Every timer and deadline of the function must come from Clock, so the tool is compressed
// with the server.
type Env struct {
	Clock   replay.Clock
	URL     string // base URL, http://127.0.0.1:PORT
	Host    string
	Port    int
	LogFile string
	// Exited reports the server process's exit code once it has exited; ok is false while it
	// runs. It is how a tool that supervises the process (popen, testcontainers) sees a crash.
	Exited func() (code int, ok bool)
	// Done is closed when the server process has exited.
	Done <-chan struct{}
	// OnExit registers a function to run with the exit code when the server process exits:
	// on virtual time before the clock moves past the exit (see Target.OnExit). nil: the
	// tool learns of the exit from Done alone.
	OnExit func(f func(code int))
	// Launch is the server's command line (python -m sglang.launch_server FLAGS, with the
	// port the run uses), ServerEnv its environment and Host the machine it is modelled on:
	// what a launch tool's preflight reads. Machine is nil when the case names none.
	Launch    []string
	ServerEnv []string
	Machine   *gpu.Host
	// Published is set when the port is a container's published port: a proxy listens on it
	// from the start, so "is the port free before launch" cannot be asked here.
	Published bool
}

// WaitFunc is a readiness tool written in Go: it returns nil once it considers the server
// ready and an error once it gives up. It must return promptly when ctx ends (the harness
// limit), which the harness scores as hung.
type WaitFunc func(ctx context.Context, env Env) error

// Tool is one readiness or launch tool under test.
type Tool struct {
	Name        string
	Description string

	// Command is a bash command template over TemplateData: {{.URL}} {{.Host}} {{.Port}}
	// {{.LogFile}} {{.PID}} {{.Timeout}} (seconds) {{.Scenario}} {{.APIKey}} {{.Launch}}
	// {{.HostProfile}}.
	// Set Command or Wait, not both.
	Command   string
	Claim     ClaimRule
	ReadyLine *regexp.Regexp // ByLine/ByBoth: the line that claims ready

	Wait WaitFunc

	// Interval is the tool's probe period; with DefaultGrace it sets the verdict slack.
	Interval time.Duration
	// Budget is the tool's own time limit (scenario time), 0 when it has none. The harness
	// limit of a run is at least Budget plus a margin, so a tool is never cut off early.
	Budget time.Duration
	// Unscaled marks a tool whose timing cannot follow the compressed clock (a static binary
	// that faketime cannot reach, a tool with real-time internals): its runs use S=1.
	Unscaled bool
	// MustPass makes `score` fail when this tool misses a scenario's expected verdict.
	MustPass bool
	// PreflightExit, when not 0, is the exit status with which a shell tool refuses a launch
	// it predicts will fail: scored as detecting the failure (failed-fast), not giving up.
	PreflightExit int
}

// Validate reports what makes the tool unusable.
func (t Tool) Validate() error {
	switch {
	case t.Name == "" || strings.ContainsAny(t.Name, " \t\n=,"):
		return fmt.Errorf("tool name %q: use a non-empty name without spaces, '=' or ','", t.Name)
	case (t.Command == "") == (t.Wait == nil):
		return fmt.Errorf("tool %s: set exactly one of a command or a Go wait function", t.Name)
	case t.Command != "" && t.Claim != ByExit && t.ReadyLine == nil:
		return fmt.Errorf("tool %s: claim %s needs a ready line pattern", t.Name, t.Claim)
	case t.Interval < 0 || t.Budget < 0:
		return fmt.Errorf("tool %s: interval and budget must not be negative", t.Name)
	}
	if t.Command != "" {
		if _, err := t.render(TemplateData{}); err != nil {
			return err
		}
	}
	return nil
}

// Kind is "shell" or "go".
func (t Tool) Kind() string {
	if t.Wait != nil {
		return "go"
	}
	return "shell"
}

// TemplateData fills a Command template.
type TemplateData struct {
	URL     string
	Host    string
	Port    int
	LogFile string
	PID     int
	Timeout int // seconds: the time the harness allows the tool
	// Scenario is the scenario's name.
	Scenario string
	// APIKey is the scenario's --api-key, "" when it launches without one.
	APIKey string
	// Launch is the scenario's server as a command line a launch tool starts in its place:
	// its output is the server's log and it exits with the server's exit code (see
	// launchCommand). On virtual time it is a real fakesglang process, the tool's child.
	Launch string
	// HostProfile is a file describing the scenario's modelled host (llmwait --host-profile),
	// "" when the scenario models none or the tool does not launch the server.
	HostProfile string
}

// templateFields lists TemplateData's fields, for errors.
const templateFields = ".URL .Host .Port .LogFile .PID .Timeout .Scenario .APIKey .Launch .HostProfile"

func (t Tool) render(d TemplateData) (string, error) {
	tpl, err := template.New(t.Name).Option("missingkey=error").Parse(t.Command)
	if err != nil {
		return "", fmt.Errorf("tool %s: command template: %w", t.Name, err)
	}
	var b bytes.Buffer
	if err := tpl.Execute(&b, d); err != nil {
		return "", fmt.Errorf("tool %s: command template (fields: %s): %w", t.Name, templateFields, err)
	}
	return b.String(), nil
}

// usesLaunch reports whether the command starts the server itself ({{.Launch}}).
func (t Tool) usesLaunch() bool { return strings.Contains(t.Command, ".Launch") }

// usesPID reports whether the command refers to the server's PID or runs it, which costs a
// stand-in process when the server runs in-process.
func (t Tool) usesPID() bool {
	return strings.Contains(t.Command, ".PID") || strings.Contains(t.Command, ".Launch")
}

// splitURL returns host and port of a base URL.
func splitURL(base string) (string, int, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", 0, fmt.Errorf("server URL %q: %w", base, err)
	}
	h, p, err := net.SplitHostPort(u.Host)
	if err != nil {
		return "", 0, fmt.Errorf("server URL %q has no port: %w", base, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, fmt.Errorf("server URL %q: port %q: %w", base, p, err)
	}
	return h, port, nil
}

// errGaveUp is returned by model tools that reach their own timeout.
var errGaveUp = errors.New("timed out")
