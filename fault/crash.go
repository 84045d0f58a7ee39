package fault

import (
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// Crash: the process dies at a time or after a line, with an exception line.
const Crash Kind = "crash"

// DefaultCrashCode is a crash's exit status when code is left out (SIGKILL-style).
const DefaultCrashCode = 137

func init() {
	register(Def{Kind: Crash, Summary: "the process dies at a time or after a line: an exception line (message), then exit code (default 137, SIGKILL-style)",
		Fields: fields(timing, []string{FieldCode, FieldMessage}), DefaultCode: DefaultCrashCode, Fault: crash{}})
}

type crash struct{}

func (crash) Check(s Spec) error { return checkExitCode(s) }

// Predict leaves the truth as it is: prediction has never folded a crash fault's exit in, and
// this registry keeps that behaviour (no catalogue scenario uses the fault; the modelled
// crash-running ending is a timeline exit, which prediction reads).
func (crash) Predict(Spec, time.Duration, *Forecast) {}

// Arm: a scheduler exception, the launcher's SIGQUIT handler, then the exit code.
func (crash) Arm(l *Live, srv Server) {
	spec := l.Spec
	srv.After(l.start(), func(at time.Duration) {
		if srv.Dead() {
			return
		}
		t := srv.Stamp(at)
		msg := spec.Message
		if msg == "" {
			msg = "RuntimeError: injected crash (incident-replay fault)"
		}
		srv.Log(at, replay.Stdout, sglang.Event{Kind: sglang.KindSchedulerExc, Time: t, Ranks: srv.SchedulerRanks(), Text: "Traceback (most recent call last):"})
		exc, text, _ := strings.Cut(msg, ": ")
		srv.Log(at, replay.Stdout, sglang.Event{Kind: sglang.KindException, Fields: sglang.Fields{{Key: "exc", Value: exc}}, Text: text})
		if !srv.Bound() {
			srv.Log(at, replay.Stdout, sglang.Event{Kind: sglang.KindSigquitChild, Time: t})
		} else {
			srv.Log(at, replay.Stdout, sglang.Event{Kind: sglang.KindSigquitReceived, Time: t,
				Text: "SIGQUIT received. signum=None, frame=None. It usually means one child failed."})
		}
		srv.Exit(at, spec.ExitCode(), Crash)
	})
}
