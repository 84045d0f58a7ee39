// Package fault is the registry of named, composable faults a fake SGLang server can suffer.
// Like Toxiproxy's toxics, each fault is a kind plus a few typed attributes; a scenario lists
// any number of them and the server applies them all. The package is a leaf: it describes
// faults and validates them, the fakeserver package gives them effect.
package fault

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Kind names a fault.
type Kind string

// The fault kinds. Each Def below documents its fields and effect.
const (
	Crash              Kind = "crash"
	Wedge              Kind = "wedge"
	WedgeScheduler     Kind = "wedge_scheduler"
	SchedulerDead      Kind = "scheduler_dead"
	SlowHealth         Kind = "slow_health"
	Flap               Kind = "flap"
	FailRequests       Kind = "fail_requests"
	ResetStream        Kind = "reset_stream"
	StaleListener      Kind = "stale_listener"
	Errno98            Kind = "errno98"
	WarmupProxyFailure Kind = "warmup_proxy_failure"
)

// Spec is one fault as a scenario file writes it. Which fields a kind accepts is in its Def;
// Validate rejects the others so a typo in a scenario never silently does nothing.
type Spec struct {
	Kind Kind `yaml:"kind" json:"kind"`
	// At is the scenario offset at which the fault starts. With AfterLine it is a delay
	// counted from the first log line that contains AfterLine.
	At time.Duration `yaml:"at,omitempty" json:"at,omitempty"`
	// AfterLine triggers the fault on the first log line containing this text.
	AfterLine string `yaml:"after_line,omitempty" json:"after_line,omitempty"`
	// For bounds how long the fault lasts; 0 means until the run ends.
	For time.Duration `yaml:"for,omitempty" json:"for,omitempty"`
	// Route restricts a request fault to one path (exact, e.g. "/v1/chat/completions").
	Route string `yaml:"route,omitempty" json:"route,omitempty"`
	// Latency is added to each matching response (slow_health).
	Latency time.Duration `yaml:"latency,omitempty" json:"latency,omitempty"`
	// Count is how many requests or streams are hit; 0 means all of them.
	Count int `yaml:"count,omitempty" json:"count,omitempty"`
	// Status is the HTTP status a fault answers with (fail_requests, stale_listener).
	Status int `yaml:"status,omitempty" json:"status,omitempty"`
	// Code is the process exit code (crash, errno98, warmup_proxy_failure, stale_listener).
	Code int `yaml:"code,omitempty" json:"code,omitempty"`
	// Period is the length of each healthy and each unhealthy phase of a flap.
	Period time.Duration `yaml:"period,omitempty" json:"period,omitempty"`
	// Chunks is how many stream chunks are sent before the connection is reset.
	Chunks int `yaml:"chunks,omitempty" json:"chunks,omitempty"`
	// Message overrides the text of the log line a fault prints (crash: the exception).
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
}

// Field names as they appear in scenario files, used by Def.Fields and in error messages.
const (
	FieldAt        = "at"
	FieldAfterLine = "after_line"
	FieldFor       = "for"
	FieldRoute     = "route"
	FieldLatency   = "latency"
	FieldCount     = "count"
	FieldStatus    = "status"
	FieldCode      = "code"
	FieldPeriod    = "period"
	FieldChunks    = "chunks"
	FieldMessage   = "message"
)

// Def describes one kind: what it does, the fields it accepts and the fields it needs.
type Def struct {
	Kind     Kind
	Summary  string
	Fields   []string // accepted besides kind
	Required []string
	check    func(Spec) error // kind-specific rules beyond presence
}

var registry = map[Kind]Def{}

func register(d Def) {
	if _, dup := registry[d.Kind]; dup {
		panic("fault: kind registered twice: " + string(d.Kind))
	}
	registry[d.Kind] = d
}

func init() {
	timing := []string{FieldAt, FieldAfterLine}
	window := []string{FieldAt, FieldAfterLine, FieldFor}
	register(Def{Kind: Crash, Summary: "the process dies at a time or after a line: an exception line (message), then exit code (default 137, SIGKILL-style)",
		Fields: append(timing, FieldCode, FieldMessage), check: checkExitCode})
	register(Def{Kind: Wedge, Summary: "the whole server stops answering: connections are accepted, no response is ever sent (for bounds it)",
		Fields: window})
	register(Def{Kind: WedgeScheduler, Summary: "HTTP stays up but the scheduler hangs: generation never returns, health 503 after SGLANG_HEALTH_CHECK_TIMEOUT with the Health check failed line",
		Fields: window})
	register(Def{Kind: SchedulerDead, Summary: "the scheduler process dies while serving: era C tears the server down (137); eras A/B keep HTTP up as a zombie",
		Fields: timing})
	register(Def{Kind: SlowHealth, Summary: "adds latency to /health and /health_generate (or to route)",
		Fields: append(window, FieldRoute, FieldLatency), Required: []string{FieldLatency}})
	register(Def{Kind: Flap, Summary: "health alternates: period healthy, then period 503, repeatedly",
		Fields: append(window, FieldPeriod), Required: []string{FieldPeriod}})
	register(Def{Kind: FailRequests, Summary: "the first count requests to route (all routes when empty) answer status (default 500) with an error body",
		Fields: append(window, FieldRoute, FieldCount, FieldStatus), Required: []string{FieldCount}, check: checkStatus})
	register(Def{Kind: ResetStream, Summary: "streaming responses (on route, or every streaming route) are cut with a TCP reset after chunks chunks; count limits how many streams",
		Fields: append(window, FieldRoute, FieldCount, FieldChunks)})
	register(Def{Kind: StaleListener, Summary: "an old server already holds the port and answers every request with status (default 200); the new one fails to bind with Errno 98 after loading and exits with code (default 1)",
		Fields: []string{FieldStatus, FieldCode}, check: func(s Spec) error { return errors.Join(checkStatus(s), checkExitCode(s)) }})
	register(Def{Kind: Errno98, Summary: "another process holds the port (it accepts and closes); after loading uvicorn logs Errno 98 and the server exits with code (default 1)",
		Fields: []string{FieldCode}, check: checkExitCode})
	register(Def{Kind: WarmupProxyFailure, Summary: "the warmup requests go through an HTTP proxy that answers status (default 502) for for (default 120s of polling), then Initialization failed. warmup error ... and exit code (default 137)",
		Fields: []string{FieldFor, FieldStatus, FieldCode}, check: func(s Spec) error { return errors.Join(checkStatus(s), checkExitCode(s)) }})
}

// Lookup returns the definition of kind.
func Lookup(kind Kind) (Def, bool) {
	d, ok := registry[kind]
	return d, ok
}

// Kinds lists every registered kind, sorted.
func Kinds() []Kind {
	ks := make([]Kind, 0, len(registry))
	for k := range registry {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

func kindList() string {
	names := make([]string, 0, len(registry))
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// set reports which optional fields s carries, by scenario-file name.
func (s Spec) set() map[string]bool {
	return map[string]bool{
		FieldAt: s.At != 0, FieldAfterLine: s.AfterLine != "", FieldFor: s.For != 0,
		FieldRoute: s.Route != "", FieldLatency: s.Latency != 0, FieldCount: s.Count != 0,
		FieldStatus: s.Status != 0, FieldCode: s.Code != 0, FieldPeriod: s.Period != 0,
		FieldChunks: s.Chunks != 0, FieldMessage: s.Message != "",
	}
}

// Validate reports every problem with s, each naming the field and what to write instead.
func (s Spec) Validate() error {
	if s.Kind == "" {
		return fmt.Errorf("fault: kind is missing; use one of: %s", kindList())
	}
	d, ok := Lookup(s.Kind)
	if !ok {
		return fmt.Errorf("fault: unknown kind %q; use one of: %s", s.Kind, kindList())
	}
	var errs []error
	accepted := map[string]bool{}
	for _, f := range d.Fields {
		accepted[f] = true
	}
	isSet := s.set()
	names := make([]string, 0, len(isSet))
	for f := range isSet {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if isSet[f] && !accepted[f] {
			errs = append(errs, fmt.Errorf("fault %s: field %q does not apply to this kind (it accepts: %s)", s.Kind, f, strings.Join(d.Fields, ", ")))
		}
	}
	for _, f := range d.Required {
		if !isSet[f] {
			errs = append(errs, fmt.Errorf("fault %s: field %q is required", s.Kind, f))
		}
	}
	for _, c := range []struct {
		name string
		d    time.Duration
	}{{FieldAt, s.At}, {FieldFor, s.For}, {FieldLatency, s.Latency}, {FieldPeriod, s.Period}} {
		if c.d < 0 {
			errs = append(errs, fmt.Errorf("fault %s: %s is %v; durations must be >= 0 (write e.g. \"25s\")", s.Kind, c.name, c.d))
		}
	}
	if s.Count < 0 {
		errs = append(errs, fmt.Errorf("fault %s: count is %d; use a positive number (0 or omitted means all)", s.Kind, s.Count))
	}
	if s.Chunks < 0 {
		errs = append(errs, fmt.Errorf("fault %s: chunks is %d; use 0 or more", s.Kind, s.Chunks))
	}
	if s.Route != "" && !strings.HasPrefix(s.Route, "/") {
		errs = append(errs, fmt.Errorf("fault %s: route %q must be a path starting with /", s.Kind, s.Route))
	}
	if d.check != nil {
		if err := d.check(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkStatus(s Spec) error {
	if s.Status != 0 && (s.Status < 100 || s.Status > 599 || http.StatusText(s.Status) == "") {
		return fmt.Errorf("fault %s: status %d is not an HTTP status; use e.g. 500, 502 or 503", s.Kind, s.Status)
	}
	return nil
}

func checkExitCode(s Spec) error {
	if s.Code < 0 || s.Code > 255 {
		return fmt.Errorf("fault %s: code %d is not an exit status; use 0..255 (137 = killed by SIGKILL)", s.Kind, s.Code)
	}
	return nil
}

// ValidateAll validates every spec and checks that they compose: at most one process ending
// at bind (errno98, stale_listener, warmup_proxy_failure) since only one can happen.
func ValidateAll(specs []Spec) error {
	var errs []error
	bindEnding := ""
	for i, s := range specs {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
			continue
		}
		switch s.Kind {
		case Errno98, StaleListener, WarmupProxyFailure:
			if bindEnding != "" {
				errs = append(errs, fmt.Errorf("faults[%d]: %s and %s both decide how binding ends; keep one", i, bindEnding, s.Kind))
			}
			bindEnding = string(s.Kind)
		}
	}
	return errors.Join(errs...)
}

// Defaults returned by the accessors below when a field is left out.
const (
	DefaultCrashCode        = 137
	DefaultBindExitCode     = 1
	DefaultFailStatus       = http.StatusInternalServerError
	DefaultStaleStatus      = http.StatusOK
	DefaultProxyStatus      = http.StatusBadGateway
	DefaultProxyPollWindow  = 120 * time.Second
	DefaultResetAfterChunks = 1
)

// ExitCode is the exit status the fault ends the process with (0 when it does not end it).
func (s Spec) ExitCode() int {
	if s.Code != 0 {
		return s.Code
	}
	switch s.Kind {
	case Crash, WarmupProxyFailure:
		return DefaultCrashCode
	case Errno98, StaleListener:
		return DefaultBindExitCode
	}
	return 0
}

// HTTPStatus is the status the fault answers with (0 when it does not answer).
func (s Spec) HTTPStatus() int {
	if s.Status != 0 {
		return s.Status
	}
	switch s.Kind {
	case FailRequests:
		return DefaultFailStatus
	case StaleListener:
		return DefaultStaleStatus
	case WarmupProxyFailure:
		return DefaultProxyStatus
	}
	return 0
}

// Active reports whether a fault triggered at trigger is in force at offset now.
func (s Spec) Active(trigger, now time.Duration) bool {
	start := trigger + s.At
	if now < start {
		return false
	}
	return s.For == 0 || now < start+s.For
}
