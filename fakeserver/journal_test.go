package fakeserver

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// recordCases cover every field, omitempty on and off, and the strings json escapes.
func recordCases() []Record {
	code, zero := 137, 0
	wall := time.Date(2026, 2, 19, 16, 30, 1, 123456000, time.UTC)
	return []Record{
		{Seq: 1, At: 0, Type: RecState, State: StateBound, Wall: wall},
		{Seq: 2, At: -5, Type: RecState, State: StateDead, Code: &code, Fault: "crash", Wall: wall},
		{Seq: 3, At: time.Hour, Type: RecState, State: StateDead, Code: &zero, Wall: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{Seq: 4, Type: RecLog, Stream: "stderr", Kind: "access", Line: `[2026-02-19 16:30:01] INFO:     127.0.0.1:1 - "GET /health?a=<b>&c HTTP/1.1" 200 OK`, Wall: wall},
		{Seq: 5, Type: RecRequest, Method: "GET", Route: "/v1/models", Status: 200, Latency: 7, Client: "[::1]:5", Internal: true, Outcome: "reset", Wall: wall},
		{Seq: 6, Type: RecLog, Line: "tab\there\nnl\rcr\bbs\ffeed\x00nul\x1fus\x7fdel \\ back \"q\"", Wall: wall},
		{Seq: 7, Type: RecLog, Line: "utf8 é ✓ 🚀, bad \xff\xfe, cut \xe2\x82, seps \u2028 \u2029", Wall: wall},
		{Seq: 8, Type: RecLog, Line: "", Kind: "", Wall: time.Date(2026, 2, 19, 16, 30, 1, 5, time.FixedZone("x", 3600))},
	}
}

func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	for _, r := range recordCases() {
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(&r); err != nil {
			t.Fatal(err)
		}
		if got := appendRecord(nil, &r); !bytes.Equal(got, want.Bytes()) {
			t.Errorf("record %d:\n got %s\nwant %s", r.Seq, got, want.Bytes())
		}
	}
}

// FuzzAppendJSONString holds the hand-written quoting to encoding/json's, byte for byte.
func FuzzAppendJSONString(f *testing.F) {
	for _, r := range recordCases() {
		f.Add(r.Line)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%q:\n got %s\nwant %s", s, got, want)
		}
	})
}
