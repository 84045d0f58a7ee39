package scenarios

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/sglang"
)

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ValidName reports a scenario name that is an id: lower-case letters, digits and dashes.
func ValidName(name string) bool { return nameRE.MatchString(name) }

// validate checks everything the decoder cannot: required fields, references, orders.
func (s *Scenario) validate() []Problem {
	var ps []Problem
	add := func(p, msg, hint string) { ps = append(ps, s.at(p, msg, hint)) }

	switch {
	case s.Name == "":
		add("$", "name is missing", "add `name: my-scenario` (lower-case letters, digits, dashes)")
	case !nameRE.MatchString(s.Name):
		add("$.name", fmt.Sprintf("name %q is not an id", s.Name), "use lower-case letters, digits and dashes, e.g. hicache-300-host-oom")
	}
	if strings.TrimSpace(s.Summary) == "" {
		add("$", "summary is missing", "say in a sentence what happened")
	}
	if len(s.Sources) == 0 {
		add("$", "sources is missing", "cite at least one source: `sources: [{ref: https://github.com/sgl-project/sglang/issues/14282}]`")
	}
	for i, src := range s.Sources {
		if strings.TrimSpace(src.Ref) == "" {
			add(fmt.Sprintf("$.sources[%d]", i), "source ref is empty", "a URL, an issue, or a reference section such as incidents.md#incident-1")
		}
	}
	if s.Profile == "" {
		add("$", "profile is missing", "name an SGLang era or version: A, B, C, 0.5.9")
	} else if _, err := sglang.LookupProfile(s.Profile); err != nil {
		add("$.profile", err.Error(), "")
	}
	if h, err := s.Host.Resolve(); err != nil {
		add("$.host", err.Error(), "")
	} else if h.GPUCount > MaxCount {
		add("$.host.gpu_count", fmt.Sprintf("gpu_count %d: over the limit MaxCount = %d", h.GPUCount, MaxCount), "GPUs on one host, e.g. 8")
	}
	if strings.TrimSpace(s.Launch.Flags) == "" {
		add("$", "launch.flags is missing", "give the server's flags, e.g. `launch: {flags: --model-path org/m --tp 8}`")
	} else if _, err := parseLaunch(s.Launch.Argv()); err != nil {
		add("$.launch.flags", err.Error(), "")
	}
	ps = append(ps, s.validateTimeline()...)
	ps = append(ps, s.validateBehavior()...)
	if len(s.Faults) > MaxCount {
		add("$.faults", fmt.Sprintf("%d faults: over the limit MaxCount = %d", len(s.Faults), MaxCount), "")
	}
	for i, f := range s.Faults {
		if err := f.Validate(); err != nil {
			add(fmt.Sprintf("$.faults[%d]", i), err.Error(), "")
		}
		for _, d := range []struct {
			name string
			v    time.Duration
		}{{"at", f.At}, {"for", f.For}, {"latency", f.Latency}, {"period", f.Period}} {
			if d.v > MaxDuration {
				add(fmt.Sprintf("$.faults[%d].%s", i, d.name), fmt.Sprintf("%s %v: over the limit MaxDuration = %v", d.name, d.v, MaxDuration),
					"a fault lasts less than a day")
			}
		}
	}
	if err := fault.ValidateAll(s.Faults); err != nil && len(ps) == 0 {
		add("$.faults", err.Error(), "")
	}
	for k := range s.Env {
		if k == "" || strings.ContainsAny(k, "= \t") {
			add("$.env", fmt.Sprintf("env name %q is not a variable name", k), "use NAME: value")
		}
	}
	ps = append(ps, s.validateExpect()...)
	return ps
}

func (s *Scenario) validateTimeline() []Problem {
	var ps []Problem
	t := s.Timeline
	switch {
	case t.Recorded == nil && t.Modelled == nil:
		return []Problem{s.at("$.timeline", "timeline needs recorded or modelled", "add `timeline: {modelled: {...}}` or `timeline: {recorded: {log: file.log}}`")}
	case t.Recorded != nil && t.Modelled != nil:
		return []Problem{s.at("$.timeline.modelled", "timeline has both recorded and modelled", "keep one")}
	case t.Recorded != nil:
		r := t.Recorded
		switch {
		case (r.Log == "") == (r.Inline == ""):
			ps = append(ps, s.at("$.timeline.recorded", "recorded needs exactly one of log and inline", "log: a file next to the scenario; inline: the log text"))
		case r.Log != "":
			if _, err := s.readRecorded(); err != nil {
				ps = append(ps, s.at("$.timeline.recorded.log", err.Error(), "the path is relative to the scenario file"))
			}
		}
	case t.Modelled != nil:
		for _, p := range t.Modelled.problems() {
			ps = append(ps, s.at("$.timeline.modelled"+p.path, p.msg, p.hint))
		}
	}
	return ps
}

func (s *Scenario) validateBehavior() []Problem {
	var ps []Problem
	b := s.Server
	if b.ProbeTokens < 0 {
		ps = append(ps, s.at("$.server.probe_tokens", "probe_tokens is negative", "1 for SGLang's /health generation"))
	}
	for _, c := range []struct {
		name string
		v    int
	}{{"probe_tokens", b.ProbeTokens}, {"warmup_tokens", b.WarmupTokens}} {
		if c.v > MaxCount {
			ps = append(ps, s.at("$.server."+c.name, fmt.Sprintf("%s %d: over the limit MaxCount = %d", c.name, c.v, MaxCount), ""))
		}
	}
	if b.WarmupTokens < 0 {
		ps = append(ps, s.at("$.server.warmup_tokens", "warmup_tokens is negative", "6 or 7 as in real logs"))
	}
	if b.HealthLatency != 0 && b.HealthLatency.D() < time.Second {
		ps = append(ps, s.at("$.server.health_latency", fmt.Sprintf("health_latency %v is below SGLang's 1 s sleep", b.HealthLatency), "use 1s or more"))
	}
	return ps
}

func (s *Scenario) validateExpect() []Problem {
	var ps []Problem
	e := s.Expect
	add := func(p, msg, hint string) { ps = append(ps, s.at(p, msg, hint)) }
	if e.Verdict == "" {
		add("$.expect", "expect.verdict is missing", "one of "+verdictList())
	} else if !e.Verdict.Valid() {
		add("$.expect.verdict", fmt.Sprintf("unknown verdict %q", e.Verdict), "one of "+verdictList())
	}
	if e.Tolerance <= 0 {
		add("$.expect", "expect.tolerance must be > 0", "e.g. `tolerance: 2s`; the journal's times must fall within it")
	}
	if e.Ready != nil && e.Bound == nil {
		add("$.expect.ready", "ready is set but bound is not", "a server is ready only after it binds its port: set bound")
	}
	if e.Ready != nil && e.Bound != nil && *e.Ready < *e.Bound {
		add("$.expect.ready", fmt.Sprintf("ready %v is before bound %v", *e.Ready, *e.Bound), "ready comes after the port is bound and warmup finishes")
	}
	if e.Dead != nil && e.Bound != nil && *e.Dead < *e.Bound {
		add("$.expect.dead", fmt.Sprintf("dead %v is before bound %v", *e.Dead, *e.Bound), "a server that dies before binding never binds: drop bound")
	}
	if e.Dead != nil && e.Ready != nil && *e.Dead < *e.Ready {
		add("$.expect.dead", fmt.Sprintf("dead %v is before ready %v", *e.Dead, *e.Ready), "a server that dies before warmup ends is never ready: drop ready")
	}
	if e.ExitCode != nil {
		if e.Dead == nil {
			add("$.expect.exit_code", "exit_code is set but dead is not", "set dead to the time the process exits")
		}
		if *e.ExitCode < 0 || *e.ExitCode > 255 {
			add("$.expect.exit_code", fmt.Sprintf("exit_code %d is not an exit status", *e.ExitCode), "0..255; SIGKILL is 137")
		}
	}
	return ps
}

func verdictList() string {
	var names []string
	for _, v := range Verdicts() {
		names = append(names, string(v))
	}
	return strings.Join(names, ", ")
}

// SelfContained returns s with its recorded log, when it names a file beside the scenario,
// inlined: the copy can be written anywhere (the shim's cache, a container) and still load.
func (s *Scenario) SelfContained() (*Scenario, error) {
	r := s.Timeline.Recorded
	if r == nil || r.Log == "" {
		return s, nil
	}
	b, err := s.readRecorded()
	if err != nil {
		return nil, err
	}
	c := *s
	c.Timeline.Recorded = &Recorded{Inline: string(b)}
	return &c, nil
}

// readRecorded returns the recorded log text.
func (s *Scenario) readRecorded() ([]byte, error) {
	r := s.Timeline.Recorded
	if r == nil {
		return nil, fmt.Errorf("scenario %s has no recorded timeline", s.Name)
	}
	if r.Inline != "" {
		return []byte(r.Inline), nil
	}
	if s.outsideDir != "" {
		p := r.Log
		if !filepath.IsAbs(p) {
			p = filepath.Join(s.outsideDir, p)
		}
		b, err := readLimited(os.DirFS(filepath.Dir(p)), filepath.Base(p), MaxRecordedLogBytes)
		if err != nil {
			return nil, fmt.Errorf("recorded log %q: %w", r.Log, err)
		}
		return b, nil
	}
	if path.IsAbs(r.Log) || strings.Contains(r.Log, "..") {
		return nil, fmt.Errorf("recorded log %q must be a relative path inside the scenario's directory (or load with LoadOptions.AllowOutsideLog)", r.Log)
	}
	if s.fsys == nil {
		return nil, fmt.Errorf("recorded log %q: the scenario was loaded from bytes, so there is no directory to read it from", r.Log)
	}
	name := path.Join(path.Dir(s.fsPath), r.Log)
	if err := noSymlinks(s.fsys, path.Dir(s.fsPath), r.Log); err != nil {
		return nil, fmt.Errorf("recorded log %q: %w", r.Log, err)
	}
	b, err := readLimited(s.fsys, name, MaxRecordedLogBytes)
	if err != nil {
		return nil, fmt.Errorf("recorded log %q: %w", r.Log, err)
	}
	return b, nil
}

// noSymlinks fails when rel, or a directory on its way from base, is a symlink or not a
// regular file: a link could read anything on the machine.
func noSymlinks(fsys fs.FS, base, rel string) error {
	p := base
	parts := strings.Split(path.Clean(rel), "/")
	for i, part := range parts {
		p = path.Join(p, part)
		fi, err := fs.Lstat(fsys, p)
		if err != nil {
			return err
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symlink; copy the log beside the scenario (or load with LoadOptions.AllowOutsideLog)", p)
		case i == len(parts)-1 && !fi.Mode().IsRegular():
			return fmt.Errorf("%s is not a regular file", p)
		}
	}
	return nil
}
