package fakeserver

import (
	"maps"

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
