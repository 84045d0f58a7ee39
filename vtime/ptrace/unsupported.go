//go:build !(linux && amd64)

package ptrace

import (
	"time"

	"github.com/incident-replay/incident-replay/vtime"
)

// Supported reports whether Start can trace on this platform.
const Supported = false

// Tracee is not available on this platform.
type Tracee struct{}

// Start returns ErrUnsupported.
func Start(*vtime.Clock, Options) (*Tracee, error) { return nil, ErrUnsupported }

func (*Tracee) Pid() int                { return 0 }
func (*Tracee) Done() <-chan struct{}   { return nil }
func (*Tracee) ExitCode() int           { return -1 }
func (*Tracee) Recorded()               {}
func (*Tracee) Close()                  {}
func (*Tracee) Idle() (bool, time.Time) { return true, time.Time{} }
