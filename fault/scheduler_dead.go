package fault

import "time"

// SchedulerDead: the scheduler process dies while the server serves.
const SchedulerDead Kind = "scheduler_dead"

func init() {
	register(Def{Kind: SchedulerDead, Summary: "the scheduler process dies while serving: era C tears the server down (137); eras A/B keep HTTP up as a zombie",
		Fields: timing, Fault: schedulerDead{}})
}

type schedulerDead struct{}

// teardownCode is the exit status of a server its watchdog tears down (SIGKILL).
const teardownCode = 137

// Predict: generation stops for good, so the server is dead as a tool sees it; a version that
// tears down on a child's death also ends the process (137) a second later.
func (schedulerDead) Predict(_ Spec, at time.Duration, f *Forecast) {
	f.Truth.Wedge(at)
	if f.TeardownOnChildCrash && f.Truth.ExitCode == nil {
		code := teardownCode
		f.Truth.ExitCode = &code
	}
}

func (schedulerDead) Arm(l *Live, srv Server) { srv.After(l.start(), srv.SchedulerDead) }
