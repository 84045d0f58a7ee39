package ready

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Code is llmwait's exit status. Each failure class has its own code so that a caller (CI, a
// harness, a shell script) can tell "the server died" from "we gave up" without parsing text.
type Code int

// Exit codes. 124 matches coreutils timeout and wait4x.
const (
	CodeReady      Code = 0
	CodeInternal   Code = 1
	CodeExited     Code = 2
	CodeFatalLog   Code = 3
	CodePreflight  Code = 4
	CodeStalled    Code = 5
	CodeIdentity   Code = 6
	CodeHTTPConfig Code = 7
	CodeTimeout    Code = 124
)

var codeNames = map[Code]string{
	CodeReady:      "ready",
	CodeInternal:   "internal error",
	CodeExited:     "process exited",
	CodeFatalLog:   "fatal log line",
	CodePreflight:  "preflight failed",
	CodeStalled:    "stalled",
	CodeIdentity:   "identity mismatch",
	CodeHTTPConfig: "http configuration error",
	CodeTimeout:    "timeout",
}

func (c Code) String() string {
	if n, ok := codeNames[c]; ok {
		return n
	}
	return "code " + strconv.Itoa(int(c))
}

// ExitStatus is how a supervised process ended.
type ExitStatus struct {
	Code   int    // exit code; -1 when killed by a signal
	Signal string // signal name when killed by one ("killed", "terminated"), else ""
	// OOMKill is set when the kernel's cgroup OOM counter rose while the process ran.
	OOMKill bool
}

func (s ExitStatus) String() string {
	var b strings.Builder
	if s.Signal != "" {
		b.WriteString("signal: " + s.Signal)
	} else {
		b.WriteString("exit code " + strconv.Itoa(s.Code))
	}
	if s.OOMKill || s.Signal == "killed" || s.Code == 137 {
		if s.OOMKill {
			b.WriteString(" (OOM-killed: cgroup memory.events oom_kill rose)")
		} else {
			b.WriteString(" (SIGKILL: likely the OOM killer or SGLang's kill_process_tree)")
		}
	}
	return b.String()
}

// Report is what Wait observed. It is filled for every outcome, ready or not.
type Report struct {
	Code    Code
	Cause   string        // one line: why Wait returned
	Elapsed time.Duration // on the Spec's clock
	Phase   Phase         // last phase seen (from the log or the probes)
	Percent int           // progress within Phase, -1 when unknown
	Exit    *ExitStatus   // set when the process ended before Wait returned
	Fatal   string        // the matched fatal line, if any
	Lines   []string      // the last log lines that matter (no access lines, no bar redraws)
	Probes  int           // HTTP requests sent
	Notes   []string      // warnings that did not change the outcome (e.g. identity unverifiable)
}

// Verdict is the final one-line summary printed by the CLI.
func (r Report) Verdict() string {
	secs := fmt.Sprintf("%.1fs", r.Elapsed.Seconds())
	if r.Code == CodeReady {
		return "llmwait: READY after " + secs + " (" + r.Cause + ")"
	}
	return fmt.Sprintf("llmwait: FAILED [%d %s] after %s in phase %s: %s", int(r.Code), r.Code, secs, r.Phase, r.Cause)
}

// Error is returned by Wait for every outcome other than ready.
type Error struct {
	Code  Code
	Cause string
}

func (e *Error) Error() string { return "llmwait: " + e.Code.String() + ": " + e.Cause }

// ExitCode maps any error from this package to a process exit status: *Error carries its
// code, nil is ready, anything else is internal.
func ExitCode(err error) int {
	if err == nil {
		return int(CodeReady)
	}
	var e *Error
	if errors.As(err, &e) {
		return int(e.Code)
	}
	return int(CodeInternal)
}
