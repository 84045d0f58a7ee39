package scenarios

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// RedactRule rewrites one kind of identifying text in a captured log before it is shared.
//
// Regex is Go RE2, applied to each log line on its own. Replace is the replacement: $1 and
// ${name} expand the match's groups, and {n} becomes a stable pseudonym number: the 1-based
// order in which this rule first saw the value (the group named "key" when the regex has one,
// else the whole match), so the same client or host keeps the same number throughout the log
// and the same input always gives the same output. A value that fully matches Keep (optional)
// is left alone. Disable (only meaningful in a rules file) switches off a default rule of the
// same name.
type RedactRule struct {
	Name    string `yaml:"name" json:"name"`
	Regex   string `yaml:"regex" json:"regex"`
	Replace string `yaml:"replace" json:"replace"`
	Keep    string `yaml:"keep,omitempty" json:"keep,omitempty"`
	Disable bool   `yaml:"disable,omitempty" json:"disable,omitempty"`
}

// pathStop ends a path: whitespace, quotes and the punctuation a repr or a traceback puts after one.
const pathStop = `\s'"=,:;()\[\]{}<>|`

// DefaultRedactRules are applied when no rules file is given, in this order:
//
//   - home-dir: /home/alice and /Users/alice become /home/user1 (the user name identifies a person);
//   - private-path: the directory part of paths under /mnt, /data, /scratch, /nfs, /lustre,
//     /gpfs, /raid, /shared, /srv, /home and /Users becomes /redacted/dirN; the file or model
//     directory name at the end is kept (it says what was loaded);
//   - ipv4: addresses other than 127.x and 0.0.0.0 become 10.255.0.N (the port is kept);
//   - ipv6: addresses other than ::1 become fd00::N;
//   - user-at-host: user@host (shell prompts, e-mail) becomes user@hostN;
//   - nccl-host: the host name NCCL puts in front of its lines becomes hostN;
//   - url-host: host names in http(s) URLs become hostN, except localhost and public
//     project sites (github.com, huggingface.co, pytorch.org, docs.sglang.ai, nvidia.com);
//   - internal-fqdn: names under .internal, .local, .lan, .corp, .intranet, .svc become hostN.
//
// Traceback paths under /usr, /opt, /sgl-workspace and site-packages are kept: they name code,
// not people, and they are what makes a crash recognisable.
func DefaultRedactRules() []RedactRule {
	return []RedactRule{
		{Name: "home-dir", Regex: `(?:/home|/Users)/(?P<key>[^/` + pathStop + `]+)`, Replace: "/home/user{n}"},
		{Name: "private-path", Regex: `(?P<pre>^|[` + pathStop + `])(?P<key>/(?:mnt|data|scratch|nfs|lustre|gpfs|raid|shared|srv|home|Users)(?:/[^/` + pathStop + `]+)+)/`,
			Replace: "${pre}/redacted/dir{n}/"},
		{Name: "ipv4", Regex: `\b(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)\b`,
			Keep: `127\.\d+\.\d+\.\d+|0\.0\.0\.0`, Replace: "10.255.0.{n}"},
		{Name: "ipv6", Regex: `\b[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){7}\b|(?:\b[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*)?::[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4})*\b`,
			Keep: `::1|::`, Replace: "fd00::{n}"},
		{Name: "user-at-host", Regex: `\b[A-Za-z_][\w.-]*@(?P<key>[A-Za-z0-9][\w.-]*[A-Za-z0-9])`, Replace: "user@host{n}"},
		{Name: "nccl-host", Regex: `(?P<pre>^|\s)(?P<key>[A-Za-z][\w.-]*)(?P<post>:\d+:\d+ \[\d+\] NCCL )`, Replace: "${pre}host{n}${post}"},
		{Name: "url-host", Regex: `(?P<scheme>https?://)(?P<key>[A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*)`,
			Keep: `localhost|(?:[\w-]+\.)*(?:github\.com|huggingface\.co|pytorch\.org|sglang\.ai|nvidia\.com|python\.org)`, Replace: "${scheme}host{n}"},
		{Name: "internal-fqdn", Regex: `\b(?P<key>[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.(?:internal|local|lan|corp|intranet|svc))\b`, Replace: "host{n}"},
	}
}

// Redactor applies rules to log lines. It numbers pseudonyms across every line it sees, so
// use one Redactor per log.
type Redactor struct {
	rules []compiledRule
}

type compiledRule struct {
	RedactRule
	re    *regexp.Regexp
	keep  *regexp.Regexp
	key   int // index of the "key" group, 0 for the whole match
	seen  map[string]int
	count int
}

// NewRedactor compiles rules; every bad rule is reported, not just the first.
func NewRedactor(rules []RedactRule) (*Redactor, error) {
	r := &Redactor{}
	var errs []string
	names := map[string]bool{}
	for i, rule := range rules {
		if rule.Disable {
			continue
		}
		if err := rule.check(); err != nil {
			errs = append(errs, fmt.Sprintf("rule %d: %v", i+1, err))
			continue
		}
		if names[rule.Name] {
			errs = append(errs, fmt.Sprintf("rule %d: duplicate name %q", i+1, rule.Name))
			continue
		}
		names[rule.Name] = true
		cr := compiledRule{RedactRule: rule, re: regexp.MustCompile(rule.Regex), seen: map[string]int{}}
		if rule.Keep != "" {
			cr.keep = regexp.MustCompile(`^(?:` + rule.Keep + `)$`)
		}
		cr.key = cr.re.SubexpIndex("key")
		if cr.key < 0 {
			cr.key = 0
		}
		r.rules = append(r.rules, cr)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("redaction rules: %s", strings.Join(errs, "; "))
	}
	return r, nil
}

func (rule RedactRule) check() error { _, err := rule.checkField(); return err }

// checkField validates a rule and names the field at fault.
func (rule RedactRule) checkField() (string, error) {
	if !nameRE.MatchString(rule.Name) {
		return "name", fmt.Errorf("name %q must be lower-case letters, digits and dashes", rule.Name)
	}
	if rule.Regex == "" {
		return "name", fmt.Errorf("%s: regex is empty (to switch a default rule off, write `disable: true`)", rule.Name)
	}
	re, err := regexp.Compile(rule.Regex)
	if err != nil {
		return "regex", fmt.Errorf("%s: bad regex: %v", rule.Name, err)
	}
	if re.MatchString("") {
		return "regex", fmt.Errorf("%s: regex %q matches the empty string, so it would rewrite every position of every line", rule.Name, rule.Regex)
	}
	if rule.Keep != "" {
		if _, err := regexp.Compile(rule.Keep); err != nil {
			return "keep", fmt.Errorf("%s: bad keep regex: %v", rule.Name, err)
		}
	}
	return "", nil
}

// keyToken is the position of key in a rule's mapping, or the mapping's own.
func keyToken(m *ast.MappingNode, key string) *token.Token {
	for _, v := range m.Values {
		if v.Key.GetToken().Value == key {
			return v.Key.GetToken()
		}
	}
	return m.GetToken()
}

// Line redacts one line with every rule, in order.
func (r *Redactor) Line(s string) string {
	for i := range r.rules {
		s = r.rules[i].apply(s)
	}
	return s
}

func (cr *compiledRule) apply(s string) string {
	idx := cr.re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		key := ""
		if k := 2 * cr.key; m[k] >= 0 {
			key = s[m[k]:m[k+1]]
		}
		if cr.keep != nil && cr.keep.MatchString(key) {
			continue
		}
		n, ok := cr.seen[key]
		if !ok {
			n = len(cr.seen) + 1
			cr.seen[key] = n
		}
		cr.count++
		tmpl := strings.ReplaceAll(cr.Replace, "{n}", strconv.Itoa(n))
		b.WriteString(s[last:m[0]])
		b.Write(cr.re.ExpandString(nil, tmpl, s, m))
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// Counts reports how many replacements each rule made, in rule order.
func (r *Redactor) Counts() []RedactCount {
	out := make([]RedactCount, 0, len(r.rules))
	for _, cr := range r.rules {
		out = append(out, RedactCount{Rule: cr.Name, Replaced: cr.count, Distinct: len(cr.seen)})
	}
	return out
}

// RedactCount is what one rule did to a log.
type RedactCount struct {
	Rule     string
	Replaced int // occurrences rewritten
	Distinct int // distinct values (pseudonyms handed out)
}

// ParseRedactRules reads a rules file: a YAML list of {name, regex, replace[, keep][, disable]}.
// Unknown fields, a non-list document, bad regexes and duplicate names are errors at
// file:line:col.
func ParseRedactRules(file string, data []byte) ([]RedactRule, error) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, &LoadError{Problems: []Problem{fromYAMLError(file, err)}}
	}
	if len(f.Docs) != 1 || f.Docs[0].Body == nil {
		return nil, &LoadError{Problems: []Problem{{File: file, Line: 1, Col: 1, Msg: "want one YAML document holding a list of rules",
			Hint: "- {name: my-host, regex: 'gpu-node-\\d+', replace: 'node{n}'}"}}}
	}
	seq, ok := f.Docs[0].Body.(*ast.SequenceNode)
	if !ok {
		tk := f.Docs[0].Body.GetToken()
		return nil, &LoadError{Problems: []Problem{{File: file, Line: tk.Position.Line, Col: tk.Position.Column,
			Msg: "redaction rules must be a list", Hint: "start each rule with `- name: ...`"}}}
	}
	var rules []RedactRule
	var probs []Problem
	seen := map[string]int{}
	for _, n := range seq.Values {
		tk := n.GetToken()
		at := func(msg, hint string) {
			probs = append(probs, Problem{File: file, Line: tk.Position.Line, Col: tk.Position.Column, Msg: msg, Hint: hint})
		}
		m, ok := n.(*ast.MappingNode)
		if !ok {
			at("a rule must be a mapping", "{name: ..., regex: ..., replace: ...}")
			continue
		}
		var rule RedactRule
		if err := yaml.NodeToValue(n, &rule, yaml.DisallowUnknownField()); err != nil {
			p := fromYAMLError(file, err)
			p.Hint = "a rule has name, regex, replace and optionally keep and disable"
			probs = append(probs, p)
			continue
		}
		if line, dup := seen[rule.Name]; dup && rule.Name != "" {
			at(fmt.Sprintf("rule %q is defined twice (first at line %d)", rule.Name, line), "keep one")
			continue
		}
		seen[rule.Name] = tk.Position.Line
		if !rule.Disable {
			if field, err := rule.checkField(); err != nil {
				tk = keyToken(m, field)
				at(err.Error(), "")
				continue
			}
		} else if !nameRE.MatchString(rule.Name) {
			at(fmt.Sprintf("name %q must be lower-case letters, digits and dashes", rule.Name), "")
			continue
		}
		rules = append(rules, rule)
	}
	if len(probs) > 0 {
		return nil, &LoadError{Problems: probs}
	}
	return rules, nil
}

// MergeRedactRules overlays rules from a file on base: a rule with a base rule's name replaces
// it in place (or switches it off with disable: true), a new name is appended.
func MergeRedactRules(base, extra []RedactRule) []RedactRule {
	out := append([]RedactRule(nil), base...)
	for _, e := range extra {
		replaced := false
		for i := range out {
			if out[i].Name == e.Name {
				out[i], replaced = e, true
				break
			}
		}
		if !replaced && !e.Disable {
			out = append(out, e)
		}
	}
	return out
}
