package harness

import (
	"bytes"
	"fmt"
	"os"
	"regexp"
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
	// Scaled: false runs the tool at S=1 (e.g. a static Go binary faketime cannot reach).
	Scaled   *bool `yaml:"scaled"`
	MustPass bool  `yaml:"must_pass"`
}

type toolsFile struct {
	Tools []toolSpec `yaml:"tools"`
}

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
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%s: %s", name, yaml.FormatError(err, false, true))
	}
	if len(f.Tools) == 0 {
		return nil, fmt.Errorf("%s: no tools: write `tools:` with a list of {name, command, claim}", name)
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
	t := Tool{Name: s.Name, Description: s.Description, Command: s.Command, Interval: DefaultUserInterval, MustPass: s.MustPass}
	if t.Description == "" {
		t.Description = "user tool"
	}
	if s.Command == "" {
		return t, fmt.Errorf("tool %q has no command", s.Name)
	}
	var err error
	if s.Claim != "" {
		if t.Claim, err = ParseClaimRule(s.Claim); err != nil {
			return t, err
		}
	}
	if s.ReadyLine != "" {
		if t.ReadyLine, err = regexp.Compile(s.ReadyLine); err != nil {
			return t, fmt.Errorf("ready_line: %w", err)
		}
	}
	if s.Interval != "" {
		if t.Interval, err = time.ParseDuration(s.Interval); err != nil {
			return t, fmt.Errorf("interval %q: use a duration such as 5s", s.Interval)
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

// ParseToolFlag reads `--tool 'name=command'`: an exit-status tool with the default interval.
func ParseToolFlag(v string) (Tool, error) {
	name, cmd, ok := strings.Cut(v, "=")
	if !ok || strings.TrimSpace(cmd) == "" {
		return Tool{}, fmt.Errorf("--tool %q: use name=command, e.g. --tool 'mycurl=curl -fsS {{.URL}}/health'", v)
	}
	t := Tool{Name: strings.TrimSpace(name), Description: "user tool (--tool)", Command: cmd, Interval: DefaultUserInterval}
	return t, t.Validate()
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
