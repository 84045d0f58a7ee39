// Package fault is the registry of named, composable faults a fake SGLang server can suffer.
// Like Toxiproxy's toxics, each fault is a kind plus a few typed attributes; a scenario lists
// any number of them and the server applies them all. Each kind is one file: its fields, its
// validation, its live effect (through the small interfaces in effect.go that the fake server
// asks every fault for) and its predicted effect on the ground truth.
package fault

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kind names a fault. Each kind is one file of this package that registers it.
type Kind string

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
	// Location is the redirect target a 3xx answer of fail_requests carries (a path).
	Location string `yaml:"location,omitempty" json:"location,omitempty"`
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
	FieldLocation  = "location"
)

// set reports which optional fields s carries, by scenario-file name.
func (s Spec) set() map[string]bool {
	return map[string]bool{
		FieldAt: s.At != 0, FieldAfterLine: s.AfterLine != "", FieldFor: s.For != 0,
		FieldRoute: s.Route != "", FieldLatency: s.Latency != 0, FieldCount: s.Count != 0,
		FieldStatus: s.Status != 0, FieldCode: s.Code != 0, FieldPeriod: s.Period != 0,
		FieldChunks: s.Chunks != 0, FieldMessage: s.Message != "", FieldLocation: s.Location != "",
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
	if c, ok := d.Fault.(Checker); ok {
		if err := c.Check(s); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// ValidateAll validates every spec and checks that they compose: at most one kind that
// decides how binding ends (Def.EndsBind), since only one can happen.
func ValidateAll(specs []Spec) error {
	var errs []error
	bindEnding := ""
	for i, s := range specs {
		if err := s.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("faults[%d]: %w", i, err))
			continue
		}
		if d, _ := Lookup(s.Kind); d.EndsBind {
			if bindEnding != "" {
				errs = append(errs, fmt.Errorf("faults[%d]: %s and %s both decide how binding ends; keep one", i, bindEnding, s.Kind))
			}
			bindEnding = string(s.Kind)
		}
	}
	return errors.Join(errs...)
}

// ExitCode is the exit status the fault ends the process with (0 when it does not end it).
func (s Spec) ExitCode() int {
	if s.Code != 0 {
		return s.Code
	}
	d, _ := Lookup(s.Kind)
	return d.DefaultCode
}

// HTTPStatus is the status the fault answers with (0 when it does not answer).
func (s Spec) HTTPStatus() int {
	if s.Status != 0 {
		return s.Status
	}
	d, _ := Lookup(s.Kind)
	return d.DefaultStatus
}

// Active reports whether a fault triggered at trigger is in force at offset now.
func (s Spec) Active(trigger, now time.Duration) bool {
	start := trigger + s.At
	if now < start {
		return false
	}
	return s.For == 0 || now < start+s.For
}
