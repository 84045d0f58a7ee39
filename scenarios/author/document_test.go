package author

import (
	"context"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/scenarios"
)

// TestDocumentReadsBackExactly: logs whose text is awkward in YAML (leading blanks, trailing
// blank lines, document markers, comment signs, tabs, control and line-break characters)
// are written by the YAML library so that the embedded log reads back byte for byte.
func TestDocumentReadsBackExactly(t *testing.T) {
	head := "[2026-01-01 00:00:00] Init torch distributed begin.\n"
	cases := map[string]string{
		"plain":              head,
		"trailing blanks":    head + "\n\n",
		"leading space":      "  indented first line\n" + head,
		"leading tab":        "\tTab first\n" + head,
		"blank with spaces":  "   \n" + head,
		"document markers":   head + "---\n...\n",
		"comment sign":       "# not a comment\n" + head,
		"colons and dashes":  "- a: b\n" + head + "key: value # x\n",
		"control characters": head + "bell \a and esc \x1b[0m\n",
		"unicode breaks":     head + "nel \u0085 ls \u2028 ps \u2029 bom \ufeff\n",
		"quotes":             head + `she said "hi" and 'bye' \n` + "\n",
	}
	for name, log := range cases {
		t.Run(name, func(t *testing.T) {
			a, err := FromLog(context.Background(), strings.NewReader(log), Options{Source: "x.log", Rules: []scenarios.RedactRule{}})
			if err != nil {
				t.Fatal(err)
			}
			s, err := scenarios.Load("x.yaml", a.YAML)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.Timeline.Recorded.Inline; got != a.Log {
				t.Errorf("read back %q, want %q", got, a.Log)
			}
		})
	}
}

// TestFromLogStopsAtTheFileLimit: a capture larger than a scenario file may hold is refused
// once the limit is passed, with the line and the limit named, not read to its end.
func TestFromLogStopsAtTheFileLimit(t *testing.T) {
	line := "[2026-01-01 00:00:00] Init torch distributed begin.\n"
	n := scenarios.MaxFileBytes/len(line) + 10
	r := &countingReader{r: strings.NewReader(strings.Repeat(line, 4*n))}
	_, err := FromLog(context.Background(), r, Options{Source: "big.log"})
	if err == nil || !strings.Contains(err.Error(), "MaxFileBytes") || !strings.Contains(err.Error(), "at line") {
		t.Fatalf("err %v, want one naming the line and MaxFileBytes", err)
	}
	if r.n > 2*scenarios.MaxFileBytes {
		t.Errorf("read %d bytes of %d: the log was not streamed", r.n, 4*n*len(line))
	}
}

type countingReader struct {
	r interface{ Read([]byte) (int, error) }
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestFromLogRefusesAnOversizedScenario: a log under the limit whose scenario (the literal
// block indents every line) would be over it is refused with the size, not written.
func TestFromLogRefusesAnOversizedScenario(t *testing.T) {
	line := "[2026-01-01 00:00:00] x\n"
	log := strings.Repeat(line, scenarios.MaxFileBytes/len(line)-100)
	_, err := FromLog(context.Background(), strings.NewReader(log), Options{Source: "big.log", Rules: []scenarios.RedactRule{}})
	if err == nil || !strings.Contains(err.Error(), "the scenario would be") || !strings.Contains(err.Error(), "MaxFileBytes") {
		t.Fatalf("err %v, want one giving the scenario's size and MaxFileBytes", err)
	}
}
