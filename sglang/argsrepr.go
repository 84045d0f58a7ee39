package sglang

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Repr prints the args the way the server_args= line shows them: a dataclass repr
// ServerArgs(model_path='...', ...) or, with dict=true (era C), {'model_path': '...', ...}.
// Only the modelled fields appear, in table order.
func (a ServerArgs) Repr(dict bool) string {
	var b strings.Builder
	if dict {
		b.WriteByte('{')
	} else {
		b.WriteString("ServerArgs(")
	}
	for i := range argSpecs {
		s := &argSpecs[i]
		key := strings.ReplaceAll(strings.TrimPrefix(s.names[0], "--"), "-", "_")
		var v string
		switch p := s.get(&a).(type) {
		case *string:
			if *p == "" && key != "model_path" {
				v = "None"
			} else {
				v = pyRepr(*p)
			}
		case *int:
			v = strconv.Itoa(*p)
		case **int:
			v = "None"
			if *p != nil {
				v = strconv.Itoa(**p)
			}
		case *float64:
			v = pyFloat(*p)
		case **float64:
			v = "None"
			if *p != nil {
				v = pyFloat(**p)
			}
		case *bool:
			v = pyBool(*p)
		case *[]int:
			v = "None"
			if len(*p) > 0 {
				s := make([]string, len(*p))
				for i, n := range *p {
					s[i] = strconv.Itoa(n)
				}
				v = "[" + strings.Join(s, ", ") + "]"
			}
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if dict {
			b.WriteString("'" + key + "': " + v)
		} else {
			b.WriteString(key + "=" + v)
		}
	}
	if dict {
		b.WriteByte('}')
	} else {
		b.WriteByte(')')
	}
	return b.String()
}

func pyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

func pyRepr(s string) string { return "'" + strings.ReplaceAll(s, "'", `\'`) + "'" }

// ReprItem is one key and its value as printed in a server_args repr.
type ReprItem struct{ Key, Value string }

// SplitRepr parses the server_args text of either form, the dataclass repr
// "ServerArgs(model_path='m', tp_size=8, ...)" (eras A/B) or the era-C dict
// "{'model_path': 'm', 'tp_size': 8, ...}", into its top-level items. Values stay as printed
// (quotes, lists and nested reprs included). A line cut short (a truncated paste) yields the
// items before the cut and an error saying where it stopped.
func SplitRepr(s string) ([]ReprItem, error) {
	s = strings.TrimSpace(s)
	var body string
	dict := false
	switch {
	case strings.HasPrefix(s, "{"):
		dict, body = true, s[1:]
	case strings.HasPrefix(s, "ServerArgs("):
		body = s[len("ServerArgs("):]
	default:
		return nil, fmt.Errorf("server_args is neither ServerArgs(...) nor {...}: %.40q", s)
	}
	var items []ReprItem
	var depth []byte
	start := 0
	quote := byte(0)
	closed := false
	for i := 0; i < len(body) && !closed; i++ {
		c := body[i]
		if quote != 0 {
			switch c {
			case '\\':
				i++
			case quote:
				quote = 0
			}
			continue
		}
		switch c {
		case '\'', '"':
			quote = c
		case '(', '[', '{':
			depth = append(depth, c)
		case ')', ']', '}':
			if len(depth) == 0 {
				items = appendReprItem(items, body[start:i], dict)
				closed = true
				continue
			}
			depth = depth[:len(depth)-1]
		case ',':
			if len(depth) == 0 {
				items = appendReprItem(items, body[start:i], dict)
				start = i + 1
			}
		}
	}
	if !closed {
		return items, fmt.Errorf("server_args repr is cut short after %d items (a truncated line?)", len(items))
	}
	return items, nil
}

func appendReprItem(items []ReprItem, piece string, dict bool) []ReprItem {
	piece = strings.TrimSpace(piece)
	if piece == "" {
		return items
	}
	var k, v string
	var ok bool
	if dict {
		k, v, ok = strings.Cut(piece, ":")
		k = strings.Trim(strings.TrimSpace(k), `'"`)
	} else {
		k, v, ok = strings.Cut(piece, "=")
	}
	if !ok {
		return items
	}
	return append(items, ReprItem{Key: strings.TrimSpace(k), Value: strings.TrimSpace(v)})
}

// PyString unquotes a Python str repr ('x' or "x"); ok is false for anything else.
func PyString(v string) (string, bool) {
	if len(v) < 2 || (v[0] != '\'' && v[0] != '"') || v[len(v)-1] != v[0] {
		return "", false
	}
	inner := v[1 : len(v)-1]
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		if inner[i] == '\\' && i+1 < len(inner) {
			i++
		}
		b.WriteByte(inner[i])
	}
	return b.String(), true
}

// ReprValue is the value printed for key in a server_args repr ("" and false when absent).
// A repr cut short still yields the items before the cut.
func ReprValue(repr, key string) (string, bool) {
	items, _ := SplitRepr(repr)
	for _, it := range items {
		if it.Key == key {
			return it.Value, true
		}
	}
	return "", false
}

// ReprFlags inverts Repr: the launch flags a server_args repr (either form) stands for. Every
// item ServerArgs models whose value differs from SGLang's default becomes a flag. Items it
// cannot carry (unmodelled fields, values with blanks, which a whitespace-separated argv
// cannot hold, values ParseArgs rejects) are returned as dropped, each with the reason.
func ReprFlags(repr string) (argv []string, dropped []string, err error) {
	items, err := SplitRepr(repr)
	if len(items) == 0 {
		if err == nil {
			err = fmt.Errorf("server_args has no items")
		}
		return nil, nil, err
	}
	defaults, _ := SplitRepr(DefaultServerArgs().Repr(false))
	def := map[string]string{}
	for _, d := range defaults {
		def[d.Key] = d.Value
	}
	got := map[string]string{}
	unmodelled := 0
	for _, it := range items {
		if _, ok := def[it.Key]; ok {
			got[it.Key] = it.Value
		} else {
			unmodelled++
		}
	}
	if unmodelled > 0 {
		dropped = append(dropped, fmt.Sprintf("%d server_args fields incident-replay does not model (kept in the log line)", unmodelled))
	}
	model, ok := PyString(got["model_path"])
	if !ok || model == "" {
		return nil, dropped, fmt.Errorf("server_args has no model_path string")
	}
	argv = []string{"--model-path", model}
	for _, d := range defaults {
		v, ok := got[d.Key]
		if !ok || d.Key == "model_path" || v == d.Value || v == "None" {
			continue
		}
		flag := "--" + strings.ReplaceAll(d.Key, "_", "-")
		vals, set := reprFlagValues(v, d.Value)
		if !set {
			continue
		}
		if slices.ContainsFunc(vals, func(s string) bool { return s == "" || strings.ContainsAny(s, " \t\n") }) {
			dropped = append(dropped, fmt.Sprintf("%s: value %s cannot be written as a flag (launch.flags has no quoting)", flag, v))
			continue
		}
		cand := append(append(slices.Clone(argv), flag), vals...)
		if _, perr := ParseArgs(cand); perr != nil {
			dropped = append(dropped, fmt.Sprintf("%s %s: %v", flag, strings.Join(vals, " "), perr))
			continue
		}
		argv = cand
	}
	return argv, dropped, err
}

// reprFlagValues is the flag values of one repr value v whose default prints as def; set is
// false for a value no flag sets.
func reprFlagValues(v, def string) (vals []string, set bool) {
	switch {
	case v == "True":
		return []string{}, true
	case v == "False":
		return nil, false // store_true flags default to False; a False that differs is a repr quirk
	case strings.HasPrefix(v, "["):
		for p := range strings.SplitSeq(strings.Trim(v, "[]"), ",") {
			if p = strings.TrimSpace(p); p != "" {
				vals = append(vals, p)
			}
		}
		return vals, true
	}
	if s, ok := PyString(v); ok {
		v = s
	}
	if num, err := strconv.ParseFloat(v, 64); err == nil && !strings.Contains(def, ".") && strings.HasSuffix(v, ".0") {
		v = strconv.FormatFloat(num, 'f', -1, 64) // 8.0 for an int field
	}
	return []string{v}, true
}
