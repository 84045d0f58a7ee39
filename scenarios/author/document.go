package author

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/printer"
	"github.com/goccy/go-yaml/token"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/gpu"
	"github.com/incident-replay/incident-replay/scenarios"
)

// draft holds what goes into the file.
type draft struct {
	name, source, digest, profile, flags, log string
	spacing                                   time.Duration // lines of an untimed log (0: the log has timestamps)
	host                                      hostDraft
	behavior                                  scenarios.Behavior
	faults                                    []fault.Spec
}

// scenario is the draft as the scenario it describes, with e as its expect block.
func (d draft) scenario(rep *Report, e scenarios.Expect) *scenarios.Scenario {
	src := d.sourceName()
	return &scenarios.Scenario{
		Name:    d.name,
		Summary: summaryOf(rep),
		Sources: []scenarios.Source{{Ref: "captured log: " + src,
			Note: "authored from the log, sha256 " + d.digest + "…; redacted with rules " + ruleNames(rep)}},
		Profile: d.profile,
		Host: scenarios.HostRef{Inline: &gpu.Host{GPUModel: "unknown (inferred from the log)", GPUCount: d.host.GPUCount,
			GPUMemoryGB: d.host.GPUMemoryGB, HostRAMGB: d.host.HostRAMGB}},
		Launch:   scenarios.Launch{Flags: d.flags},
		Timeline: scenarios.TimelineSpec{Recorded: &scenarios.Recorded{Inline: d.log, Spacing: scenarios.Duration(d.spacing)}},
		Server:   d.behavior,
		Faults:   d.faults,
		Expect:   e,
	}
}

func (d draft) sourceName() string {
	if d.source == "" {
		return "captured log"
	}
	return d.source
}

// yaml writes the scenario with the YAML library, the report riding along as comments at the
// top. The log is a literal block a person can read and edit where that reads back exactly,
// else one double-quoted scalar: the library would write some such logs (a first line that
// starts with a tab) as a literal block its own parser refuses.
func (d draft) yaml(rep *Report, e scenarios.Expect) ([]byte, error) {
	node, err := yaml.ValueToNode(d.scenario(rep, e), yaml.UseLiteralStyleIfMultiline(true), yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("author: writing the scenario: %w", err)
	}
	if !literalSafe(d.log) {
		if err := quoteInline(node, d.log); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	head := []string{
		fmt.Sprintf("Authored by `incident-replay author` from %s (sha256 %s…).", d.sourceName(), d.digest),
		"Everything below is inferred from the log; check the summary, host and expect blocks.",
	}
	for _, h := range append(head, reportComments(rep)...) {
		b.WriteString("# " + reCommentUnsafe.ReplaceAllString(h, "?") + "\n")
	}
	var p printer.Printer
	b.Write(p.PrintNode(node))
	if b.Len() > scenarios.MaxFileBytes {
		return nil, fmt.Errorf("author: the scenario would be %d bytes, over the %d a scenario file may hold (scenarios.MaxFileBytes); cut the capture to the part that matters (the startup and its ending) and author that", b.Len(), scenarios.MaxFileBytes)
	}
	return b.Bytes(), nil
}

// inlinePath is where the embedded log stands in a scenario document.
var inlinePath = (&yaml.PathBuilder{}).Root().Child("timeline").Child("recorded").Child("inline").Build()

// quoteInline turns the embedded log's node into one double-quoted scalar (JSON string
// escapes are valid YAML).
func quoteInline(node ast.Node, log string) error {
	n, err := inlinePath.FilterNode(node)
	if err != nil || n == nil {
		return fmt.Errorf("author: the written scenario has no timeline.recorded.inline (a bug in author): %v", err)
	}
	parent, ok := ast.Parent(node, n).(*ast.MappingValueNode)
	if !ok {
		return errors.New("author: timeline.recorded.inline is not a mapping value (a bug in author)")
	}
	q := strconv.Quote(log)
	parent.Value = ast.String(token.New(q, q, n.GetToken().Position))
	return nil
}

// reportComments is the report as comment lines (without the "#").
func reportComments(rep *Report) []string {
	var out []string
	w := func(format string, a ...any) { out = append(out, fmt.Sprintf(format, a...)) }
	w("profile %s (era %s), %d rank(s), %d lines (%d parsed lines)", rep.Profile, rep.Era, rep.Ranks, rep.Lines, rep.Segments)
	for _, e := range rep.Evidence {
		w("profile evidence: %s", e)
	}
	if len(rep.Phases) > 0 {
		var ps []string
		for _, p := range rep.Phases {
			ps = append(ps, fmt.Sprintf("%s %s", p.Name, p.D()))
		}
		w("phases: %s", strings.Join(ps, ", "))
	}
	if rep.Ending != "" {
		w("ending: %s", rep.Ending)
	}
	for _, p := range rep.Probes {
		w("probe: %s", p)
	}
	for _, d := range rep.Dropped {
		w("flag not carried: %s", d)
	}
	for _, n := range rep.Notes {
		w("note: %s", n)
	}
	if len(rep.Unparsed) > 0 {
		w("%d line(s) could not be parsed (kept verbatim in the log below):", len(rep.Unparsed))
		for i, u := range rep.Unparsed {
			if i == 50 {
				w("  ... and %d more", len(rep.Unparsed)-50)
				break
			}
			w("  %s", u)
		}
	}
	return out
}

// literalSafe reports a log that reads back exactly from a literal block as the library
// writes it (no indentation indicator): a literal block detects its indentation from the
// first non-blank line, and YAML forbids control characters and treats NEL/LS/PS as line
// breaks.
func literalSafe(s string) bool {
	for l := range strings.SplitSeq(s, "\n") {
		if strings.TrimLeft(l, " \t") == "" {
			if l != "" {
				return false // blank lines with blanks in them confuse indentation detection
			}
			continue
		}
		if l[0] == ' ' || l[0] == '\t' {
			return false
		}
		break
	}
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == 0x85 || r == 0x2028 || r == 0x2029 || r == 0xfeff || r == 0xfffd {
			return false
		}
	}
	return true
}

// reCommentUnsafe matches what cannot stand in a one-line comment.
var reCommentUnsafe = regexp.MustCompile(`[\x00-\x08\x0a-\x1f\x7f]`)

func ruleNames(rep *Report) string {
	if len(rep.Redaction) == 0 {
		return "(none)"
	}
	var n []string
	for _, r := range rep.Redaction {
		n = append(n, r.Rule)
	}
	return strings.Join(n, ", ")
}

func summaryOf(rep *Report) string {
	s := fmt.Sprintf("Authored from a captured log: SGLang %s (era %s), %d rank(s), ending: %s.", rep.Profile, rep.Era, rep.Ranks, rep.Ending)
	if rep.Expect.Bound != nil {
		s += fmt.Sprintf(" Port bound at %s.", rep.Expect.Bound.D())
	}
	if rep.Expect.Ready != nil {
		s += fmt.Sprintf(" Ready at %s.", rep.Expect.Ready.D())
	}
	if rep.Expect.Dead != nil {
		s += fmt.Sprintf(" Dead at %s.", rep.Expect.Dead.D())
	}
	return s
}

// nameFrom derives a scenario name from the log's file name.
func nameFrom(source string) string {
	base := strings.TrimSuffix(path.Base(strings.ReplaceAll(source, `\`, "/")), path.Ext(source))
	base = strings.ToLower(base)
	var b strings.Builder
	dash := false
	for _, r := range base {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	n := strings.Trim(b.String(), "-")
	if n == "" || n == "." {
		return "authored"
	}
	return n
}
