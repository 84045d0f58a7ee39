package fault

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Def describes one kind: what it does, the fields it accepts and needs, its defaults and its
// behaviour.
type Def struct {
	Kind     Kind
	Summary  string
	Fields   []string // accepted besides kind
	Required []string
	// DefaultCode and DefaultStatus are what ExitCode and HTTPStatus return when the spec
	// leaves code and status out (0: the kind neither ends the process nor answers).
	DefaultCode, DefaultStatus int
	// EndsBind marks a kind that decides how binding the port ends; a run has at most one.
	EndsBind bool
	// Fault is the kind's behaviour: Predict always, the live-effect interfaces it implements.
	Fault Fault
}

var registry = map[Kind]Def{}

// register adds a kind; each kind's file calls it from init.
func register(d Def) {
	if _, dup := registry[d.Kind]; dup {
		panic("fault: kind registered twice: " + string(d.Kind))
	}
	if d.Fault == nil {
		panic("fault: kind registered without behaviour: " + string(d.Kind))
	}
	registry[d.Kind] = d
}

// Lookup returns the definition of kind.
func Lookup(kind Kind) (Def, bool) {
	d, ok := registry[kind]
	return d, ok
}

// Kinds lists every registered kind, sorted.
func Kinds() []Kind {
	ks := make([]Kind, 0, len(registry))
	for k := range registry {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i] < ks[j] })
	return ks
}

func kindList() string {
	names := make([]string, 0, len(registry))
	for _, k := range Kinds() {
		names = append(names, string(k))
	}
	return strings.Join(names, ", ")
}

// Field lists shared by the kinds: when a fault starts, and when it starts and how long it lasts.
var (
	timing = []string{FieldAt, FieldAfterLine}
	window = []string{FieldAt, FieldAfterLine, FieldFor}
)

// fields joins field lists into a new slice.
func fields(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func checkStatus(s Spec) error {
	if s.Status != 0 && (s.Status < 100 || s.Status > 599 || http.StatusText(s.Status) == "") {
		return fmt.Errorf("fault %s: status %d is not an HTTP status; use e.g. 500, 502 or 503", s.Kind, s.Status)
	}
	return nil
}

func checkExitCode(s Spec) error {
	if s.Code < 0 || s.Code > 255 {
		return fmt.Errorf("fault %s: code %d is not an exit status; use 0..255 (137 = killed by SIGKILL)", s.Kind, s.Code)
	}
	return nil
}

func checkStatusAndCode(s Spec) error { return errors.Join(checkStatus(s), checkExitCode(s)) }
