package scenarios

import (
	"fmt"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// renderLog writes a compiled timeline as the log a real run would leave.
func renderLog(c *Compiled) string {
	var b strings.Builder
	for _, e := range c.Timeline.Entries {
		if e.Op == replay.OpLog {
			b.WriteString(sglang.Render(e.Event, c.Profile))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// TestRecordedRoundTrip replays the logs generated from catalogue scenarios as recorded
// scenarios: the same kinds in the same order, and the same bind and exit.
func TestRecordedRoundTrip(t *testing.T) {
	for _, name := range []string{"hicache-300-host-oom", "hicache-48-cold-start", "nccl-init-error", "cuda-oom-capture", "errno98-after-load"} {
		t.Run(name, func(t *testing.T) {
			c := compileNamed(t, name, 5)
			text := renderLog(c)
			doc := fmt.Sprintf("name: r\nsummary: s\nsources: [{ref: generated}]\nprofile: %s\nhost: %s\nlaunch: {flags: %s}\ntimeline:\n  recorded:\n    inline: |\n%s\nexpect: {tolerance: 1s, verdict: failed-fast}\n",
				c.Profile.Name, "rtx-pro-6000-x8", strings.Join(c.Args.Argv(), " "), indent(text, "      "))
			s, err := Load("r.yaml", []byte(doc))
			if err != nil {
				t.Fatal(err)
			}
			r, err := Compile(s, 1)
			if err != nil {
				t.Fatal(err)
			}
			want, got := kinds(c.Timeline), kinds(r.Timeline)
			if strings.Join(want, " ") != strings.Join(got, " ") {
				t.Fatalf("kinds differ:\nwant %v\ngot  %v", want, got)
			}
			wp, gp := c.Predict(), r.Predict()
			if show(wp.Bound) == "never" != (show(gp.Bound) == "never") || (wp.ExitCode == nil) != (gp.ExitCode == nil) {
				t.Fatalf("ops differ: generated bound %s exit %v, recorded bound %s exit %v", show(wp.Bound), wp.ExitCode, show(gp.Bound), gp.ExitCode)
			}
			if wp.ExitCode != nil && *wp.ExitCode != *gp.ExitCode {
				t.Errorf("exit %d, recorded %d", *wp.ExitCode, *gp.ExitCode)
			}
		})
	}
}

func kinds(tl replay.Timeline) []string {
	var out []string
	for _, e := range tl.Entries {
		if e.Op == replay.OpLog {
			out = append(out, e.Event.Kind.String())
		}
	}
	return out
}

func indent(s, pre string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = pre + l
	}
	return strings.Join(lines, "\n")
}
