package fault

import "time"

// SlowHealth adds latency to health checks.
const SlowHealth Kind = "slow_health"

func init() {
	register(Def{Kind: SlowHealth, Summary: "adds latency to /health and /health_generate (or to route)",
		Fields: fields(window, []string{FieldRoute, FieldLatency}), Required: []string{FieldLatency}, Fault: slowHealth{}})
}

type slowHealth struct{}

// Predict: a slow answer changes no event of the truth.
func (slowHealth) Predict(Spec, time.Duration, *Forecast) {}

func (slowHealth) HealthDelay(l *Live, at time.Duration, path string) time.Duration {
	if !l.ActiveAt(at) {
		return 0
	}
	if l.Route != "" && l.Route != path || l.Route == "" && path != "/health" && path != "/health_generate" {
		return 0
	}
	return l.Latency
}
