package ready

import (
	"fmt"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/sglang"
)

// roundKind is how far one pass of the probe ladder got.
type roundKind uint8

const (
	roundRefused   roundKind = iota // TCP connection refused: not bound yet (the normal loading state)
	roundNetErr                     // other dial/transport error or a request timeout: retried, counted
	roundWarming                    // GET /health answered 503
	roundHTTPOther                  // an unexpected status (500, 502, ...): retried, counted
	roundConfig                     // 401/403/404/405/3xx or TLS failure: wrong server, path or credentials
	roundGenFailed                  // health 200 but the generation probe failed or its schema was wrong
	roundIdentity                   // health 200 from a listener that is not ours
	roundOK                         // health 200 (and the generation probe passed, when enabled)
)

// round is the result of one probe-ladder pass.
type round struct {
	kind    roundKind
	status  int
	latency time.Duration // of the health request, when it got an answer
	detail  string
	auth    bool   // roundConfig because the server refused the credentials (401/403)
	key     string // the key the round's requests carried ("" for none)
}

// decision is the machine's verdict, final once done is set.
type decision struct {
	done  bool
	code  Code
	cause string
}

// machine holds every readiness rule as a pure function of timestamped inputs, so each rule is
// unit-tested with explicit times; Wait only pumps I/O into it.
type machine struct {
	spec  *Spec
	start time.Time

	phase        Phase
	pct          int
	lastKind     sglang.Kind
	lastProgress time.Time // zero until the log shows progress; stall detection needs a log
	deadline     time.Time // overall and hard: start + Timeout
	logReady     bool      // the log printed the ready line: one health success is enough
	// logUp: the log showed uvicorn serving. From then on a healthy probe only counts once the
	// ready line is out too: era A's /health is 200 throughout warmup, only the log knows.
	logUp     bool
	logAPIKey string // the api_key of the server_args line, for probes when none was given
	// authWaited: a refusal of key-less probes was already given one interval for the log to
	// show its server_args line.
	authWaited bool

	traceback  bool      // a Traceback header was seen and no progress since
	fatalAt    time.Time // confirmation window start; zero when nothing pending
	fatalLine  string
	fatalCause string // the most specific line within the window (the exception message)
	fatalKind  fatalStrength
	causeRank  int

	bound     bool // the port answered at least once
	successes int
	errors    int
	exit      *ExitStatus

	tail  []string // ring of recent lines that matter
	notes []string

	// The process ended but its last lines may still be in flight from the log reader; the
	// verdict waits for them (until the log ends, or exitDrain) so the cause is in the report.
	exitSeen   time.Time
	exitStatus ExitStatus

	d decision
}

// exitDrain bounds the wait for a dead process's last log lines (scenario time).
const exitDrain = 500 * time.Millisecond

// onExitPending records the end of the process; onTick or logEnded turns it into the verdict.
func (m *machine) onExitPending(st ExitStatus, now time.Time) {
	if m.exitSeen.IsZero() {
		m.exitSeen, m.exitStatus = now, st
	}
}

// logEnded: the reader reached the end of the stream; a pending exit is final now.
func (m *machine) logEnded(now time.Time) {
	if !m.exitSeen.IsZero() {
		m.onExit(m.exitStatus, now)
	}
}

func newMachine(spec *Spec, now time.Time) *machine {
	return &machine{spec: spec, start: now, pct: -1, deadline: now.Add(spec.Timeout)}
}

func (m *machine) finish(code Code, cause string) decision {
	if !m.d.done {
		m.d = decision{done: true, code: code, cause: cause}
	}
	return m.d
}

// onLine feeds one typed log line. raw is the physical line, kept for the failure tail.
// It returns whether the phase advanced into HTTP-visible territory (probe now).
func (m *machine) onLine(ev sglang.Event, raw string, now time.Time) (probeNow bool) {
	if m.d.done {
		return false
	}
	if mattersInTail(ev.Kind) && raw != "" {
		m.pushTail(raw)
	}
	s := classify(ev)
	if ev.Kind == sglang.KindServerArgs {
		if v, ok := sglang.ReprValue(ev.Text, "api_key"); ok {
			if k, ok := sglang.PyString(v); ok && k != "" {
				m.logAPIKey = k
			}
		}
	}
	if ev.Kind == sglang.KindUvicornRunning {
		m.logUp = true
	}
	if s.progress {
		moved := s.phase > m.phase || (s.phase == m.phase && (s.pct > m.pct || (s.pct < 0 && ev.Kind != m.lastKind)))
		if s.phase >= m.phase && moved {
			if s.phase > m.phase {
				m.pct = -1
				probeNow = s.phase >= PhaseWarmup
			}
			m.phase = s.phase
			if s.pct >= 0 {
				m.pct = s.pct
			}
			m.lastKind = ev.Kind
			m.progressAt(now)
		}
		if s.phase == PhaseReady {
			m.logReady = true
			probeNow = true
		}
		// Normal output after a traceback means it was survived.
		m.traceback = false
		if m.fatalKind == weakFatal {
			m.fatalAt, m.fatalKind, m.fatalLine, m.fatalCause, m.causeRank = time.Time{}, notFatal, "", "", 0
		}
		return probeNow
	}
	switch {
	case ev.Kind == sglang.KindTracebackStart:
		m.traceback = true
	case s.fatal == strongFatal:
		m.arm(strongFatal, raw, now)
		m.cite(ev.Kind, raw)
	case ev.Kind == sglang.KindException:
		if m.fatalKind == notFatal && m.traceback {
			m.arm(weakFatal, raw, now)
		}
		if m.fatalKind != notFatal {
			m.cite(ev.Kind, raw)
		}
	}
	return false
}

// cite keeps the most specific line of a failure as its cause: the exception message over the
// "Scheduler hit an exception" header or the sigquit that follows it; the first among equals.
func (m *machine) cite(k sglang.Kind, raw string) {
	rank := 1
	switch k {
	case sglang.KindException, sglang.KindCUDAOOM, sglang.KindNCCLError, sglang.KindHostMemError,
		sglang.KindErrno98, sglang.KindInitFailed:
		rank = 2
	}
	if rank > m.causeRank {
		m.fatalCause, m.causeRank = raw, rank
	}
}

func (m *machine) arm(k fatalStrength, line string, now time.Time) {
	if k <= m.fatalKind {
		return
	}
	if m.fatalAt.IsZero() {
		m.fatalAt = now
	}
	m.fatalKind, m.fatalLine = k, line
}

// progressAt restarts the stall budget; the overall deadline stays where it is (Timeout is
// a hard deadline whatever the phase).
func (m *machine) progressAt(now time.Time) { m.lastProgress = now }

func (m *machine) pushTail(line string) {
	n := m.spec.TailLines
	if len(m.tail) >= n {
		copy(m.tail, m.tail[1:])
		m.tail = m.tail[:n-1]
	}
	m.tail = append(m.tail, line)
}

// onExit records the supervised process's end: before ready, that is always a failure.
func (m *machine) onExit(st ExitStatus, now time.Time) decision {
	m.exit = &st
	cause := "server process ended: " + st.String()
	if m.fatalLine != "" {
		cause += "; cause: " + m.causeLine()
	} else {
		cause += " during phase " + m.phase.String()
		if len(m.tail) > 0 {
			cause += " after: " + strings.TrimSpace(m.tail[len(m.tail)-1])
		}
	}
	return m.finish(CodeExited, cause)
}

func (m *machine) causeLine() string {
	if m.fatalCause != "" && m.fatalCause != m.fatalLine {
		return strings.TrimSpace(m.fatalLine) + " / " + strings.TrimSpace(m.fatalCause)
	}
	return strings.TrimSpace(m.fatalLine)
}

// onRound applies one probe-ladder result. again asks for the next round without waiting an
// interval: a confirming success must not cost a whole probe interval of readiness latency.
func (m *machine) onRound(r round, now time.Time) (d decision, again bool) {
	if m.d.done {
		return m.d, false
	}
	if r.kind != roundRefused && r.kind != roundNetErr && !m.bound {
		m.bound = true
		if m.phase < PhaseWarmup {
			m.phase, m.pct = PhaseWarmup, -1
			m.progressAt(now)
		}
	}
	switch r.kind {
	case roundOK:
		if m.logUp && !m.logReady {
			// Healthy by HTTP, but the log says the warmup has not finished (era A).
			m.successes = 0
			return m.d, false
		}
		m.successes++
		need := m.spec.Successes
		if m.logReady {
			need = 1
		}
		if m.successes >= need {
			m.phase, m.pct = PhaseReady, 100
			return m.finish(CodeReady, r.detail), false
		}
		return m.d, true
	case roundConfig:
		if r.auth && m.spec.APIKey == "" {
			// The key comes from the log, which may be behind the probes: attaching to a
			// running server, the first round races the reader through the log's backlog.
			if m.logAPIKey != r.key {
				return m.d, true // the key arrived after the round was sent: again, with it
			}
			if m.logAPIKey == "" && m.spec.Log != nil && !m.authWaited {
				m.authWaited = true // one interval for the server_args line, then it is final
				m.errors++
				m.successes = 0
				return m.d, false
			}
		}
		return m.finish(CodeHTTPConfig, r.detail), false
	case roundIdentity:
		return m.finish(CodeIdentity, r.detail), false
	case roundNetErr, roundHTTPOther, roundGenFailed:
		m.errors++
	}
	m.successes = 0
	return m.d, false
}

// onTick applies the time-driven rules: fatal confirmation, stall, overall deadline.
func (m *machine) onTick(now time.Time) decision {
	if m.d.done {
		return m.d
	}
	if !m.exitSeen.IsZero() && !now.Before(m.exitSeen.Add(exitDrain)) {
		return m.onExit(m.exitStatus, now)
	}
	if !m.fatalAt.IsZero() && !now.Before(m.fatalAt.Add(m.spec.FatalConfirm)) {
		return m.finish(CodeFatalLog, m.causeLine())
	}
	if !m.lastProgress.IsZero() && m.phase < PhaseReady {
		budget := m.spec.stallBudget(m.phase)
		if idle := now.Sub(m.lastProgress); idle >= budget {
			return m.finish(CodeStalled, fmt.Sprintf("no progress for %s in phase %s%s (stall budget %s)",
				idle.Round(time.Second), m.phase, m.pctSuffix(), budget))
		}
	}
	if !now.Before(m.deadline) {
		return m.finish(CodeTimeout, fmt.Sprintf("not ready after %s (phase %s%s, %d probe errors)",
			now.Sub(m.start).Round(time.Second), m.phase, m.pctSuffix(), m.errors))
	}
	return m.d
}

func (m *machine) pctSuffix() string {
	if m.pct < 0 {
		return ""
	}
	return fmt.Sprintf(" at %d%%", m.pct)
}

// nextWake is the earliest time a time-driven rule can fire.
func (m *machine) nextWake() time.Time {
	t := m.deadline
	if !m.exitSeen.IsZero() {
		if e := m.exitSeen.Add(exitDrain); e.Before(t) {
			t = e
		}
	}
	if !m.fatalAt.IsZero() {
		if f := m.fatalAt.Add(m.spec.FatalConfirm); f.Before(t) {
			t = f
		}
	}
	if !m.lastProgress.IsZero() && m.phase < PhaseReady {
		if s := m.lastProgress.Add(m.spec.stallBudget(m.phase)); s.Before(t) {
			t = s
		}
	}
	return t
}
