// Package author writes scenarios from captured SGLang logs: the redacted log as a recorded
// timeline, with the profile, ranks, launch flags, warmup and probe behaviour and the expect
// block inferred from it, and checks that a written scenario replays as its log.
package author

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// Options tune FromLog.
type Options struct {
	// Name is the scenario name; "" derives it from Source.
	Name string
	// Source names the captured log (a file name); it is cited in sources.
	Source string
	// Rules redact the log; nil means scenarios.DefaultRedactRules. An empty non-nil slice
	// redacts nothing.
	Rules []scenarios.RedactRule
	// Duration is how long a log without any timestamp lasted: its lines are spread evenly
	// over it, in file order. 0 places them DefaultLineSpacing apart.
	Duration time.Duration
}

// Authored is a scenario written from a captured log.
type Authored struct {
	YAML   []byte // the scenario file; scenarios.Load accepts it (FromLog checks)
	Log    string // the redacted log, as embedded in timeline.recorded.inline
	Report Report
}

// FromLog reads a captured SGLang log (any variant sglang.Parse handles) as a stream and
// writes a scenario. It never drops a line: lines it cannot read are kept verbatim and listed
// in Report.Unparsed (and as comments in the file). It fails when the log is empty,
// unreadable or larger than a scenario file may be, or when the rules do not compile.
func FromLog(ctx context.Context, r io.Reader, opts Options) (*Authored, error) {
	name := opts.Name
	if name == "" {
		name = nameFrom(opts.Source)
	}
	if !scenarios.ValidName(name) {
		return nil, fmt.Errorf("author: scenario name %q is not an id: use lower-case letters, digits and dashes (--name)", name)
	}
	rules := opts.Rules
	if rules == nil {
		rules = scenarios.DefaultRedactRules()
	}
	red, err := scenarios.NewRedactor(rules)
	if err != nil {
		return nil, fmt.Errorf("author: %w", err)
	}
	lg, err := readLog(ctx, r, red, scenarios.MaxFileBytes)
	if err != nil {
		return nil, err
	}
	rep := Report{Name: name, Lines: lg.physical, Segments: len(lg.lines), Notes: lg.notes,
		Unparsed: lg.unparsed, Redaction: lg.redaction}
	d, err := infer(lg, opts, &rep)
	if err != nil {
		return nil, err
	}
	d.name, d.source, d.digest = name, opts.Source, lg.digest
	lg.lines = nil // the ground truth is compiled from the file, as a run will
	if err := d.groundTruth(&rep); err != nil {
		return nil, err
	}
	out, err := d.yaml(&rep, rep.Expect)
	if err != nil {
		return nil, err
	}
	s, err := scenarios.Load(name+".yaml", out)
	if err != nil {
		return nil, fmt.Errorf("author: the authored scenario does not load (a bug in author): %w", err)
	}
	if s.Timeline.Recorded.Inline != lg.text {
		return nil, errors.New("author: the embedded log does not read back byte-exact from YAML (a bug in author's quoting)")
	}
	c, err := scenarios.Compile(s, 1)
	if err == nil {
		err = s.Expect.Check(c.Predict())
	}
	if err != nil {
		return nil, fmt.Errorf("author: the authored scenario does not validate as written (a bug in author): %w", err)
	}
	return &Authored{YAML: out, Log: lg.text, Report: rep}, nil
}

// infer reads the draft's timeline, phases, probes, profile, ranks, flags, host and server
// behaviour off the parsed log.
func infer(lg *capturedLog, opts Options, rep *Report) (*draft, error) {
	lines := lg.lines
	spacing := untimedSpacing(lines, opts.Duration, rep)
	tl, err := scenarios.LogTimeline(lines, spacing)
	if err != nil {
		return nil, fmt.Errorf("author: %w", err)
	}
	rep.Phases = LogPhases(KindsOf(tl))
	rep.Probes = probePatterns(tl)
	prof, evidence := sglang.DetectRelease(lines)
	rep.Profile, rep.Era = prof.Name, prof.Era
	for _, e := range evidence[:min(len(evidence), maxEvidence)] {
		rep.Evidence = append(rep.Evidence, e.String())
	}
	if len(evidence) == 0 {
		rep.Evidence = []string{"no line tells the releases apart: " + prof.Name + " by default"}
	}
	rep.Ranks = countRanks(lines)
	argv, dropped := inferFlags(lines, rep)
	argv = servingFlags(lines, argv, rep)
	rep.Dropped = dropped
	rep.Flags = strings.Join(argv, " ")
	return &draft{profile: rep.Profile, host: inferHost(lines, rep.Ranks, rep), flags: rep.Flags, log: lg.text,
		behavior: inferBehavior(tl), spacing: spacing}, nil
}

// groundTruth compiles the draft the way a run will and reads its ending, the faults a run
// needs and the expect block off the compiled prediction.
func (d *draft) groundTruth(rep *Report) error {
	probe := scenarios.Expect{Tolerance: scenarios.Duration(time.Second), Verdict: scenarios.ReadyOK}
	c, err := d.compile(rep, probe)
	if err != nil {
		return err
	}
	var ending string
	ending, d.faults = failureEnding(c)
	if d.faults != nil { // compile again: the prediction must see the faults a run will have
		if c, err = d.compile(rep, probe); err != nil {
			return err
		}
	}
	rep.Expect, rep.Ending = expectFrom(c, ending)
	rep.ExitCode = rep.Expect.ExitCode
	return nil
}

// compile compiles the draft as the scenario it describes. The file FromLog writes is loaded
// back at the end and its log compared byte for byte, so it is this scenario.
func (d *draft) compile(rep *Report, e scenarios.Expect) (*scenarios.Compiled, error) {
	c, err := scenarios.Compile(d.scenario(rep, e), 1)
	if err != nil {
		return nil, fmt.Errorf("author: the drafted scenario does not compile: %w", err)
	}
	return c, nil
}
