package replay

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/incident-replay/incident-replay/sglang"
)

// RenderFunc turns an event into the text of one log line, without the newline.
type RenderFunc func(sglang.Event) string

// WriterOption configures a WriterSink.
type WriterOption func(*WriterSink)

// WithProfile renders lines as profile p's SGLang version prints them (sglang.Render).
func WithProfile(p sglang.Profile) WriterOption {
	return func(w *WriterSink) {
		w.render = func(dst []byte, e sglang.Event) []byte { return sglang.AppendRender(dst, e, p) }
	}
}

// WithRender renders lines with f instead of an SGLang profile.
func WithRender(f RenderFunc) WriterOption {
	return func(w *WriterSink) {
		w.render = func(dst []byte, e sglang.Event) []byte { return append(dst, f(e)...) }
	}
}

// WriterSink writes OpLog steps as lines to one writer per stream and ignores other ops.
// It is safe to share between players.
type WriterSink struct {
	mu     sync.Mutex
	out    [2]io.Writer
	render func(dst []byte, e sglang.Event) []byte
	buf    []byte
}

// NewWriterSink writes stdout lines to stdout and stderr lines to stderr; a nil stderr
// merges them into stdout, as `2>&1` would. Lines are rendered with the era C profile
// unless an option says otherwise.
func NewWriterSink(stdout, stderr io.Writer, opts ...WriterOption) *WriterSink {
	if stderr == nil {
		stderr = stdout
	}
	w := &WriterSink{out: [2]io.Writer{stdout, stderr}}
	WithProfile(sglang.ProfileFor(sglang.EraC))(w)
	for _, o := range opts {
		o(w)
	}
	return w
}

// Emit writes s's line followed by "\n" in one Write call, so lines from concurrent
// writers sharing an io.Writer do not interleave mid-line.
func (w *WriterSink) Emit(_ context.Context, s Step) error {
	if s.Op != OpLog {
		return nil
	}
	if int(s.Stream) >= len(w.out) {
		return errors.New("replay: writer sink: unknown stream " + s.Stream.String())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.render(w.buf[:0], s.Event), '\n')
	_, err := w.out[s.Stream].Write(w.buf)
	return err
}
