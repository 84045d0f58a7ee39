package fakeserver

import (
	"maps"
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

// ScenarioOptions say how ConfigForScenario runs a scenario.
type ScenarioOptions struct {
	Seed int64
	// Speed is the time factor (scenario seconds per wall second); 0 means 1.
	Speed float64
	// StartTime, when set, re-stamps the scenario: log lines read StartTime+offset instead
	// of the scenario's own start.
	StartTime time.Time
}

// ConfigForScenario resolves a scenario (file or catalogue name, see scenarios.Resolve),
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
	sc, err := scenarios.Resolve(nameOrPath)
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
