package loggen

import (
	"bytes"
	"context"
	"testing"

	"github.com/incident-replay/incident-replay/sglang"
)

func TestWriteParsesAndRepeats(t *testing.T) {
	for _, p := range sglang.Profiles() {
		var a, b bytes.Buffer
		o := Options{Bytes: 64 << 10, Seed: 7, Profile: p, TP: 2}
		n, err := Write(context.Background(), &a, o)
		if err != nil || n != int64(a.Len()) || n < o.Bytes {
			t.Fatalf("%s: wrote %d (%d buffered), err %v", p.Name, n, a.Len(), err)
		}
		if _, err := Write(context.Background(), &b, o); err != nil || !bytes.Equal(a.Bytes(), b.Bytes()) {
			t.Fatalf("%s: same seed gave different output", p.Name)
		}
		lines, err := sglang.Parse(&a)
		if err != nil {
			t.Fatal(err)
		}
		counts := map[sglang.Kind]int{}
		for _, l := range lines {
			counts[l.Event.Kind]++
		}
		if counts[sglang.KindUnknown] != 0 || counts[sglang.KindPrefill] == 0 || counts[sglang.KindReady] != 1 || counts[sglang.KindLoadBegin] != 2 {
			t.Fatalf("%s: kinds %v", p.Name, counts)
		}
	}
}

func TestWriteRejectsBadOptions(t *testing.T) {
	if _, err := Write(context.Background(), &bytes.Buffer{}, Options{Bytes: 0, Profile: sglang.ProfileFor(sglang.EraC)}); err == nil {
		t.Error("zero size accepted")
	}
	if _, err := Write(context.Background(), &bytes.Buffer{}, Options{Bytes: 10}); err == nil {
		t.Error("missing profile accepted")
	}
}
