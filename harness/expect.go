package harness

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/goccy/go-yaml"
)

// expectYAML holds what each built-in tool must conclude on each catalogue scenario: the
// failures the tools really have (the outcomes predicted for each pitfall, the founding
// incidents), pinned so a regression in the fake server or a tool model shows up as a
// mismatch. must-pass tools are held to the scenario's own expect block instead.
//
//go:embed expect.yaml
var expectYAML []byte

// Expectations maps tool name -> scenario name -> verdict.
type Expectations map[string]map[string]Verdict

// BuiltinExpectations parses the embedded table.
func BuiltinExpectations() (Expectations, error) {
	var e Expectations
	if err := yaml.NewDecoder(bytes.NewReader(expectYAML), yaml.Strict()).Decode(&e); err != nil {
		return nil, fmt.Errorf("harness: expect.yaml: %w", err)
	}
	for tool, m := range e {
		for sc, v := range m {
			if !v.Valid() {
				return nil, fmt.Errorf("harness: expect.yaml: %s/%s: unknown verdict %q", tool, sc, v)
			}
		}
	}
	return e, nil
}

// Lookup returns the pinned verdict for a pair.
func (e Expectations) Lookup(scenario, tool string) (Verdict, bool) {
	v, ok := e[tool][scenario]
	return v, ok
}

var builtinExpectations = sync.OnceValues(BuiltinExpectations)

// DefaultExpect holds must-pass tools to the scenario's expect block and built-in tools to
// the embedded table; anything else has no expectation.
func DefaultExpect(c Case, t Tool) (Verdict, bool) {
	if t.MustPass {
		return c.Expect, c.Expect != ""
	}
	e, err := builtinExpectations()
	if err != nil {
		return "", false
	}
	return e.Lookup(c.Name, t.Name)
}
