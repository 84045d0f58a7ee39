package fault

import "time"

// Flap: health alternates between healthy and unhealthy.
const Flap Kind = "flap"

func init() {
	register(Def{Kind: Flap, Summary: "health alternates: period healthy, then period 503, repeatedly",
		Fields: fields(window, []string{FieldPeriod}), Required: []string{FieldPeriod}, Fault: flap{}})
}

type flap struct{}

// Predict: health answers change no event of the truth.
func (flap) Predict(Spec, time.Duration, *Forecast) {}

// HealthDown: the odd periods from the start are the unhealthy ones.
func (flap) HealthDown(l *Live, at time.Duration) bool {
	return l.ActiveAt(at) && ((at-l.start())/l.Period)%2 == 1
}
