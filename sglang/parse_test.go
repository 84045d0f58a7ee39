package sglang

import (
	"bytes"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"
)

func TestLongLines(t *testing.T) {
	// A 20 kB server_args line and a 200 kB batch dump, both wider than bufio's 64 KiB default
	// in the second case, must come back whole.
	args := "[2026-05-12 10:00:00] server_args=ServerArgs(model_path='org/m', " + strings.Repeat("x_flag=None, ", 1600) + "port=30000)"
	dump := "[2025-08-08 19:24:10 TP0] self.cur_batch.reqs=[" + strings.Repeat("Req(rid=7c0e), ", 14000) + "]"
	in := args + "\n" + dump + "\n"
	lines, err := Parse(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0].Event.Kind != KindServerArgs || lines[0].Raw != args || lines[1].Raw != dump || len(args) < 20_000 {
		t.Fatalf("long lines: %d lines, first kind %v", len(lines), lines[0].Event.Kind)
	}
	for _, l := range lines {
		checkLine(t, l)
	}
}

// TestIncrementalMatchesParse feeds the corpus one physical line at a time, as a tailer does,
// and through a reader that returns one byte per Read; both must equal Parse.
func TestIncrementalMatchesParse(t *testing.T) {
	in, err := readFile("testdata/corpus/tb.log")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Parse(strings.NewReader(in))
	p := NewParser()
	var got []Line
	for _, phys := range strings.SplitAfter(in, "\n") {
		if phys == "" {
			continue
		}
		got = append(got, p.Feed(strings.TrimSuffix(phys, "\n"))...)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatal("Feed line by line differs from Parse")
	}
	// Push with arbitrary chunking (bytes as a tailer sees them) gives the same Lines.
	pp := NewParser()
	var pushed []Line
	for i := 0; i < len(in); i += 7 {
		pushed = append(pushed, pp.Push([]byte(in[i:min(i+7, len(in))]))...)
	}
	pushed = append(pushed, pp.Flush()...)
	if !reflect.DeepEqual(pushed, want) {
		t.Fatal("Push in 7-byte chunks differs from Parse")
	}
	slow, err := Parse(iotest.OneByteReader(strings.NewReader(in)))
	if err != nil || !reflect.DeepEqual(slow, want) {
		t.Fatalf("one-byte reader differs from Parse: %v", err)
	}
}

func TestReadErrorKeepsLines(t *testing.T) {
	r := io.MultiReader(strings.NewReader("[2026-02-24 11:39:23] The server is fired up and ready to roll!\n"), iotest.ErrReader(io.ErrUnexpectedEOF))
	lines, err := Parse(r)
	if err != io.ErrUnexpectedEOF || len(lines) != 1 || lines[0].Event.Kind != KindReady {
		t.Fatalf("got %d lines, err %v", len(lines), err)
	}
}

func TestEdgeLines(t *testing.T) {
	cases := []struct {
		in    string
		kinds []Kind
	}{
		{"", nil},
		{"\n", []Kind{KindBlank}},
		{"\r\n", []Kind{KindBlank}},
		{"\r\r\n", []Kind{KindBlank}},
		{"   \n", []Kind{KindBlank}},
		{"[2026-02-24 11:39:23]\n", []Kind{KindUnknown}},
		{"[2026-02-24 11:39:23] \n", []Kind{KindUnknown}},
		{"[2026-02-24 11:39:23 TP] x\n", []Kind{KindUnknown}},
		{"\xff\xfe[2026-02-24 11:39:23] Killed\n", []Kind{KindKilled}},
		{"Prefill batch. \n", []Kind{KindPrefill}},
		{"Prefill batch [x], #new-seq: 1\n", []Kind{KindUnknown}},
		{"Decode batch, iter: 3, #token: 1\n", []Kind{KindDecode}},
		{"a\rb\rc", []Kind{KindUnknown, KindUnknown, KindUnknown}},
	}
	for _, tc := range cases {
		lines, err := Parse(strings.NewReader(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		var kinds []Kind
		for _, l := range lines {
			kinds = append(kinds, l.Event.Kind)
			checkLine(t, l)
		}
		if !reflect.DeepEqual(kinds, tc.kinds) {
			t.Errorf("%q: kinds %v, want %v", tc.in, kinds, tc.kinds)
		}
	}
}

// FuzzParse: any input parses without panic, loses no line, and every line with a full header
// (or none) renders back to its text.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"[2026-02-24 11:39:22 TP0] Prefill batch, #new-seq: 1, #new-token: 1, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, input throughput (token/s): 0.30, cuda graph: False\n",
		"sglang-1  | 2025-04-02 10:11:12,345 - __main__ - INFO - [2025-04-02 10:11:12 TP0] Load weight begin. avail mem=21.40 GB\n",
		"Capturing batches (bs=64 avail_mem=30.02 GB):   0%|          | 0/12 [00:00<?, ?it/s][2025-10-02 11:22:40 TP0] Registering\r\n",
		"[09:17:42 TP0] Decode batch. #running-req: 4\n[03-14 06:02:19] x\n",
		"1780000000123\t2026-05-28T20:26:40.123Z\t  File \"x.py\", line 1, in f\nValueError: Not enough host memory available. Requesting 3 GB but only have 1 GB free.\n",
		"\x1b[32mINFO\x1b[0m:     127.0.0.1:1 - \"GET /health HTTP/1.1\" 200 OK",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lines, err := Parse(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		n := bytes.Count(in, []byte("\n"))
		if len(in) > 0 && in[len(in)-1] != '\n' {
			n++
		}
		if len(lines) < n {
			t.Fatalf("%d physical lines, %d parsed", n, len(lines))
		}
		if len(lines) > 0 && lines[len(lines)-1].No != n {
			t.Fatalf("last line number %d, want %d", lines[len(lines)-1].No, n)
		}
		for _, l := range lines {
			if !utf8.ValidString(l.Raw) {
				continue // invalid UTF-8 may be rewritten by ANSI stripping; never panics
			}
			checkLine(t, l)
		}
	})
}

// FuzzParseArgs: any argv parses or fails with an *ArgsError; what parses renders back to argv
// that parses to the same value.
func FuzzParseArgs(f *testing.F) {
	f.Add("--model-path m --tp 8 --hicache-size 300 --enable-hierarchical-cache")
	f.Add("--model=m --cuda-graph-bs 1 2 4 --mem-fraction-static=0.8 --port -1")
	f.Add("--model-path m --foo")
	f.Fuzz(func(t *testing.T, s string) {
		argv := strings.Fields(s)
		a, err := ParseArgs(argv)
		if err != nil {
			if _, ok := err.(*ArgsError); !ok {
				t.Fatalf("error %T %v is not *ArgsError", err, err)
			}
			return
		}
		b, err := ParseArgs(a.Argv())
		if err != nil || !reflect.DeepEqual(a, b) {
			t.Fatalf("Argv round trip of %q: %v\n%+v\n%+v", argv, err, a, b)
		}
	})
}
