package author

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// capturedLog is a log read once, line by line: redacted, re-parsed, with what reading saw.
type capturedLog struct {
	text      string        // the redacted log, one line per parsed line, each ending in "\n"
	lines     []sglang.Line // text, parsed
	physical  int           // physical input lines
	digest    string        // the input's sha256, first 6 bytes in hex
	notes     []string
	unparsed  []LineIssue
	redaction []scenarios.RedactCount
}

// readLog streams r through the redactor: one output line per parsed input line (redraws and
// glued bars land on lines of their own, CRLF becomes LF), each redacted before anything is
// inferred from it, so the flags and probes in the file say exactly what the embedded log
// says. Only the redacted log and its parse are kept, and reading stops with an error once
// the log outgrows limit bytes: memory is bounded by the scenario it can become.
func readLog(ctx context.Context, r io.Reader, red *scenarios.Redactor, limit int) (*capturedLog, error) {
	h := sha256.New()
	sc := sglang.NewScanner(io.TeeReader(r, h))
	p := sglang.NewParser()
	var text strings.Builder
	var caps captureStats
	lg := &capturedLog{}
	invalid, blank := false, true
	for n := 0; sc.Scan(); n++ {
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		orig := sc.Line()
		caps.add(orig)
		blank = blank && strings.TrimSpace(orig.Raw) == ""
		line := red.Line(orig.Raw)
		if !utf8.ValidString(line) { // a YAML scalar holds text: bytes that are not UTF-8 cannot read back
			line, invalid = strings.ToValidUTF8(line, "\uFFFD"), true
		}
		l, err := reparse(p, line, orig)
		if err != nil {
			return nil, err
		}
		if l.Event.Kind != orig.Event.Kind {
			lg.notes = append(lg.notes, fmt.Sprintf("line %d: redaction turned a %s line into %s; check the rules", orig.No, orig.Event.Kind, l.Event.Kind))
		}
		if u, ok := unparsed(orig, l); ok {
			lg.unparsed = append(lg.unparsed, u)
		}
		lg.lines = append(lg.lines, l)
		text.WriteString(line)
		text.WriteByte('\n')
		if text.Len() > limit {
			return nil, fmt.Errorf("author: the redacted log passes %d bytes at line %d: a scenario file holds at most %d (scenarios.MaxFileBytes); cut the capture to the part that matters (the startup and its ending) and author that", limit, orig.No, scenarios.MaxFileBytes)
		}
		lg.physical = orig.No
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("author: reading the log (after %d lines): %w", lg.physical, err)
	}
	if blank {
		return nil, errors.New("author: the log is empty: capture the server's output (stdout and stderr) from the launch on")
	}
	lg.text = text.String()
	notes := caps.notes()
	if invalid {
		notes = append(notes, "bytes that are not valid UTF-8 were replaced with U+FFFD (a YAML file holds text only)")
	}
	lg.notes = append(notes, lg.notes...)
	lg.redaction = red.Counts()
	lg.digest = hex.EncodeToString(h.Sum(nil)[:6])
	return lg, nil
}

// reparse parses one redacted line; a rule whose replacement breaks the line is an error.
func reparse(p *sglang.Parser, line string, orig sglang.Line) (sglang.Line, error) {
	var got []sglang.Line
	if !strings.ContainsAny(line, "\n") {
		got = p.Feed(line)
	}
	if len(got) != 1 {
		return sglang.Line{}, fmt.Errorf("author: redaction changed the line count at input line %d: a rule's replacement contains a line break or a carriage return; fix the rule", orig.No)
	}
	return got[0], nil
}
