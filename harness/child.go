package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
)

// childLauncher runs no server: a launch tool starts the case's server itself, through
// {{.Launch}}, as a fakesglang process of its own (its child, in its process tree, owning the
// port) whose clock follows the run's virtual clock over a socket. So a launcher that checks
// who owns the port, waits on the process or reads its output sees what it would see with
// SGLang.
type childLauncher struct {
	fakesglang string // the fake server binary {{.Launch}} runs
	dir        string // where run directories go; "" is os.TempDir
}

func (childLauncher) Name() string            { return "child" }
func (childLauncher) Published(float64) bool  { return false }
func (childLauncher) Overhead() time.Duration { return 250 * time.Millisecond }
func (childLauncher) Virtual() bool           { return true }
func (l childLauncher) Launch(ctx context.Context, c Case, speed float64) (Target, error) {
	if speed != Virtual {
		return nil, errors.New("child launcher: a launch tool's own server runs on virtual time only")
	}
	if c.Scenario == nil {
		return nil, fmt.Errorf("case %s has no scenario for {{.Launch}}", c.Name)
	}
	dir, err := os.MkdirTemp(l.dir, "ir-launch-"+c.Name+"-")
	if err != nil {
		return nil, err
	}
	t := &childTarget{c: c, dir: dir, fakesglang: l.fakesglang, done: make(chan struct{})}
	if err := t.prepare(); err != nil {
		_ = t.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("child launcher: %w", err)
	}
	return t, nil
}

var _ Target = (*childTarget)(nil)

// childTarget is a server a launch tool starts: nothing runs until the tool runs {{.Launch}}.
// The clock is held from the moment the stand-in command starts (it leaves a mark) until the
// fakesglang it becomes has joined the clock, so no time passes while a server is half started.
type childTarget struct {
	c          Case
	dir        string
	fakesglang string
	port       int
	reserved   *fakeserver.Reservation
	ln         net.Listener
	// holder listens on the port from the start when the scenario puts another process on
	// it (a stale server): a launcher that probes the moment it has started the server finds
	// it there, as it would on a host. The launched server is handed it over the clock socket.
	holder    *net.TCPListener
	vc        *vtime.Clock
	startHold func()
	detach    func()
	launch    string // {{.Launch}}
	exits     exitNotice

	mu     sync.Mutex
	link   *vtime.Link
	watch  *procWatch // the server's /proc files, for link's Idle
	pid    int
	late   time.Duration // how long after the run's start the server joined
	done   chan struct{}
	closed bool
	code   int
	exited bool
}

const (
	childMark    = "launched" // the stand-in's mark: a directory, made atomically
	childPIDFile = "pid"
	childSocket  = "vclock.sock"
	childProgram = "python3" // so the command line reads, and parses, as SGLang's
)

func (t *childTarget) prepare() error {
	var err error
	if t.reserved, err = fakeserver.ReservePort(); err != nil {
		return err
	}
	t.port = t.reserved.Port()
	if t.c.Scenario != nil && fault.HoldsPort(t.c.Scenario.Faults) {
		ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: t.port})
		if err != nil {
			return fmt.Errorf("the scenario's port holder: %w", err)
		}
		t.holder = ln
	}
	source, err := scenarioSource(t.c, t.dir)
	if err != nil {
		return err
	}
	if err := os.WriteFile(t.logPath(), nil, 0o644); err != nil {
		return err
	}
	sock := filepath.Join(t.dir, childSocket)
	if t.ln, err = net.Listen("unix", sock); err != nil {
		return fmt.Errorf("clock socket: %w", err)
	}
	t.vc = vtime.New(t.c.Timeline.Start, vtime.Options{})
	t.startHold = t.vc.Hold()
	t.detach = t.vc.Attach(t)
	prog := filepath.Join(t.dir, childProgram)
	if err := os.WriteFile(prog, []byte(t.standIn(source, sock)), 0o755); err != nil {
		return fmt.Errorf("write the {{.Launch}} program: %w", err)
	}
	t.launch = launchLine(prog, t.c, t.port)
	go t.accept()
	return nil
}

// standIn is the program {{.Launch}} names: it takes SGLang's `-m sglang.launch_server
// FLAGS`, marks the launch, and replaces itself with fakesglang on the run's clock, so the
// process the tool started is the server (its PID, its port, its output, its exit status).
func (t *childTarget) standIn(source, sock string) string {
	holderFlag := ""
	if t.holder != nil {
		holderFlag = " --port-holder-on-vclock"
	}
	return fmt.Sprintf(`#!/bin/sh
# incident-replay: {{.Launch}}, the scenario's fake SGLang server on the run's clock.
if [ "$1" != -m ] || [ "$2" != sglang.launch_server ]; then
  echo "incident-replay: {{.Launch}} runs python3 -m sglang.launch_server FLAGS; got: $*" >&2
  exit 2
fi
shift 2
if ! mkdir %[1]s 2>/dev/null; then
  echo "incident-replay: {{.Launch}} starts the scenario's server once per run" >&2
  exit 2
fi
echo $$ > %[2]s
unset LD_PRELOAD
exec %[3]s --scenario %[4]s --seed %[5]d --journal %[6]s --log-file %[7]s --vclock %[8]s%[10]s --start-time %[9]s "$@"
`, shq(filepath.Join(t.dir, childMark)), shq(filepath.Join(t.dir, childPIDFile)), shq(t.fakesglang), shq(source),
		t.c.seed(), shq(t.journalPath()), shq(t.logPath()), shq(sock), t.c.Timeline.Start.UTC().Format(time.RFC3339Nano), holderFlag)
}

func (t *childTarget) logPath() string     { return filepath.Join(t.dir, fakeserver.HostLog) }
func (t *childTarget) journalPath() string { return filepath.Join(t.dir, fakeserver.HostJournal) }

// accept leads the one fakesglang that dials the socket, and records its exit.
func (t *childTarget) accept() {
	conn, err := t.ln.Accept()
	if err != nil {
		return // closed by Stop: no launch
	}
	_ = t.ln.Close()
	if t.holder != nil {
		err := vtime.SendListener(conn.(*net.UnixConn), t.holder)
		_ = t.holder.Close() // the server's now; on an error it reports that it got none
		if err != nil {
			_ = conn.Close()
			close(t.done)
			return
		}
	}
	link := t.vc.Lead(conn, "127.0.0.1:"+strconv.Itoa(t.port))
	if pid := t.serverPID(); pid != 0 {
		w := newProcWatch(pid)
		link.WatchProcess(w.busy)
		t.mu.Lock()
		t.watch = w
		stopped := t.closed
		t.mu.Unlock()
		if stopped { // Stop ran before the watch was set: it closed none
			w.Close()
		}
	}
	t.mu.Lock()
	t.link = link
	t.mu.Unlock()
	select {
	case <-link.Joined():
		at, _ := link.JoinedAt()
		t.mu.Lock()
		t.late = at.Sub(t.c.Timeline.Start)
		t.mu.Unlock()
	case <-link.Done():
	}
	if code, announced, _ := link.WaitExit(context.Background()); announced {
		t.mu.Lock()
		t.code, t.exited = code, true
		t.mu.Unlock()
		close(t.done)
		// The exit is real: the tool sees it when the process is gone, which the clock
		// waits for.
		t.awaitGone(10 * time.Second)
		t.exits.fire(code)
		link.ExitSeen()
		return
	}
	t.awaitGone(10 * time.Second)
	close(t.done)
}

// awaitGone waits, at most max of wall time, until the server process has exited and its
// parent can have heard of it (reaped, or a zombie no tracer holds: see exitUnreported).
func (t *childTarget) awaitGone(max time.Duration) {
	deadline := time.Now().Add(max)
	for time.Now().Before(deadline) {
		if pid := t.serverPID(); pid == 0 || exitReported(pid) {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// serverPID is the launched server's process id, 0 before the stand-in has written it.
func (t *childTarget) serverPID() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.pid == 0 {
		if b, err := os.ReadFile(filepath.Join(t.dir, childPIDFile)); err == nil {
			t.pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
	}
	return t.pid
}

// Idle implements vtime.Participant: a launch that has begun and not joined the clock (or
// failed) is work in progress.
func (t *childTarget) Idle() (bool, time.Time) {
	t.mu.Lock()
	link := t.link
	t.mu.Unlock()
	if link != nil {
		select {
		case <-link.Joined(): // the link answers for the server from here on
			return true, time.Time{}
		case <-link.Done():
			return true, time.Time{}
		default:
			return false, time.Time{} // dialled the clock, not yet on it
		}
	}
	if _, err := os.Stat(filepath.Join(t.dir, childMark)); err != nil {
		return true, time.Time{} // not launched (yet)
	}
	pid := t.serverPID()
	return pid != 0 && !alive(pid), time.Time{}
}

// ToolStarted implements toolStarter.
func (t *childTarget) ToolStarted() {
	t.mu.Lock()
	hold := t.startHold
	t.startHold = nil
	t.mu.Unlock()
	if hold != nil {
		hold()
	}
}

// Command is {{.Launch}}.
func (t *childTarget) Command() string { return t.launch }

// HostProfile writes the case's modelled host as an llmwait --host-profile file and returns
// its path; "" when the case models none.
func (t *childTarget) HostProfile() (string, error) {
	if t.c.Compiled == nil || t.c.Compiled.Host.GPUCount == 0 {
		return "", nil
	}
	b, err := yaml.Marshal(t.c.Compiled.Host)
	if err != nil {
		return "", err
	}
	p := filepath.Join(t.dir, "host.yaml")
	return p, os.WriteFile(p, b, 0o644)
}

func (t *childTarget) Clock() replay.Clock   { return t.vc }
func (t *childTarget) BaseURL() string       { return "http://127.0.0.1:" + strconv.Itoa(t.port) }
func (t *childTarget) LogFile() string       { return t.logPath() }
func (t *childTarget) Done() <-chan struct{} { return t.done }
func (t *childTarget) OnExit(f func(int))    { t.exits.OnExit(f) }

func (t *childTarget) Exited() (int, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.code, t.exited
}

// Journal implements fakeserver.Target: the records written so far (none when the tool never
// launched). A server launched after the run's start is an error: its timeline would run
// from the run's start all the same.
func (t *childTarget) Journal(context.Context) ([]fakeserver.Record, error) {
	t.mu.Lock()
	late := t.late
	t.mu.Unlock()
	if late > 0 {
		return nil, fmt.Errorf("the tool ran {{.Launch}} %s into the run; a launch tool must start the server first (its timeline starts with the run)", late)
	}
	recs, err := fakeserver.ReadJournalFile(t.journalPath())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return recs, err
}

func (t *childTarget) Logs(context.Context) ([]byte, error) { return os.ReadFile(t.logPath()) }

func (t *childTarget) Wait(ctx context.Context) (int, error) {
	return waitExit(ctx, t.done, t.Exited, "the launched server ended without reporting its exit status")
}

// Stop kills the launched server if it still runs (a launcher in its own session outlives
// the tool's process group) and removes the run's files.
func (t *childTarget) Stop(context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	link, watch := t.link, t.watch
	t.mu.Unlock()
	t.ToolStarted()
	if pid := t.serverPID(); pid != 0 && alive(pid) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.awaitGone(5 * time.Second)
	}
	if t.ln != nil {
		_ = t.ln.Close()
	}
	if t.holder != nil {
		_ = t.holder.Close()
	}
	if link != nil {
		_ = link.Close()
	}
	if watch != nil {
		watch.Close()
	}
	if t.detach != nil {
		t.detach()
	}
	if t.vc != nil {
		t.vc.Close()
	}
	if t.reserved != nil {
		t.reserved.Release()
	}
	return os.RemoveAll(t.dir)
}
