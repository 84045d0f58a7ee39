package fakeserver

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// runOnce plays a timeline with faults to its exit and returns the log and the journal with
// the wall-clock field cleared.
func runOnce(t *testing.T, seed int64, port int) ([]byte, []byte) {
	prof := sglang.ProfileFor(sglang.EraC)
	args := sglang.ServerArgs{Port: port}
	var logs, jr bytes.Buffer
	s, err := Start(context.Background(), Config{Profile: prof, Args: args, Seed: seed, Stdout: &logs, Journal: &jr,
		Timeline: HappyPath(epoch, prof, 3*time.Second, 40*time.Second, 137),
		Faults: []fault.Spec{{Kind: fault.WedgeScheduler, At: 10 * time.Second, For: 5 * time.Second},
			{Kind: fault.Crash, AfterLine: "fired up", At: 20 * time.Second}},
		Clock: replay.Scaled(epoch, fast)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	code, err := s.Wait(ctx)
	if err != nil || code != 137 {
		t.Fatalf("wait: code %d err %v", code, err)
	}
	_ = s.Stop(ctx)
	recs, err := ReadJournal(&jr)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	for _, r := range recs {
		r.Wall = time.Time{}
		b, _ := json.Marshal(r)
		out.Write(append(b, '\n'))
	}
	return logs.Bytes(), out.Bytes()
}

func TestSameSeedSameBytes(t *testing.T) {
	// The port is an input like the seed (the Uvicorn line prints it): reuse one for every run.
	port, err := freePort("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	l1, j1 := runOnce(t, 42, port)
	l2, j2 := runOnce(t, 42, port)
	if !bytes.Equal(l1, l2) {
		t.Fatalf("logs differ:\n%s\n---\n%s", l1, l2)
	}
	if !bytes.Equal(j1, j2) {
		t.Fatalf("journals differ:\n%s\n---\n%s", j1, j2)
	}
	l3, _ := runOnce(t, 43, port)
	if bytes.Equal(l1, l3) {
		t.Fatal("a different seed changed nothing: the seed drives no choice")
	}
	if !bytes.Contains(l1, []byte("Received sigquit")) && !bytes.Contains(l1, []byte("SIGQUIT received")) {
		t.Fatalf("crash fault left no trace:\n%s", l1)
	}
	truth := GroundTruth(mustRead(t, j1))
	if truth.Ready == nil || truth.ExitCode == nil || *truth.ExitCode != 137 || truth.Dead == nil || *truth.Dead != *truth.Ready+20*time.Second {
		t.Fatalf("truth %+v", truth)
	}
}

func mustRead(t *testing.T, b []byte) []Record {
	recs, err := ReadJournal(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return recs
}
