package fault_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/vtime"
)

func TestDropConnectionValidates(t *testing.T) {
	for _, c := range []struct {
		spec fault.Spec
		ok   bool
	}{
		{fault.Spec{Kind: fault.DropConnection}, true},
		{fault.Spec{Kind: fault.DropConnection, Route: "/v1/models", Count: 2, At: time.Second, For: time.Minute}, true},
		{fault.Spec{Kind: fault.DropConnection, Status: 500}, false}, // it never answers
		{fault.Spec{Kind: fault.DropConnection, Route: "v1/models"}, false},
	} {
		if err := c.spec.Validate(); (err == nil) != c.ok {
			t.Errorf("%+v: Validate() = %v, want ok=%v", c.spec, err, c.ok)
		}
	}
}

const dropScenario = `name: drop-models
summary: the first two /v1/models requests lose their connection
sources:
  - ref: fault/drop_connection.go
    note: a synthetic scenario for the test of this kind
profile: C
host: h100-x8
launch:
  flags: --model-path Qwen/Qwen2.5-7B-Instruct --port 30000
timeline:
  modelled:
    start: "2026-03-02 09:00:00"
    phases:
      per_shard: 1s
faults:
  - kind: drop_connection
    route: /v1/models
    count: 2
expect:
  bound: 23s
  ready: 24s
  tolerance: 3s
  verdict: ready-ok
`

// A scenario file names the kind; the server closes the first two matching connections
// without a status, answers the third, and journals the drops; the prediction is unchanged.
func TestDropConnectionFromScenarioYAML(t *testing.T) {
	s, err := scenarios.Load("drop.yaml", []byte(dropScenario))
	if err != nil {
		t.Fatal(err)
	}
	comp, err := scenarios.Compile(s, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Expect.Check(comp.Predict()); err != nil {
		t.Fatal(err)
	}
	clk := vtime.New(comp.Timeline.Start, vtime.Options{})
	defer clk.Close()
	cfg := fakeserver.FromCompiled(comp)
	cfg.Args.Host, cfg.Args.Port, cfg.Clock, cfg.Journal = "127.0.0.1", 0, clk, &bytes.Buffer{} // read back under the server's lock
	task := vtime.NewTask(clk)                                                                  // on the clock before the server: time waits for the test
	srv, err := fakeserver.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop(context.Background())
	defer task.End() // first: the server's stop may wait on the clock
	ctx := vtime.WithTask(context.Background(), task)
	if err := task.Sleep(ctx, 30*time.Second); err != nil { // past ready (24 s)
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true, DialContext: vtime.DialContext((&net.Dialer{}).DialContext)}}
	get := func() (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", srv.BaseURL()+"/v1/models", nil)
		var (
			resp *http.Response
			err  error
		)
		vtime.RequestDuring(ctx, clk, req.URL.Host, func() { resp, err = client.Do(req) })
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for i := range 2 {
		if code, err := get(); err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
			t.Fatalf("request %d: status %d, error %v; want the connection closed without an answer", i, code, err)
		}
	}
	if code, err := get(); err != nil || code != http.StatusOK {
		t.Fatalf("third request: %d %v, want 200", code, err)
	}
	recs, err := srv.Journal(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for _, r := range fakeserver.Requests(recs) {
		if r.Fault == string(fault.DropConnection) && r.Outcome == "dropped" && r.Status == 0 {
			dropped++
		}
	}
	if dropped != 2 {
		t.Fatalf("journal has %d dropped requests, want 2: %+v", dropped, fakeserver.Requests(recs))
	}
}
