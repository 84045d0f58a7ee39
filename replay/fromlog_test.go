package replay

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

func TestFromLog(t *testing.T) {
	sec := func(n int) time.Duration { return time.Duration(n) * time.Second }
	cases := []struct {
		name    string
		log     string
		start   time.Time
		offsets []time.Duration
		wantErr error
	}{
		{
			name: "headers and inherited lines",
			log: `[2025-06-14 08:12:01] server_args=ServerArgs(model_path='org/model-7b', tp_size=1)
[2025-06-14 08:12:03 TP0] Load weight begin. avail mem=22.70 GB
INFO:     127.0.0.1:40118 - "GET /get_model_info HTTP/1.1" 200 OK
[2025-06-14 08:12:10] The server is fired up and ready to roll!
`,
			start:   time.Date(2025, 6, 14, 8, 12, 1, 0, time.UTC),
			offsets: []time.Duration{0, sec(2), sec(2), sec(9)},
		},
		{
			name: "backwards time clamps and keeps file order",
			log: `[2025-03-02 10:04:40] Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)
[2025-03-02 10:04:51] The server is fired up and ready to roll!
[2025-03-02 10:04:49] INFO:     127.0.0.1:40312 - "POST /generate HTTP/1.1" 200 OK
[2025-03-02 06:06:00] The server is fired up and ready to roll!
[2025-03-02 10:04:55] INFO:     127.0.0.1:40312 - "POST /generate HTTP/1.1" 200 OK
`,
			start:   time.Date(2025, 3, 2, 10, 4, 40, 0, time.UTC),
			offsets: []time.Duration{0, sec(11), sec(11), sec(11), sec(15)},
		},
		{
			name: "day rollover",
			log: `[2025-10-04 23:59:58 TP0] Decode batch. #running-req: 4, #token: 9120, token usage: 0.05, cuda graph: True, gen throughput (token/s): 212.40, #queue-req: 0
[2025-10-05 00:00:38 TP0] Decode batch. #running-req: 4, #token: 9280, token usage: 0.05, cuda graph: True, gen throughput (token/s): 215.07, #queue-req: 0
`,
			start:   time.Date(2025, 10, 4, 23, 59, 58, 0, time.UTC),
			offsets: []time.Duration{0, sec(40)},
		},
		{
			name: "wrapper stamps are another clock when headers exist",
			log: `2025-02-10 17:05:29
2025-02-10 17:05:31 [2025-02-10 09:05:31 TP0] Load weight begin. avail mem=22.70 GB
2025-02-10 17:05:33
2025-02-10 17:05:37 [2025-02-10 09:05:37 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=7.52 GB, mem usage=15.18 GB.
`,
			start:   time.Date(2025, 2, 10, 9, 5, 31, 0, time.UTC),
			offsets: []time.Duration{0, 0, 0, sec(6)},
		},
		{
			name: "wrapper stamps when there is no header",
			log: `2025-02-10 17:05:31 INFO:     Started server process [1234]
2025-02-10 17:05:35 INFO:     Waiting for application startup.
`,
			start:   time.Date(2025, 2, 10, 17, 5, 31, 0, time.UTC),
			offsets: []time.Duration{0, sec(4)},
		},
		{
			name:    "no timestamps",
			log:     "Traceback (most recent call last):\nValueError: boom\n",
			offsets: []time.Duration{0, 0},
			wantErr: ErrNoTimestamps,
		},
		{name: "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tl, err := FromLogReader(strings.NewReader(c.log))
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("FromLogReader error = %v, want %v", err, c.wantErr)
			}
			if !tl.Start.Equal(c.start) {
				t.Errorf("Start = %v, want %v", tl.Start, c.start)
			}
			var got []time.Duration
			for _, e := range tl.Entries {
				got = append(got, e.At)
				if e.Op != OpLog || e.Stream != Stdout {
					t.Errorf("entry %v is %s on %s, want log on stdout", e.At, e.Op, e.Stream)
				}
			}
			if !slices.Equal(got, c.offsets) {
				t.Errorf("offsets = %v, want %v", got, c.offsets)
			}
			if err := tl.Validate(); err != nil {
				t.Errorf("Validate = %v", err)
			}
		})
	}
}

func TestFromLogKeepsEventsAndOrder(t *testing.T) {
	lines, err := sglang.Parse(strings.NewReader("[2025-06-14 08:12:01] The server is fired up and ready to roll!\nplain text\n"))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := FromLog(lines)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Entries) != len(lines) {
		t.Fatalf("%d entries from %d lines", len(tl.Entries), len(lines))
	}
	for i, l := range lines {
		e := tl.Entries[i].Event
		if e.Kind != l.Event.Kind || e.Text != l.Event.Text || !e.Time.Equal(l.Event.Time) {
			t.Errorf("entry %d event = %+v, want the line's %+v", i, e, l.Event)
		}
	}
	if k := tl.Entries[0].Event.Kind; k != sglang.KindReady {
		t.Errorf("first entry kind = %v, want ready", k)
	}
}

// A canonical, monotonic log replayed through the Player and the default writer sink comes
// out byte for byte: offsets and header stamping lose nothing.
func TestFromLogReplaysVerbatim(t *testing.T) {
	const log = `[2026-02-10 09:00:01] server_args=ServerArgs(model_path='org/model-7b', tp_size=1)
[2026-02-10 09:00:03] Load weight begin. avail mem=78.20 GB
INFO:     Started server process [4242]
[2026-02-10 09:00:12] Capture cuda graph end. Time elapsed: 7.02 s. mem usage=0.61 GB. avail mem=30.44 GB.
[2026-02-10 09:00:15] The server is fired up and ready to roll!
`
	tl, err := FromLogReader(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := NewPlayer(tl, Manual(tl.Start.Add(time.Hour)), NewWriterSink(&out, nil)).Play(context.Background()); err != nil {
		t.Fatal(err)
	}
	if out.String() != log {
		t.Fatalf("replayed log differs:\n got: %q\nwant: %q", out.String(), log)
	}
}
