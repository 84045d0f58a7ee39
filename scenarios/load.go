package scenarios

import (
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
	"github.com/incident-replay/incident-replay/gpu"
)

// Problem is one thing wrong with a scenario file, located at file:line:col.
type Problem struct {
	File      string
	Line, Col int    // 1-based; 0 when the position is unknown
	Path      string // YAML path of the offending value, e.g. $.expect.ready ("" for syntax errors)
	Msg       string
	Hint      string // what to write instead; may be empty
}

func (p Problem) Error() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	b.WriteString(p.Msg)
	if p.Hint != "" {
		b.WriteString(" (" + p.Hint + ")")
	}
	return b.String()
}

// LoadError lists every problem found in one file, in file order.
type LoadError struct{ Problems []Problem }

func (e *LoadError) Error() string {
	msgs := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		msgs[i] = p.Error()
	}
	return strings.Join(msgs, "\n")
}

// fieldError is returned by the package's own unmarshalers so the loader can place it.
type fieldError struct {
	tok       *token.Token
	msg, hint string
}

func (e *fieldError) Error() string { return e.msg }

// Load parses and validates one scenario document. name is used in error positions and as
// the base for a recorded log path. Unknown fields, bad durations, impossible orders and
// missing references are errors with file:line:col and a hint.
func Load(name string, data []byte) (*Scenario, error) { return load(name, data, nil, "") }

func load(name string, data []byte, fsys fs.FS, fsPath string) (*Scenario, error) {
	return loadIn(name, data, fsys, fsPath, "")
}

// loadIn is load with outsideDir set when the recorded log may lie outside fsys (the
// directory it is resolved from, LoadOptions.AllowOutsideLog).
func loadIn(name string, data []byte, fsys fs.FS, fsPath, outsideDir string) (*Scenario, error) {
	if p := prescan(name, data); p != nil {
		return nil, &LoadError{Problems: []Problem{*p}}
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, &LoadError{Problems: []Problem{fromYAMLError(name, err)}}
	}
	if len(file.Docs) != 1 || file.Docs[0].Body == nil {
		return nil, &LoadError{Problems: []Problem{{File: name, Line: 1, Col: 1, Msg: "want exactly one YAML document holding a scenario mapping",
			Hint: "start with `name: my-scenario`; split several scenarios into several files"}}}
	}
	body := file.Docs[0].Body
	if _, ok := body.(*ast.MappingNode); !ok {
		tk := body.GetToken()
		return nil, &LoadError{Problems: []Problem{{File: name, Line: tk.Position.Line, Col: tk.Position.Column,
			Msg: "a scenario must be a mapping of fields", Hint: "start with `name: my-scenario`"}}}
	}
	if tag := findTag(body); tag != nil {
		tk := tag.GetToken()
		return nil, &LoadError{Problems: []Problem{{File: name, Line: tk.Position.Line, Col: tk.Position.Column,
			Msg: fmt.Sprintf("YAML tag %s is not allowed", tk.Value), Hint: "scenario files are plain data: remove the tag"}}}
	}
	s := &Scenario{Path: name, root: body, fsys: fsys, fsPath: fsPath, outsideDir: outsideDir}
	if err := decode(body, s); err != nil {
		return nil, &LoadError{Problems: []Problem{fromYAMLError(name, err)}}
	}
	if probs := s.validate(); len(probs) > 0 {
		return nil, &LoadError{Problems: probs}
	}
	return s, nil
}

// decode runs the strict decoder; goccy/go-yaml v1.19.2 can panic on odd inputs (found by
// FuzzLoad), which must come back as an error, never crash a CLI or the harness.
func decode(body ast.Node, s *Scenario) (err error) {
	defer func() {
		if r := recover(); r != nil {
			tk := body.GetToken()
			err = &fieldError{tok: tk, msg: fmt.Sprintf("the YAML decoder failed on this document (%v)", r), hint: "check the file's structure against scenarios/schema.json"}
		}
	}()
	return yaml.NodeToValue(body, s, yaml.DisallowUnknownField())
}

// tagFinder stops at the first explicit tag other than the standard !!type tags.
type tagFinder struct{ found ast.Node }

func (f *tagFinder) Visit(n ast.Node) ast.Visitor {
	if f.found != nil {
		return nil
	}
	if t, ok := n.(*ast.TagNode); ok && !strings.HasPrefix(t.Start.Value, "!!") {
		f.found = n
		return nil
	}
	return f
}

func findTag(n ast.Node) ast.Node {
	f := &tagFinder{}
	ast.Walk(f, n)
	return f.found
}

// UnmarshalYAML accepts a host profile name or an inline host block.
func (h *HostRef) UnmarshalYAML(node ast.Node) error {
	switch n := node.(type) {
	case *ast.StringNode:
		*h = HostRef{Name: n.Value}
		return nil
	case *ast.MappingNode:
		var host gpu.Host
		if err := yaml.NodeToValue(n, &host, yaml.DisallowUnknownField()); err != nil {
			return err
		}
		*h = HostRef{Inline: &host}
		return nil
	}
	return &fieldError{tok: node.GetToken(), msg: "host must be a profile name or a host block",
		hint: "e.g. host: " + gpu.FoundingHost}
}

func fromYAMLError(name string, err error) Problem {
	var fe *fieldError
	if errors.As(err, &fe) {
		p := Problem{File: name, Msg: fe.msg, Hint: fe.hint}
		if fe.tok != nil {
			p.Line, p.Col = fe.tok.Position.Line, fe.tok.Position.Column
		}
		return p
	}
	var ye yaml.Error
	if errors.As(err, &ye) {
		p := Problem{File: name, Msg: ye.GetMessage()}
		if tk := ye.GetToken(); tk != nil {
			p.Line, p.Col = tk.Position.Line, tk.Position.Column
		}
		var uf *yaml.UnknownFieldError
		if errors.As(err, &uf) {
			p.Hint = suggestField(uf.Message)
		}
		var te *yaml.TypeError
		if errors.As(err, &te) {
			p.Msg = typeMessage(te)
		}
		return p
	}
	return Problem{File: name, Msg: err.Error()}
}

func typeMessage(te *yaml.TypeError) string {
	// StructFieldName names the Go type path, not the YAML key; the position says where.
	return fmt.Sprintf("want %s, got %s", kindWord(te.DstType), kindWord(te.SrcType))
}

func kindWord(t reflect.Type) string {
	if t == nil {
		return "nothing"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint8:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return t.String()
}

// suggestField turns `unknown field "hicache_szie"` into a did-you-mean hint over every field
// name the format has.
func suggestField(msg string) string {
	_, after, ok := strings.Cut(msg, `"`)
	if !ok {
		return ""
	}
	got, _, _ := strings.Cut(after, `"`)
	best, bestD := "", 3
	for _, name := range fieldNames() {
		if d := editDistance(got, name); d < bestD {
			best, bestD = name, d
		}
	}
	if best == "" {
		return "see scenarios/schema.json for the fields"
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// fieldNames collects every yaml key of the format, by reflection over the types.
func fieldNames() []string {
	seen := map[string]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen["type:"+t.String()] {
			return
		}
		seen["type:"+t.String()] = true
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" {
				seen[tag] = true
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeFor[Scenario]())
	walk(reflect.TypeFor[gpu.Host]())
	var names []string
	for k := range seen {
		if !strings.HasPrefix(k, "type:") {
			names = append(names, k)
		}
	}
	slices.Sort(names)
	return names
}

// editDistance is the optimal-string-alignment distance: insertions, deletions,
// substitutions and adjacent transpositions ("szie" for "size") each cost one.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// at places a validation problem at the YAML path (falling back to its nearest parent).
func (s *Scenario) at(path, msg, hint string) Problem {
	p := Problem{File: s.Path, Path: path, Msg: msg, Hint: hint}
	for q := path; q != "" && s.root != nil; q = parentPath(q) {
		yp, err := yaml.PathString(q)
		if err != nil {
			continue
		}
		n, err := yp.FilterNode(s.root)
		if err != nil || n == nil {
			continue
		}
		tk := n.GetToken()
		switch m := n.(type) {
		case *ast.MappingValueNode:
			tk = m.Key.GetToken()
		case *ast.MappingNode:
			// a field missing from this mapping: point at the mapping's first key
			if len(m.Values) > 0 {
				tk = m.Values[0].Key.GetToken()
			}
		}
		p.Line, p.Col = tk.Position.Line, tk.Position.Column
		break
	}
	return p
}

func parentPath(p string) string {
	if p == "$" {
		return ""
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return "$"
	}
	return p[:i]
}

func asLoadError(err error, le **LoadError) bool { return errors.As(err, le) }
