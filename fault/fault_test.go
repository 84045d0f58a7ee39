package fault

import (
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
)

func TestHoldsHealth(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		want bool
	}{
		{Spec{Kind: FailRequests, Route: "/health", Status: 302}, true},
		{Spec{Kind: FailRequests, Status: 503}, true},
		{Spec{Kind: FailRequests, Route: "/health", Status: 302, Count: 100}, false},
		{Spec{Kind: FailRequests, Route: "/health", Status: 503, For: time.Minute}, false},
		{Spec{Kind: FailRequests, Route: "/health", Status: 503, AfterLine: "ready"}, false},
		{Spec{Kind: FailRequests, Route: "/v1/models", Status: 429}, false},
		{Spec{Kind: FailRequests, Route: "/health", Status: 200}, false},
		{Spec{Kind: Wedge}, false},
	} {
		if got := HoldsHealth(c.spec); got != c.want {
			t.Errorf("HoldsHealth(%+v) = %v, want %v", c.spec, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string // substring of the error; "" = valid
	}{
		{"crash at time", Spec{Kind: Crash, At: 25 * time.Second}, ""},
		{"crash after line", Spec{Kind: Crash, AfterLine: "Capture cuda graph end", Code: 137}, ""},
		{"missing kind", Spec{}, "kind is missing"},
		{"unknown kind", Spec{Kind: "explode"}, `unknown kind "explode"`},
		{"field not for kind", Spec{Kind: Wedge, Latency: time.Second}, `field "latency" does not apply`},
		{"slow health needs latency", Spec{Kind: SlowHealth}, `field "latency" is required`},
		{"flap needs period", Spec{Kind: Flap, At: time.Second}, `field "period" is required`},
		{"flap ok", Spec{Kind: Flap, Period: 3 * time.Second, For: time.Minute}, ""},
		{"negative at", Spec{Kind: Crash, At: -time.Second}, "durations must be >= 0"},
		{"bad status", Spec{Kind: FailRequests, Count: 2, Status: 999}, "not an HTTP status"},
		{"bad code", Spec{Kind: Crash, Code: 300}, "not an exit status"},
		{"negative count", Spec{Kind: FailRequests, Count: -1}, "count is -1"},
		{"route without slash", Spec{Kind: FailRequests, Count: 1, Route: "health"}, "must be a path"},
		{"redirect with location", Spec{Kind: FailRequests, Route: "/health", Status: 302, Location: "/v1/models"}, ""},
		{"location without 3xx", Spec{Kind: FailRequests, Status: 500, Location: "/x"}, "3xx status only"},
		{"location not a path", Spec{Kind: FailRequests, Status: 302, Location: "http://x/"}, "must be a path"},
		{"reset stream", Spec{Kind: ResetStream, Chunks: 3, Count: 1, Route: "/v1/chat/completions"}, ""},
		{"stale listener", Spec{Kind: StaleListener, Status: 200}, ""},
		{"errno98 timing not accepted", Spec{Kind: Errno98, At: time.Second}, `field "at" does not apply`},
		{"warmup proxy", Spec{Kind: WarmupProxyFailure, For: 10 * time.Second}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.spec.Validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("want valid, got %v", err)
			case c.want != "" && err == nil:
				t.Fatalf("want error containing %q, got nil", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Fatalf("want error containing %q, got %v", c.want, err)
			}
		})
	}
}

func TestEveryKindHasADefAndValidatesBare(t *testing.T) {
	for _, k := range Kinds() {
		d, ok := Lookup(k)
		if !ok || d.Summary == "" || d.Fault == nil {
			t.Fatalf("kind %s: no definition, summary or behaviour", k)
		}
		s := Spec{Kind: k}
		for _, f := range d.Required { // the smallest valid spec sets only required fields
			switch f {
			case FieldLatency:
				s.Latency = time.Second
			case FieldPeriod:
				s.Period = time.Second
			case FieldCount:
				s.Count = 1
			default:
				t.Fatalf("kind %s requires %s: teach this test a value", k, f)
			}
		}
		if err := s.Validate(); err != nil {
			t.Errorf("minimal %s: %v", k, err)
		}
	}
}

func TestValidateAllComposition(t *testing.T) {
	ok := []Spec{{Kind: SlowHealth, Latency: time.Second}, {Kind: Crash, At: time.Minute}, {Kind: Errno98}}
	if err := ValidateAll(ok); err != nil {
		t.Fatalf("composable faults rejected: %v", err)
	}
	bad := append(ok, Spec{Kind: StaleListener})
	if err := ValidateAll(bad); err == nil || !strings.Contains(err.Error(), "both decide how binding ends") {
		t.Fatalf("want conflict error, got %v", err)
	}
	if err := ValidateAll([]Spec{{Kind: "nope"}}); err == nil || !strings.Contains(err.Error(), "faults[0]") {
		t.Fatalf("want indexed error, got %v", err)
	}
}

func TestYAMLDurationsAndDefaults(t *testing.T) {
	src := "- kind: slow_health\n  at: 25s\n  for: 1m30s\n  latency: 1500ms\n- kind: crash\n  after_line: Capture cuda graph end\n"
	var specs []Spec
	if err := yaml.UnmarshalWithOptions([]byte(src), &specs, yaml.Strict()); err != nil {
		t.Fatal(err)
	}
	want := Spec{Kind: SlowHealth, At: 25 * time.Second, For: 90 * time.Second, Latency: 1500 * time.Millisecond}
	if specs[0] != want {
		t.Fatalf("got %+v want %+v", specs[0], want)
	}
	if specs[1].ExitCode() != 137 || (Spec{Kind: Errno98}).ExitCode() != 1 || (Spec{Kind: Wedge}).ExitCode() != 0 {
		t.Fatal("exit code defaults wrong")
	}
	if (Spec{Kind: WarmupProxyFailure}).HTTPStatus() != 502 || (Spec{Kind: FailRequests, Status: 429}).HTTPStatus() != 429 {
		t.Fatal("status defaults wrong")
	}
	var bad []Spec
	if err := yaml.UnmarshalWithOptions([]byte("- kind: crash\n  at: soon\n"), &bad, yaml.Strict()); err == nil {
		t.Fatal("want error for non-duration at")
	}
}

func TestActive(t *testing.T) {
	s := Spec{Kind: Wedge, At: 10 * time.Second, For: 5 * time.Second}
	for _, c := range []struct {
		trigger, now time.Duration
		want         bool
	}{{0, 9 * time.Second, false}, {0, 10 * time.Second, true}, {0, 15 * time.Second, false}, {5 * time.Second, 19 * time.Second, true}} {
		if got := s.Active(c.trigger, c.now); got != c.want {
			t.Errorf("Active(%v,%v)=%v want %v", c.trigger, c.now, got, c.want)
		}
	}
	if !(Spec{Kind: Wedge}).Active(0, time.Hour) {
		t.Error("For=0 must last forever")
	}
}
