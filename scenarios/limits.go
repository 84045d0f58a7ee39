package scenarios

import (
	"bytes"
	"fmt"
	"time"
)

// Limits on a scenario file. The size, nesting, node and mapping limits are checked by
// prescan before the YAML parser runs (its cost grows with nesting and, for a block mapping,
// with the square of its keys); counts and durations are checked as the values are decoded
// or validated. Real scenarios are far inside every one of them.
const (
	MaxFileBytes        = 2 << 20        // a scenario file, an inline recorded log included
	MaxRecordedLogBytes = 8 << 20        // a recorded log file beside the scenario
	MaxDepth            = 32             // nested mappings, sequences and flow collections
	MaxNodes            = 4096           // mapping keys, sequence items and flow items in a file
	MaxMapKeys          = 512            // keys in one mapping
	MaxCount            = 10000          // shards, layers, GPUs, ranks, tokens and other counts
	MaxContextLen       = 1 << 24        // model.context_len, in tokens
	MaxDuration         = 24 * time.Hour // any one duration: a launch phase, a fault, an expectation
)

// limitProblem is a limit crossed at line:col (1-based).
func limitProblem(file string, line, col int, what string, limit string, value any, hint string) Problem {
	return Problem{File: file, Line: line, Col: col, Msg: fmt.Sprintf("%s: over the limit %s = %v", what, limit, value), Hint: hint}
}

// prescan checks data against MaxFileBytes, MaxDepth, MaxNodes and MaxMapKeys, and refuses
// anchors and aliases (their expansion is not bounded by the file's size), without parsing.
// It follows YAML's structure closely enough for those bounds: quoted scalars, comments,
// block scalars (skipped by indentation), block indentation and `- ` entries, and flow
// collections. A document it passes may still be invalid YAML; the parser says why.
func prescan(file string, data []byte) *Problem {
	if len(data) > MaxFileBytes {
		line := bytes.Count(data[:MaxFileBytes], []byte("\n")) + 1
		col := MaxFileBytes - bytes.LastIndexByte(data[:MaxFileBytes], '\n')
		p := limitProblem(file, line, col, fmt.Sprintf("the file is %d bytes", len(data)), "MaxFileBytes", MaxFileBytes,
			"keep a long recorded log in a file beside the scenario (timeline.recorded.log)")
		return &p
	}
	sc := scanner{file: file}
	for lineNo, rest := 1, data; len(rest) > 0; lineNo++ {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if p := sc.line(lineNo, bytes.TrimSuffix(line, []byte("\r"))); p != nil {
			return p
		}
	}
	return nil
}

type blockLevel struct{ indent, keys int }

type scanner struct {
	file   string
	blocks []blockLevel // open block collections by indentation
	flow   []int        // open flow collections: keys so far ({) or -1 ([)
	nodes  int
	quote  byte // the open quoted scalar's quote, 0 when none
	// inScalar: inside a block scalar, whose lines are indented deeper than scalarIndent.
	inScalar     bool
	scalarIndent int
}

func (s *scanner) depth() int { return len(s.blocks) + len(s.flow) }

func (s *scanner) fail(line, col int, what, limit string, value any, hint string) *Problem {
	p := limitProblem(s.file, line, col, what, limit, value, hint)
	return &p
}

func (s *scanner) node(line, col int) *Problem {
	s.nodes++
	if s.nodes > MaxNodes {
		return s.fail(line, col, "too many keys and items", "MaxNodes", MaxNodes, "a scenario holds a few dozen fields")
	}
	return nil
}

func (s *scanner) push(line, col, indent int) *Problem {
	s.blocks = append(s.blocks, blockLevel{indent: indent})
	if s.depth() > MaxDepth {
		return s.fail(line, col, "nesting too deep", "MaxDepth", MaxDepth, "a scenario nests a few levels")
	}
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' }

// line scans one physical line of the file (without its newline).
func (s *scanner) line(n int, l []byte) *Problem {
	indent := 0
	for indent < len(l) && l[indent] == ' ' {
		indent++
	}
	blank := indent == len(l) || l[indent] == '#'
	if s.inScalar {
		if indent == len(l) || indent > s.scalarIndent {
			return nil
		}
		s.inScalar = false
	}
	if s.quote != 0 || len(s.flow) > 0 {
		return s.content(n, l, 0, s.quote == 0)
	}
	if blank || bytes.HasPrefix(l, []byte("---")) || bytes.HasPrefix(l, []byte("...")) {
		return nil
	}
	i, p := s.blockStart(n, l, indent)
	if p != nil {
		return p
	}
	return s.content(n, l, i, true)
}

// blockStart reads a block line's indentation and indicators: each `- ` (or `? `) opens a
// nested node at the column after it, and a `key:` counts towards its mapping. It returns
// where the line's content starts.
func (s *scanner) blockStart(n int, l []byte, indent int) (int, *Problem) {
	for len(s.blocks) > 0 && s.blocks[len(s.blocks)-1].indent > indent {
		s.blocks = s.blocks[:len(s.blocks)-1]
	}
	i := indent
	for {
		if len(s.blocks) == 0 || s.blocks[len(s.blocks)-1].indent < i {
			if p := s.push(n, i+1, i); p != nil {
				return i, p
			}
		}
		if i < len(l) && (l[i] == '-' || l[i] == '?') && (i+1 == len(l) || isSpace(l[i+1])) {
			if p := s.node(n, i+1); p != nil {
				return i, p
			}
			i++
			for i < len(l) && isSpace(l[i]) {
				i++
			}
			continue
		}
		break
	}
	if keyEnd(l[i:]) {
		lv := &s.blocks[len(s.blocks)-1]
		lv.keys++
		if lv.keys > MaxMapKeys {
			return i, s.fail(n, i+1, "too many keys in one mapping", "MaxMapKeys", MaxMapKeys, "a scenario mapping holds a few dozen keys")
		}
		if p := s.node(n, i+1); p != nil {
			return i, p
		}
	}
	return i, nil
}

// content scans a line from column i: quotes, comments, anchors and tags, block scalars and
// flow collections. atStart: i is at the start of a node, where a quote, a flow collection
// or an indicator may open.
func (s *scanner) content(n int, l []byte, i int, atStart bool) *Problem {
	content := i
	for ; i < len(l); i++ {
		c := l[i]
		if s.quote != 0 {
			switch {
			case s.quote == '"' && c == '\\':
				i++
			case c == s.quote && s.quote == '\'' && i+1 < len(l) && l[i+1] == '\'':
				i++
			case c == s.quote:
				s.quote = 0
			}
			continue
		}
		if c == '#' && (i == 0 || isSpace(l[i-1])) {
			return nil
		}
		if isSpace(c) {
			continue
		}
		if atStart {
			switch c {
			case '\'', '"':
				s.quote, atStart = c, false
				continue
			case '&', '*':
				return &Problem{File: s.file, Line: n, Col: i + 1, Msg: "YAML anchors and aliases are not allowed",
					Hint: "scenario files are plain data: write the value out"}
			case '!': // a tag: the node follows it
				for i+1 < len(l) && !isSpace(l[i+1]) {
					i++
				}
				continue
			case '|', '>':
				if len(s.flow) == 0 { // a block scalar: its lines are indented deeper than its key
					s.inScalar, s.scalarIndent = true, content
					return nil
				}
			}
		}
		reopen, p := s.flowChar(n, l, i, atStart)
		if p != nil {
			return p
		}
		atStart = reopen
	}
	return nil
}

// flowChar handles a character that may open, separate or close a flow collection, or end a
// key; reopen reports that a new node starts after it.
func (s *scanner) flowChar(n int, l []byte, i int, atStart bool) (reopen bool, p *Problem) {
	switch c := l[i]; {
	case c == '[' || c == '{':
		if !atStart && len(s.flow) == 0 {
			return false, nil // inside a block plain scalar: text
		}
		keys := -1
		if c == '{' {
			keys = 0
		}
		s.flow = append(s.flow, keys)
		if s.depth() > MaxDepth {
			return false, s.fail(n, i+1, "nesting too deep", "MaxDepth", MaxDepth, "a scenario nests a few levels")
		}
		return true, s.node(n, i+1)
	case (c == ']' || c == '}') && len(s.flow) > 0:
		s.flow = s.flow[:len(s.flow)-1]
	case c == ',' && len(s.flow) > 0:
		if top := &s.flow[len(s.flow)-1]; *top >= 0 {
			*top++
			if *top >= MaxMapKeys {
				return false, s.fail(n, i+1, "too many keys in one mapping", "MaxMapKeys", MaxMapKeys, "a scenario mapping holds a few dozen keys")
			}
		}
		return true, s.node(n, i+1)
	case c == ':' && (i+1 == len(l) || isSpace(l[i+1]) || len(s.flow) > 0):
		return true, nil
	}
	return false, nil
}

// keyEnd reports whether a block line's content is `key:` followed by a space or the end,
// outside quotes, before a comment or a flow collection.
func keyEnd(l []byte) bool {
	var quote byte
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case quote != 0:
			if c == '\\' && quote == '"' {
				i++
			} else if c == quote {
				quote = 0
			}
		case i == 0 && (c == '\'' || c == '"'):
			quote = c
		case i == 0 && (c == '[' || c == '{' || c == '|' || c == '>'):
			return false
		case c == '#' && i > 0 && isSpace(l[i-1]):
			return false
		case c == ':' && (i+1 == len(l) || isSpace(l[i+1])):
			return true
		}
	}
	return false
}
