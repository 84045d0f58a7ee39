package harness

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/truth"
)

// ResultsFormat names the layout of a results file; Merge refuses any other.
const ResultsFormat = "incident-replay-results/1"

// ToolInfo is what a results file keeps of a tool: what the scorecard's tool list prints.
type ToolInfo struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"` // shell or go
	Description string `json:"description,omitempty"`
	Command     string `json:"command,omitempty"`
	Unscaled    bool   `json:"unscaled,omitempty"`
	MustPass    bool   `json:"must_pass,omitempty"`
}

// Results is one `score` run written as JSON: a shard's pairs (or the whole matrix) and the
// matrix they belong to, so shards run on different machines can be checked and joined.
type Results struct {
	Format string  `json:"format"`
	Shard  string  `json:"shard"` // i/n
	Seed   int64   `json:"seed"`
	Speed  float64 `json:"speed"`
	Where  string  `json:"where"`
	// Scenarios and Tools are the whole matrix, in order, whichever shard this is.
	Scenarios []string       `json:"scenarios"`
	Tools     []ToolInfo     `json:"tools"`
	Wall      time.Duration  `json:"wall_ns"`
	Results   []StoredResult `json:"results"`
}

// StoredResult is a Result with its place in the matrix; the error is kept as its text.
type StoredResult struct {
	Index    int         `json:"index"`
	Scenario string      `json:"scenario"`
	Tool     string      `json:"tool"`
	Kind     string      `json:"kind,omitempty"` // shell or go
	Speed    float64     `json:"speed"`
	Unscaled bool        `json:"unscaled,omitempty"`
	Mode     Mode        `json:"mode,omitempty"` // how the tool saw time
	Verdict  Verdict     `json:"verdict,omitempty"`
	Expect   Verdict     `json:"expect,omitempty"`
	MustPass bool        `json:"must_pass,omitempty"`
	Reason   string      `json:"reason,omitempty"`
	Claim    Claim       `json:"claim"`
	Start    time.Time   `json:"start"`
	Truth    truth.Truth `json:"truth"`
	// Predicted: events the run ended before came from the scenario's expect block
	Predicted     bool                `json:"predicted,omitempty"`
	Requests      int                 `json:"requests,omitempty"`
	HealthLatency time.Duration       `json:"health_latency_ns,omitempty"`
	Limit         time.Duration       `json:"limit_ns"`
	Wall          time.Duration       `json:"wall_ns"`
	Output        string              `json:"output,omitempty"`
	Journal       []fakeserver.Record `json:"journal,omitempty"`
	Err           string              `json:"error,omitempty"`
	StopErr       string              `json:"stop_error,omitempty"`
}

// NewResults records a finished run: results[i] is the result of pairs[i], cases and tools
// the whole matrix the pairs were drawn from.
func NewResults(shard Shard, seed int64, card Scorecard, pairs []Pair, cases []Case, tools []Tool) (Results, error) {
	if len(pairs) != len(card.Results) {
		return Results{}, fmt.Errorf("results: %d pairs but %d results", len(pairs), len(card.Results))
	}
	f := Results{Format: ResultsFormat, Shard: shard.String(), Seed: seed, Speed: card.Speed, Where: card.Where, Wall: card.Wall}
	for _, c := range cases {
		f.Scenarios = append(f.Scenarios, c.Name)
	}
	for _, t := range tools {
		f.Tools = append(f.Tools, ToolInfo{Name: t.Name, Kind: t.Kind(), Description: t.Description, Command: t.Command, Unscaled: t.Unscaled, MustPass: t.MustPass})
	}
	for i, r := range card.Results {
		s := StoredResult{Index: pairs[i].Index, Scenario: r.Scenario, Tool: r.Tool, Kind: r.Kind, Speed: r.Speed, Unscaled: r.Unscaled, Mode: r.Mode,
			Verdict: r.Verdict, Expect: r.Expect, MustPass: r.MustPass, Reason: r.Reason, Claim: r.Claim, Start: r.Start, Truth: r.Truth,
			Predicted: r.Predicted, Requests: r.Requests, HealthLatency: r.HealthLatency,
			Limit: r.Limit, Wall: r.Wall, Output: r.Output, Journal: r.Journal}
		if r.Err != nil {
			s.Err = r.Err.Error()
		}
		if r.StopErr != nil {
			s.StopErr = r.StopErr.Error()
		}
		f.Results = append(f.Results, s)
	}
	return f, nil
}

// WriteResults writes f as indented JSON to path.
func WriteResults(path string, f Results) error {
	b, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// ReadResults reads a file written by WriteResults.
func ReadResults(path string) (Results, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Results{}, fmt.Errorf("read results: %w", err)
	}
	var f Results
	if err := json.Unmarshal(b, &f); err != nil {
		return Results{}, fmt.Errorf("results %s: not a results file (%v); write one with `incident-replay score --results FILE`", path, err)
	}
	if f.Format != ResultsFormat {
		return Results{}, fmt.Errorf("results %s: format %q, want %q: write it with this version of `incident-replay score`", path, f.Format, ResultsFormat)
	}
	return f, nil
}

// Merge joins the results of every shard of one matrix into the scorecard the whole matrix
// run at once gives: results in matrix order, the tool list, the speed and launcher. Its wall
// time is the longest shard's, as the shards run side by side. Shards of different matrices
// (other scenarios, tools, seed, speed or launcher), a missing shard or a pair run twice are
// errors that say which.
func Merge(files []Results) (Scorecard, error) {
	if len(files) == 0 {
		return Scorecard{}, errors.New("merge: no results files given")
	}
	first := files[0]
	n, err := shardCount(first)
	if err != nil {
		return Scorecard{}, err
	}
	seen := map[int]bool{}
	var all []StoredResult
	var wall time.Duration
	for _, f := range files {
		sh, err := ParseShard(f.Shard)
		if err != nil {
			return Scorecard{}, fmt.Errorf("merge: %w", err)
		}
		if sh.N != n || f.Seed != first.Seed || f.Speed != first.Speed || f.Where != first.Where ||
			!slices.Equal(f.Scenarios, first.Scenarios) || !slices.Equal(f.Tools, first.Tools) {
			return Scorecard{}, fmt.Errorf("merge: shard %s is of another matrix than shard %s (scenarios, tools, --seed, --speed, launcher and shard count must match): rerun every shard with the same flags", f.Shard, first.Shard)
		}
		if seen[sh.I] {
			return Scorecard{}, fmt.Errorf("merge: shard %s is given twice", f.Shard)
		}
		seen[sh.I] = true
		for _, r := range f.Results {
			if !sh.Has(r.Index) {
				return Scorecard{}, fmt.Errorf("merge: shard %s holds pair %d (%s x %s), which belongs to another shard", f.Shard, r.Index, r.Scenario, r.Tool)
			}
		}
		all = append(all, f.Results...)
		wall = max(wall, f.Wall)
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if !seen[i] {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return Scorecard{}, fmt.Errorf("merge: shard %s missing: pass the results of every shard", strings.Join(missing, ", "))
	}
	slices.SortFunc(all, func(a, b StoredResult) int { return cmp.Compare(a.Index, b.Index) })
	total := len(first.Scenarios) * len(first.Tools)
	if len(all) != total {
		return Scorecard{}, fmt.Errorf("merge: the shards hold %d results, the matrix has %d pairs: was a shard interrupted?", len(all), total)
	}
	card := Scorecard{Speed: first.Speed, Wall: wall, Where: first.Where}
	for k, r := range all {
		if r.Index != k {
			return Scorecard{}, fmt.Errorf("merge: pair %d is missing or run twice", k)
		}
		card.Results = append(card.Results, r.result())
	}
	for _, t := range first.Tools {
		card.Tools = append(card.Tools, t.tool())
	}
	return card, nil
}

func shardCount(f Results) (int, error) {
	sh, err := ParseShard(f.Shard)
	if err != nil {
		return 0, fmt.Errorf("merge: %w", err)
	}
	return sh.N, nil
}

func (s StoredResult) result() Result {
	r := Result{Scenario: s.Scenario, Tool: s.Tool, Kind: s.Kind, Speed: s.Speed, Unscaled: s.Unscaled, Mode: s.Mode, Verdict: s.Verdict, Expect: s.Expect,
		MustPass: s.MustPass, Reason: s.Reason, Claim: s.Claim, Start: s.Start, Truth: s.Truth,
		Predicted: s.Predicted, Requests: s.Requests, HealthLatency: s.HealthLatency, Limit: s.Limit, Wall: s.Wall, Output: s.Output, Journal: s.Journal}
	if s.Err != "" {
		r.Err = errors.New(s.Err)
	}
	if s.StopErr != "" {
		r.StopErr = errors.New(s.StopErr)
	}
	return r
}

// errNotInFile is what a Go tool read back from a results file returns if run: its code
// is not in the file, only what the scorecard prints of it.
var errNotInFile = errors.New("this tool was read back from a results file; run it from its own definition")

// tool is the Tool a scorecard's tool list prints; it is not meant to be run again.
func (t ToolInfo) tool() Tool {
	out := Tool{Name: t.Name, Description: t.Description, Command: t.Command, Unscaled: t.Unscaled, MustPass: t.MustPass}
	if t.Kind == "go" {
		out.Wait = func(context.Context, Env) error { return errNotInFile }
	}
	return out
}
