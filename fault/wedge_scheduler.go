package fault

import "time"

// WedgeScheduler: HTTP stays up but the scheduler hangs.
const WedgeScheduler Kind = "wedge_scheduler"

func init() {
	register(Def{Kind: WedgeScheduler, Summary: "HTTP stays up but the scheduler hangs: generation never returns, health 503 after SGLANG_HEALTH_CHECK_TIMEOUT with the Health check failed line",
		Fields: window, Fault: wedgeScheduler{}})
}

type wedgeScheduler struct{}

// Predict: a scheduler that hangs for good is dead as a tool sees it, even if the watchdog
// ends the process much later.
func (wedgeScheduler) Predict(s Spec, at time.Duration, f *Forecast) { predictLastingWedge(s, at, f) }

func (wedgeScheduler) Arm(l *Live, srv Server) {
	armWindow(l, srv, srv.WedgeScheduler, srv.ResumeScheduler)
}
