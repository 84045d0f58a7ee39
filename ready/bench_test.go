package ready

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

// benchLog is a realistic startup-and-serve mix: progress bars, per-rank lines, access lines
// and Prefill/Decode stats (the bulk of a busy server's output).
func benchLog(n int) string {
	lines := []string{
		"[2026-03-01 12:00:00 TP0] Load weight begin. avail mem=137.34 GB",
		"Loading safetensors checkpoint shards:  43% Completed | 13/30 [00:17<00:22,  1.33s/it]",
		"Capturing batches (bs=64 avail_mem=13.90 GB):  50%|█████     | 18/36 [00:05<00:05,  3.37it/s]",
		"[2026-03-01 12:00:40 TP3] Allocating 32.00 GB host memory for hierarchical KV cache.",
		`[2026-03-01 12:01:00] INFO:     127.0.0.1:48908 - "GET /health HTTP/1.1" 200 OK`,
		"[2026-03-01 12:01:00 TP0] Prefill batch, #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, cuda graph: True, input throughput (token/s): 0.00",
		"[2026-03-01 12:01:01 TP0] Decode batch, #running-req: 1, #token: 41, token usage: 0.00, cuda graph: True, gen throughput (token/s): 5.41, #queue-req: 0",
		"[2026-03-01 12:01:02] some unrelated line from a library",
	}
	var b strings.Builder
	for i := range n {
		b.WriteString(lines[i%len(lines)])
		b.WriteByte('\n')
	}
	return b.String()
}

// BenchmarkLogWatch measures the CPU cost of the streaming watcher (split, parse, classify,
// rules) per line, and reports it as the share of one core a 100k-lines/s stream costs.
func BenchmarkLogWatch(b *testing.B) {
	const n = 100_000
	text := benchLog(n)
	spec := testSpec()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		m := newMachine(spec, t0)
		out := make(chan logLine, 256)
		done := make(chan struct{})
		go func() {
			for l := range out {
				m.onLine(l.ev, l.raw, t0)
			}
			close(done)
		}()
		if err := watchLog(context.Background(), strings.NewReader(text), NewSGLangParser(), out, nil); err != nil {
			b.Fatal(err)
		}
		close(out)
		<-done
	}
	perLine := b.Elapsed() / time.Duration(b.N*n)
	b.ReportMetric(float64(perLine.Nanoseconds()), "ns/line")
	b.ReportMetric(float64(perLine.Nanoseconds())*100_000/1e9*100, "%core@100klines/s")
}

func TestLineReader(t *testing.T) {
	in := "a\nb\r\n\nCapturing 1%\rCapturing 2%\rCapturing 3%\nlast"
	lr := NewLineReader(strings.NewReader(in))
	var got []string
	for {
		l, err := lr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l)
	}
	want := []string{"a", "b", "Capturing 1%", "Capturing 2%", "Capturing 3%", "last"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
	long := strings.Repeat("x", maxLine+10) + "\nend\n"
	lr = NewLineReader(strings.NewReader(long))
	first, _ := lr.Next()
	if len(first) != maxLine {
		t.Errorf("over-long line piece = %d bytes, want %d", len(first), maxLine)
	}
}

// With a poll of an hour every line below comes from an inotify wake-up: a follower at the
// end of the file sleeps until the writer writes.
func TestFollowFile(t *testing.T) {
	for _, poll := range []time.Duration{time.Millisecond, time.Hour} {
		t.Run(poll.String(), func(t *testing.T) { testFollowFile(t, poll) })
	}
}

func testFollowFile(t *testing.T, poll time.Duration) {
	path := t.TempDir() + "/server.log"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fr := FollowFile(ctx, path, poll) // the file does not exist yet
	defer fr.Close()
	lr := NewLineReader(fr)
	next := func() string {
		t.Helper()
		type r struct {
			l   string
			err error
		}
		ch := make(chan r, 1)
		go func() { l, err := lr.Next(); ch <- r{l, err} }()
		select {
		case got := <-ch:
			if got.err != nil {
				t.Fatal(got.err)
			}
			return got.l
		case <-time.After(5 * time.Second):
			t.Fatal("no line within 5s")
			return ""
		}
	}
	write := func(flag int, s string) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}
	write(os.O_APPEND, "one\n")
	if got := next(); got != "one" {
		t.Fatalf("got %q, want one", got)
	}
	write(os.O_APPEND, "two\n")
	if got := next(); got != "two" {
		t.Fatalf("got %q, want two (appended)", got)
	}
	write(os.O_TRUNC, "x\n") // truncated (copytruncate): start over
	if got := next(); got != "x" {
		t.Fatalf("got %q after truncation, want x", got)
	}
}
