package fakeserver

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
)

// FromCompiled is the Config a compiled scenario runs with; the caller adds the clock,
// the writers and any launch-flag overrides.
func FromCompiled(c *scenarios.Compiled) Config {
	b := c.Behavior
	cfg := Config{
		Profile: c.Profile, Args: c.Args, Timeline: c.Timeline, Faults: c.Faults, Env: maps.Clone(c.Env), Seed: c.Seed,
		Behavior: Behavior{
			WarmupPoll: b.WarmupPoll.D(), WarmupGenerate: b.WarmupGenerate.D(), WarmupTokens: b.WarmupTokens,
			HealthLatency: b.HealthLatency.D(), HealthTimeout: b.HealthTimeout.D(), HealthGeneration: b.HealthGeneration,
			ProbeTokens: b.ProbeTokens, TokenLatency: b.TokenLatency.D(),
		},
	}
	if b.ProbeCUDAGraph != nil {
		cfg.Behavior.ProbeCUDAGraph = *b.ProbeCUDAGraph
	} else {
		cfg.Behavior.ProbeCUDAGraph = !c.Args.DisableCUDAGraph
	}
	return cfg
}

// LoadScenario reads nameOrPath as a scenario file when a file of that name exists, and
// looks it up in the embedded catalogue otherwise.
func LoadScenario(nameOrPath string) (*scenarios.Scenario, error) {
	if nameOrPath == "" {
		return nil, errors.New("fakeserver: no scenario given; pass a catalogue name (incident-replay scenarios list) or a scenario file")
	}
	st, err := os.Stat(nameOrPath)
	switch {
	case err == nil && st.IsDir():
		return nil, fmt.Errorf("fakeserver: scenario %s is a directory; pass a scenario file or a catalogue name", nameOrPath)
	case err == nil:
		return scenarios.LoadFile(nameOrPath)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("fakeserver: scenario file: %w", err)
	}
	return scenarios.Lookup(nameOrPath)
}

// ScenarioOptions say how ConfigForScenario runs a scenario.
type ScenarioOptions struct {
	Seed int64
	// Speed is the time factor (scenario seconds per wall second); 0 means 1.
	Speed float64
	// StartTime, when set, re-stamps the scenario: log lines read StartTime+offset instead
	// of the scenario's own start.
	StartTime time.Time
}

// ConfigForScenario resolves a scenario (file or catalogue name, see LoadScenario),
// compiles it with the seed and returns the Config that runs it on a scaled clock. The
// caller adds writers, the journal and launch-flag overrides.
func ConfigForScenario(nameOrPath string, o ScenarioOptions) (Config, error) {
	speed := o.Speed
	if speed == 0 {
		speed = 1
	}
	if err := replay.CheckFactor(speed); err != nil {
		return Config{}, err
	}
	sc, err := LoadScenario(nameOrPath)
	if err != nil {
		return Config{}, err
	}
	comp, err := scenarios.Compile(sc, o.Seed)
	if err != nil {
		return Config{}, err
	}
	cfg := FromCompiled(comp)
	if !o.StartTime.IsZero() {
		cfg.Timeline.Start = o.StartTime
	}
	cfg.Clock = replay.Scaled(cfg.Timeline.Start, speed)
	return cfg, nil
}
