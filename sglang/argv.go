package sglang

import (
	"strconv"
)

// Argv renders the arguments back as flags: --model-path first, then every flag whose value
// differs from the default, in table order, "--flag value" (or "--flag=-value" where the
// value starts with a dash). ParseArgs(a.Argv()) == a.
func (a ServerArgs) Argv() []string {
	def := DefaultServerArgs()
	var out []string
	// A value that argparse would take for an option ("-x") must be glued on with "=".
	kv := func(name, v string) {
		if looksLikeFlag(v) {
			out = append(out, name+"="+v)
		} else {
			out = append(out, name, v)
		}
	}
	kv("--model-path", a.ModelPath)
	for i := range argSpecs {
		s := &argSpecs[i]
		if s.names[0] == "--model-path" {
			continue
		}
		name := s.names[0]
		switch p := s.get(&a).(type) {
		case *string:
			if *p != *s.get(&def).(*string) {
				kv(name, *p)
			}
		case *int:
			if *p != *s.get(&def).(*int) {
				out = append(out, name, strconv.Itoa(*p))
			}
		case **int:
			if *p != nil {
				out = append(out, name, strconv.Itoa(**p))
			}
		case *float64:
			if *p != *s.get(&def).(*float64) {
				out = append(out, name, strconv.FormatFloat(*p, 'g', -1, 64))
			}
		case **float64:
			if *p != nil {
				out = append(out, name, strconv.FormatFloat(**p, 'g', -1, 64))
			}
		case *bool:
			if *p {
				out = append(out, name)
			}
		case *[]int:
			if len(*p) > 0 {
				out = append(out, name)
				for _, n := range *p {
					out = append(out, strconv.Itoa(n))
				}
			}
		}
	}
	return out
}
