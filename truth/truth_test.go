package truth

import (
	"testing"
	"time"
)

func TestDeathIsTheEarliestExitOrLastingWedge(t *testing.T) {
	s := time.Second
	cases := []struct {
		name      string
		build     func(*Truth)
		dead      time.Duration
		code      *int
		everReady bool
	}{
		{"exit", func(t *Truth) { t.Bind(s); t.BecomeReady(2 * s); t.Exit(9*s, 137) }, 9 * s, ptr(137), true},
		{"wedge before exit", func(t *Truth) { t.Bind(s); t.Wedge(5 * s); t.Exit(9*s, 1) }, 5 * s, ptr(1), false},
		{"wedge after ready", func(t *Truth) { t.Bind(s); t.BecomeReady(2 * s); t.Wedge(3 * s) }, 3 * s, nil, true},
		{"later wedge keeps the earlier death", func(t *Truth) { t.Exit(4*s, 2); t.Wedge(6 * s) }, 4 * s, ptr(2), false},
		{"unbind dies at the bind", func(t *Truth) { t.Bind(7 * s); t.Unbind(1) }, 7 * s, ptr(1), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var tr Truth
			c.build(&tr)
			if tr.Dead == nil || *tr.Dead != c.dead {
				t.Fatalf("dead %v, want %v", tr.Dead, c.dead)
			}
			if (tr.ExitCode == nil) != (c.code == nil) || c.code != nil && *tr.ExitCode != *c.code {
				t.Fatalf("exit code %v, want %v", tr.ExitCode, c.code)
			}
			if tr.EverReady() != c.everReady {
				t.Fatalf("EverReady %v, want %v", tr.EverReady(), c.everReady)
			}
		})
	}
}

func ptr(n int) *int { return &n }
