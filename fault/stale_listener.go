package fault

import (
	"net/http"
	"time"
)

// StaleListener: an old server already holds the port and answers every request.
const StaleListener Kind = "stale_listener"

// Defaults of the kinds that end the process at bind.
const (
	DefaultBindExitCode = 1
	DefaultStaleStatus  = http.StatusOK
)

func init() {
	register(Def{Kind: StaleListener, Summary: "an old server already holds the port and answers every request with status (default 200); the new one fails to bind with Errno 98 after loading and exits with code (default 1)",
		Fields: []string{FieldStatus, FieldCode}, DefaultCode: DefaultBindExitCode, DefaultStatus: DefaultStaleStatus, EndsBind: true,
		Fault: staleListener{}})
}

type staleListener struct{}

func (staleListener) Check(s Spec) error { return checkStatusAndCode(s) }

// Predict: the new server never binds; it dies where it would have bound, and never warms up.
func (staleListener) Predict(s Spec, _ time.Duration, f *Forecast) {
	f.Truth.Unbind(s.ExitCode())
	f.WarmupBroken = true
}

func (staleListener) HolderStatus(s Spec) int { return s.HTTPStatus() }
