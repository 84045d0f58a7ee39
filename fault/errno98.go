package fault

import "time"

// Errno98: another process holds the port; binding fails after loading.
const Errno98 Kind = "errno98"

func init() {
	register(Def{Kind: Errno98, Summary: "another process holds the port (it accepts and closes); after loading uvicorn logs Errno 98 and the server exits with code (default 1)",
		Fields: []string{FieldCode}, DefaultCode: DefaultBindExitCode, EndsBind: true, Fault: errno98{}})
}

type errno98 struct{}

func (errno98) Check(s Spec) error { return checkExitCode(s) }

// Predict: the new server never binds; it dies where it would have bound, and never warms up.
func (errno98) Predict(s Spec, _ time.Duration, f *Forecast) {
	f.Truth.Unbind(s.ExitCode())
	f.WarmupBroken = true
}

// HolderStatus: the holder is no HTTP server; it accepts and closes.
func (errno98) HolderStatus(Spec) int { return 0 }
