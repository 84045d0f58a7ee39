package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
)

// toolSpec is one entry of a tools.yaml file.
type toolSpec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Command is a bash template (fields .URL .Host .Port .LogFile .PID .Timeout).
	Command string `yaml:"command"`
	// Claim is exit (default), line or both.
	Claim string `yaml:"claim"`
	// ReadyLine is a regular expression for the line that claims ready (claim line/both).
	ReadyLine string `yaml:"ready_line"`
	Interval  string `yaml:"interval"` // probe period, e.g. 5s; default 5s
	Budget    string `yaml:"budget"`   // the tool's own time limit, e.g. 15m; default none
	// Scaled: false runs the tool in real time (S=1), off the run's clock: for a program neither
	// the preload library nor the tracer can put on virtual time.
	Scaled   *bool `yaml:"scaled"`
	MustPass bool  `yaml:"must_pass"`
	// PreflightExit is the exit status with which the tool refuses a launch it predicts will
	// fail (llmwait: 4); such a refusal is scored as detecting the failure, not as giving up.
	PreflightExit int `yaml:"preflight_exit"`
}

type toolsFile struct {
	Tools []toolSpec `yaml:"tools"`
}

// toolsFileExample is the smallest useful tools.yaml, shown when a file has no tools.
const toolsFileExample = `tools:
  - name: mycurl
    command: curl -fsS --retry 300 --retry-connrefused --retry-delay 2 {{.URL}}/health
    budget: 10m     # the tool's own time limit
    interval: 2s    # its probe period
    claim: exit     # exit 0 claims ready; or line:REGEX, both:REGEX`

// DefaultUserInterval is the probe period assumed for a user tool that does not state one.
const DefaultUserInterval = 5 * time.Second

// LoadTools reads a tools.yaml file strictly: unknown keys, duplicate names and bad values are
// errors that name the file.
func LoadTools(path string) ([]Tool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTools(path, data)
}

// ParseTools parses tools.yaml content; name is used in errors.
func ParseTools(name string, data []byte) ([]Tool, error) {
	var f toolsFile
	dec := yaml.NewDecoder(bytes.NewReader(data), yaml.Strict())
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, true))
	}
	if len(f.Tools) == 0 {
		return nil, fmt.Errorf("%s has no tools; the format is:\n%s", name, toolsFileExample)
	}
	var out []Tool
	seen := map[string]bool{}
	for i, s := range f.Tools {
		t, err := s.tool()
		if err != nil {
			return nil, fmt.Errorf("%s: tools[%d]: %w", name, i, err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%s: tools[%d]: duplicate tool name %q", name, i, t.Name)
		}
		seen[t.Name] = true
		out = append(out, t)
	}
	return out, nil
}

func (s toolSpec) tool() (Tool, error) {
	t := Tool{Name: s.Name, Description: s.Description, Command: s.Command, Interval: DefaultUserInterval, MustPass: s.MustPass, PreflightExit: s.PreflightExit}
	if t.Description == "" {
		t.Description = "user tool"
	}
	if s.Command == "" {
		return t, fmt.Errorf("tool %q has no command", s.Name)
	}
	var err error
	if s.Claim != "" {
		rule, pattern, hasPattern := strings.Cut(s.Claim, ":")
		if t.Claim, err = ParseClaimRule(rule); err != nil {
			return t, err
		}
		if hasPattern {
			if s.ReadyLine != "" {
				return t, fmt.Errorf("claim %q and ready_line both give the ready line: keep one", s.Claim)
			}
			s.ReadyLine = pattern
		}
	}
	if s.ReadyLine != "" {
		if t.ReadyLine, err = regexp.Compile(s.ReadyLine); err != nil {
			return t, fmt.Errorf("ready_line: %w", err)
		}
	}
	if s.Interval != "" {
		if t.Interval, err = time.ParseDuration(s.Interval); err != nil || t.Interval <= 0 {
			return t, fmt.Errorf("interval %q: use a positive duration such as 5s", s.Interval)
		}
	}
	if s.Budget != "" {
		if t.Budget, err = time.ParseDuration(s.Budget); err != nil {
			return t, fmt.Errorf("budget %q: use a duration such as 15m", s.Budget)
		}
	}
	t.Unscaled = s.Scaled != nil && !*s.Scaled
	return t, t.Validate()
}

// toolKeys are the keys of a tools.yaml entry, which `--tool` takes too.
var toolKeys = []string{"name", "description", "command", "claim", "ready_line", "interval", "budget", "scaled", "must_pass", "preflight_exit"}

// ParseToolFlag reads `--tool`: either 'name=command' (an exit-status tool with the default
// interval) or the keys of a tools.yaml entry separated by ';', e.g.
// 'name=mine;budget=20m;interval=5s;claim=line:^UP;command=./wait.sh {{.Port}}'. A bash
// command holds ';' itself, so inside command= only a ';' followed by one of the keys and '='
// starts the next key.
func ParseToolFlag(v string) (Tool, error) {
	key, rest, ok := strings.Cut(v, "=")
	if !ok {
		return Tool{}, fmt.Errorf("--tool %q: use name=command, e.g. --tool 'mycurl=curl -fsS {{.URL}}/health', or keys: --tool 'name=mycurl;budget=20m;command=curl -fsS {{.URL}}/health'", v)
	}
	if strings.TrimSpace(key) != "name" {
		if strings.TrimSpace(rest) == "" {
			return Tool{}, fmt.Errorf("--tool %q: the command after '=' is empty", v)
		}
		t := Tool{Name: strings.TrimSpace(key), Description: "user tool (--tool)", Command: rest, Interval: DefaultUserInterval}
		if err := t.Validate(); err != nil {
			return Tool{}, fmt.Errorf("--tool %q: %w", v, err)
		}
		return t, nil
	}
	spec, err := parseToolKeys(v)
	if err != nil {
		return Tool{}, fmt.Errorf("--tool %q: %w", v, err)
	}
	if spec.Description == "" {
		spec.Description = "user tool (--tool)"
	}
	t, err := spec.tool()
	if err != nil {
		return Tool{}, fmt.Errorf("--tool %q: %w", v, err)
	}
	return t, nil
}

// parseToolKeys splits 'k=v;k=v;...' into a toolSpec.
func parseToolKeys(v string) (toolSpec, error) {
	var s toolSpec
	seen := map[string]bool{}
	for _, kv := range splitToolKeys(v) {
		k, val, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok {
			return s, fmt.Errorf("%q is not key=value (keys: %s)", kv, strings.Join(toolKeys, ", "))
		}
		if seen[k] {
			return s, fmt.Errorf("key %s given twice", k)
		}
		seen[k] = true
		if k != "command" {
			val = strings.TrimSpace(val)
		}
		var err error
		switch k {
		case "name":
			s.Name = val
		case "description":
			s.Description = val
		case "command":
			s.Command = val
		case "claim":
			s.Claim = val
		case "ready_line":
			s.ReadyLine = val
		case "interval":
			s.Interval = val
		case "budget":
			s.Budget = val
		case "scaled":
			var b bool
			b, err = parseBool(k, val)
			s.Scaled = &b
		case "must_pass":
			s.MustPass, err = parseBool(k, val)
		case "preflight_exit":
			s.PreflightExit, err = strconv.Atoi(val)
			if err != nil {
				err = fmt.Errorf("preflight_exit %q: use an exit status such as 4", val)
			}
		default:
			return s, unknownKey(k)
		}
		if err != nil {
			return s, err
		}
	}
	return s, nil
}

// splitToolKeys cuts v at each ';' that starts a key: outside command= any ';', inside it
// only one followed by a known key and '='.
func splitToolKeys(v string) []string {
	var out []string
	inCommand := strings.HasPrefix(strings.TrimSpace(v), "command=")
	from := 0
	for i := 0; i < len(v); i++ {
		if v[i] != ';' {
			continue
		}
		next := strings.TrimLeft(v[i+1:], " ")
		k, _, hasEq := strings.Cut(next, "=")
		if inCommand && (!hasEq || !slices.Contains(toolKeys, k)) {
			continue
		}
		out = append(out, v[from:i])
		from = i + 1
		inCommand = strings.HasPrefix(next, "command=")
	}
	return append(out, v[from:])
}

func parseBool(key, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s %q: use true or false", key, v)
	}
	return b, nil
}

// unknownKey names the closest known key.
func unknownKey(k string) error {
	best, dist := "", 3
	for _, known := range toolKeys {
		if d := editDistance(k, known); d < dist {
			best, dist = known, d
		}
	}
	if best != "" {
		return fmt.Errorf("unknown key %q: did you mean %s? (keys: %s)", k, best, strings.Join(toolKeys, ", "))
	}
	return fmt.Errorf("unknown key %q (keys: %s)", k, strings.Join(toolKeys, ", "))
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// SelectTools picks tools by name from all; empty names selects all. Unknown names are an
// error listing what exists.
func SelectTools(all []Tool, names []string) ([]Tool, error) {
	if len(names) == 0 {
		return all, nil
	}
	var out []Tool
	for _, n := range names {
		found := false
		for _, t := range all {
			if t.Name == n {
				out = append(out, t)
				found = true
			}
		}
		if !found {
			var have []string
			for _, t := range all {
				have = append(have, t.Name)
			}
			return nil, fmt.Errorf("unknown tool %q: have %s", n, strings.Join(have, ", "))
		}
	}
	return out, nil
}
