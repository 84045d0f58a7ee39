package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
)

// catalogueTools is the width of a full scorecard: the built-ins number about twenty.
const catalogueTools = 20

// serverJournals replays every catalogue scenario with no client, fast, and keeps each
// journal: the phases and states a whole-catalogue report draws.
func serverJournals(t testing.TB) ([]harness.Case, [][]fakeserver.Record) {
	all, err := scenarios.Catalogue()
	if err != nil {
		t.Fatal(err)
	}
	cases := make([]harness.Case, len(all))
	journals := make([][]fakeserver.Record, len(all))
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	const speed = 4000
	for i, s := range all {
		wg.Go(func() {
			c, err := harness.NewCase(s, 1)
			if err != nil {
				errs[i] = err
				return
			}
			cases[i] = c
			var buf bytes.Buffer
			cfg := harness.ConfigFor(c.Compiled)
			cfg.Clock = replay.Scaled(c.Timeline.Start, speed)
			cfg.Journal = &buf
			srv, err := fakeserver.Start(context.Background(), cfg)
			if err != nil {
				errs[i] = err
				return
			}
			select {
			case <-srv.Done():
			case <-time.After(time.Duration(float64(c.Horizon()+time.Minute) / speed)):
			}
			_ = srv.Stop(context.Background())
			journals[i], errs[i] = fakeserver.ReadJournal(&buf)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", all[i].Name, err)
		}
	}
	return cases, journals
}

// catalogueCard is a scorecard for the whole catalogue x catalogueTools: each synthetic tool
// probes /health at its own interval until its claim, the server answering as its journal
// says (503 while Starting, 200 once ready, nothing once dead). It is an upper bound on a
// real run's size: real tools stop probing sooner.
func catalogueCard(t testing.TB) harness.Scorecard {
	cases, journals := serverJournals(t)
	var results []harness.Result
	for i, c := range cases {
		g := fakeserver.GroundTruth(journals[i])
		end := journals[i][len(journals[i])-1].At
		for k := range catalogueTools {
			interval := time.Duration(2+3*(k%5)) * time.Second
			claimAt := end
			outcome := harness.ClaimFailed
			if g.Ready != nil && k%3 == 0 {
				claimAt, outcome = *g.Ready+interval, harness.ClaimReady
			}
			j := append([]fakeserver.Record(nil), journals[i]...)
			if g.Bound != nil {
				for at := *g.Bound; at < claimAt && (g.Dead == nil || at < *g.Dead); at += interval {
					status := 503
					if g.Ready != nil && at >= *g.Ready {
						status = 200
					}
					j = append(j, fakeserver.Record{Type: fakeserver.RecRequest, At: at, Route: "/health", Status: status, Latency: time.Second})
				}
			}
			start := c.Timeline.Start
			claim := harness.Claim{Outcome: outcome, At: start.Add(claimAt)}
			// The verdict only colours the picture; the harness's own classifier is not under test.
			v, why := harness.FailedSlow, "gave up"
			switch {
			case outcome == harness.ClaimReady:
				v, why = harness.ReadyOK, "claimed ready one interval after t_ready"
			case g.Ready != nil:
				v, why = harness.MissedReady, "gave up although the server was ready"
			}
			results = append(results, harness.Result{
				Scenario: c.Name, Tool: fmt.Sprintf("tool-%02d", k), Speed: 60, Verdict: v, Reason: why,
				Claim: claim, Start: start, Truth: g, Limit: c.Horizon() + 2*time.Minute, Wall: claimAt / 60, Journal: j,
			})
		}
	}
	return harness.Scorecard{Results: results, Speed: 60, Wall: time.Minute, Where: "inprocess"}
}

// TestCatalogueReport renders the whole catalogue: under 5 MB, under 2 s, byte-identical
// twice. REPORT_DIR=path keeps the output for a look in a browser.
func TestCatalogueReport(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the whole catalogue")
	}
	card := catalogueCard(t)
	dir := os.Getenv("REPORT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	start := time.Now()
	sum, err := Write(dir, card)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs: index.html %d bytes, rendered (and written with %d pictures) in %s", len(card.Results), sum.Bytes, sum.Pictures, took)
	if sum.Pictures != len(card.Results) {
		t.Errorf("%d pictures for %d runs", sum.Pictures, len(card.Results))
	}
	if sum.Bytes >= 5<<20 {
		t.Errorf("index.html is %d bytes, over the 5 MB budget", sum.Bytes)
	}
	if !raceEnabled && took >= 2*time.Second {
		t.Errorf("rendering took %s, over the 2 s budget", took)
	}
	first, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	dir2 := t.TempDir()
	if _, err := Write(dir2, card); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(filepath.Join(dir2, "index.html"))
	if !bytes.Equal(first, second) {
		t.Error("two renders of the same scorecard differ")
	}
	md1, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	md2, _ := os.ReadFile(filepath.Join(dir2, "report.md"))
	if !bytes.Equal(md1, md2) {
		t.Error("two Markdown renders of the same scorecard differ")
	}
}

func BenchmarkCatalogueHTML(b *testing.B) {
	card := catalogueCard(b)
	b.ResetTimer()
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		writeHTML(&buf, card, prepare(card))
		size = buf.Len()
	}
	b.ReportMetric(float64(size), "bytes/report")
}
