package harness

import (
	"context"
	"os"
	"strings"

	"github.com/incident-replay/incident-replay/vtime/ptrace"
)

// Mode is how a pair's tool saw the run's time.
type Mode string

const (
	// ModeVirtual: on the event-driven virtual clock; a shell tool through the LD_PRELOAD
	// library, a Go model through its clock.
	ModeVirtual Mode = "virtual"
	// ModePtrace: a Go or static binary traced onto the virtual clock (vtime/ptrace).
	ModePtrace Mode = "virtual (ptrace)"
	// ModeFaketime: a shell tool under faketime at the run's speed.
	ModeFaketime Mode = "faketime"
	// ModeScaled: a Go model on the clock compressed by the run's speed.
	ModeScaled Mode = "scaled"
	// ModeReal: real time (S=1): an unscaled tool, or a Go or static binary where it cannot
	// be traced onto virtual time.
	ModeReal Mode = "real time"
)

// virtualLauncher is a Launcher that can run a pair on virtual time whatever speed the
// matrix runs at.
type virtualLauncher interface {
	Virtual() bool
}

// Virtual implements virtualLauncher.
func (InProcess) Virtual() bool { return true }

// Virtual implements virtualLauncher: the container's clock follows the run's (WithClock).
func (Container) Virtual() bool { return true }

// pickMode decides the speed and mode of a pair: a tool whose executable ignores LD_PRELOAD
// and faketime (a Go or static binary) is traced onto virtual time when the launcher can run
// the pair there, and runs in real time otherwise; everything else follows the run's speed.
func pickMode(t Tool, speed float64, l Launcher, path string) (float64, Mode, ExecKind) {
	kind := ExecScript
	if t.Command != "" {
		if script, err := t.render(TemplateData{URL: "http://127.0.0.1:1", Host: "127.0.0.1", Port: 1}); err == nil {
			_, kind = DetectExec(script, path)
		}
	}
	vl, canVirtual := l.(virtualLauncher)
	canVirtual = canVirtual && vl.Virtual()
	switch {
	case t.Unscaled:
		return 1, ModeReal, kind
	case kind.Bypasses() && ptrace.Supported && (speed == Virtual || canVirtual):
		return Virtual, ModePtrace, kind
	case kind.Bypasses():
		return 1, ModeReal, kind
	case speed == 1:
		return 1, ModeReal, kind
	case speed == Virtual:
		return Virtual, ModeVirtual, kind
	case t.Wait != nil:
		return speed, ModeScaled, kind
	}
	return speed, ModeFaketime, kind
}

// toolPath is the PATH shell tools run with, bin first when set.
func toolPath(bin string) string {
	for _, kv := range withBin(toolEnv(), bin) {
		if len(kv) > 5 && kv[:5] == "PATH=" {
			return kv[5:]
		}
	}
	return os.Getenv("PATH")
}

// withBin puts dir first on env's PATH; "" leaves env as it is.
func withBin(env []string, dir string) []string {
	if dir == "" {
		return env
	}
	for i, kv := range env {
		if strings.HasPrefix(kv, "PATH=") {
			env[i] = "PATH=" + dir + string(os.PathListSeparator) + kv[5:]
			return env
		}
	}
	return append(env, "PATH="+dir)
}

// requests counts the requests the server has had from clients so far, from its journal;
// -1 when the journal cannot be read.
func (r shellRun) requests(ctx context.Context) func() int {
	return func() int {
		recs, err := r.target.Journal(ctx)
		if err != nil {
			return -1
		}
		n, _ := requestStats(recs)
		return n
	}
}
