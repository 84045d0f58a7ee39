package ready

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// Process is a server whose end Wait watches. Done closes when it has ended; Status is valid
// after that.
type Process interface {
	Done() <-chan struct{}
	Status() ExitStatus
}

// Terminator is a Process Wait may stop: on any failure in launch mode every process the
// launch started is killed so no scheduler child is left holding GPU memory or the port.
type Terminator interface {
	Terminate(ctx context.Context) error
}

// LaunchOptions configure Launch.
type LaunchOptions struct {
	Argv []string // the server command; Argv[0] is looked up in PATH
	Env  []string // full environment for the child; nil = inherit ours
	Dir  string
	// LogFile receives the child's stdout and stderr directly (O_APPEND), so the server keeps a
	// valid output when llmwait exits after ready. Required.
	LogFile string
	// Grace is how long SIGTERM gets before SIGKILL on Terminate; default 5s (wall time: it is
	// a real process).
	Grace time.Duration
	// CgroupDir, when set, is read for memory.events oom_kill to confirm an OOM kill.
	CgroupDir string
}

// Launched is a server process started by Launch, leader of its own session and process
// group; tree follows every process it starts.
type Launched struct {
	cmd     *exec.Cmd
	tree    *tree
	stop    chan struct{} // ends the tree's scanning
	done    chan struct{}
	status  ExitStatus
	grace   time.Duration
	cgroup  string
	oomBase int
	once    sync.Once
}

// treeScan is how often a launch's processes are listed while they change, so that a
// descendant is known before its parent exits (wall time: real processes); treeScanMax
// while they do not.
const (
	treeScan    = 50 * time.Millisecond
	treeScanMax = 2 * time.Second
)

// Launch starts the server in its own session (and process group) with stdout and stderr
// going to LogFile, and follows every process it starts until Terminate.
func Launch(opts LaunchOptions) (*Launched, error) {
	if len(opts.Argv) == 0 {
		return nil, errors.New("launch: no server command; pass it after --, e.g. llmwait launch -- python -m sglang.launch_server ...")
	}
	if opts.LogFile == "" {
		return nil, errors.New("launch: no log file: the server's output must go somewhere that outlives llmwait")
	}
	if err := os.MkdirAll(filepath.Dir(opts.LogFile), 0o755); err != nil {
		return nil, fmt.Errorf("launch: log directory: %w", err)
	}
	lf, err := os.OpenFile(opts.LogFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC|os.O_APPEND, 0o644) // one launch, one log: the follower reads it from the start
	if err != nil {
		return nil, fmt.Errorf("launch: open log file: %w", err)
	}
	defer lf.Close() // the child holds its own descriptor
	cmd := exec.Command(opts.Argv[0], opts.Argv[1:]...)
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	l := &Launched{cmd: cmd, stop: make(chan struct{}), done: make(chan struct{}), grace: opts.Grace, cgroup: opts.CgroupDir}
	if l.grace <= 0 {
		l.grace = 5 * time.Second
	}
	l.oomBase = oomKills(l.cgroup)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch %s: %w", opts.Argv[0], err)
	}
	l.tree = newTree("/proc", cmd.Process.Pid)
	l.tree.scan()
	go func() {
		// A server starts its processes early and keeps them: scan often while the tree
		// changes and back off while it stays as it is.
		d := treeScan
		t := time.NewTimer(d)
		defer t.Stop()
		for {
			select {
			case <-l.stop:
				return
			case <-t.C:
				if l.tree.scan() {
					d = treeScan
				} else {
					d = min(2*d, treeScanMax)
				}
				t.Reset(d)
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		l.status = exitStatus(cmd.ProcessState, err)
		if l.cgroup != "" && oomKills(l.cgroup) > l.oomBase {
			l.status.OOMKill = true
		}
		close(l.done)
	}()
	return l, nil
}

func exitStatus(ps *os.ProcessState, err error) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1, Signal: "unknown: " + fmt.Sprint(err)}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: -1, Signal: ws.Signal().String()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// oomKills reads the oom_kill counter of a cgroup v2 directory; 0 when unavailable.
func oomKills(dir string) int {
	if dir == "" {
		return 0
	}
	b, err := os.ReadFile(filepath.Join(dir, "memory.events"))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

func (l *Launched) PID() int              { return l.cmd.Process.Pid }
func (l *Launched) Done() <-chan struct{} { return l.done }
func (l *Launched) Status() ExitStatus    { <-l.done; return l.status }

// Terminate signals every process of the launch (SIGTERM, then SIGKILL after the grace
// period): the leader's group and session, and every descendant seen, even one that left
// the session with setsid. It waits for the leader to be reaped and, bounded by ctx, for the
// rest to be gone.
func (l *Launched) Terminate(ctx context.Context) error {
	var err error
	l.once.Do(func() {
		defer close(l.stop)
		pgid := l.cmd.Process.Pid
		l.tree.scan()
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		l.tree.signal(syscall.SIGTERM)
		select {
		case <-l.done:
		case <-time.After(l.grace):
		case <-ctx.Done():
		}
		l.tree.scan()
		if kerr := syscall.Kill(-pgid, syscall.SIGKILL); kerr != nil && !errors.Is(kerr, syscall.ESRCH) {
			err = fmt.Errorf("kill process group %d: %w", pgid, kerr)
		}
		for l.tree.signal(syscall.SIGKILL) > 0 {
			select {
			case <-ctx.Done():
				err = errors.Join(err, fmt.Errorf("processes of the launch still running: %w", ctx.Err()))
				return
			case <-time.After(10 * time.Millisecond):
			}
			l.tree.scan()
		}
		select {
		case <-l.done:
		case <-ctx.Done():
			err = errors.Join(err, ctx.Err())
		}
	})
	return err
}

// Attached watches a process we did not start (attach --pid). Its exit code is unknowable
// (it is not our child); Status says so.
type Attached struct {
	pid  int
	done chan struct{}
}

// AttachPID polls for the process's disappearance every poll of clock time. A PID that is
// already gone yields a Process that is already done.
func AttachPID(ctx context.Context, clock clockwork.Clock, procRoot string, pid int, poll time.Duration) (*Attached, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("attach: PID must be positive, got %d", pid)
	}
	if procRoot == "" {
		procRoot = "/proc"
	}
	if poll <= 0 {
		poll = 100 * time.Millisecond
	}
	a := &Attached{pid: pid, done: make(chan struct{})}
	if !alive(procRoot, pid) {
		// Gone before we looked: the server already died (a fast crash), which Wait reports as
		// an exit, not as a usage error.
		close(a.done)
		return a, nil
	}
	go func() {
		t := clock.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.Chan():
				if !alive(procRoot, pid) {
					close(a.done)
					return
				}
			}
		}
	}()
	return a, nil
}

// alive treats a zombie as dead: it will never serve again.
func alive(procRoot string, pid int) bool {
	st, err := proc.Read(procRoot, pid)
	return err == nil && st.Alive()
}

func (a *Attached) Done() <-chan struct{} { return a.done }
func (a *Attached) Status() ExitStatus {
	return ExitStatus{Code: -1, Signal: "unknown (not our child; see its log)"}
}

// Container is a server running in a container, watched with the docker CLI: `docker logs -f`
// for output, `docker wait` for the exit code.
type Container struct {
	id     string
	done   chan struct{}
	status ExitStatus
}

// AttachContainer starts `docker wait ID` and returns the container's log stream.
func AttachContainer(ctx context.Context, id string) (*Container, io.ReadCloser, error) {
	if id == "" {
		return nil, nil, errors.New("attach: empty container ID")
	}
	c := &Container{id: id, done: make(chan struct{})}
	logs := exec.CommandContext(ctx, "docker", "logs", "-f", id)
	pr, pw := io.Pipe()
	logs.Stdout, logs.Stderr = pw, pw
	if err := logs.Start(); err != nil {
		return nil, nil, fmt.Errorf("attach: docker logs -f %s: %w (is the docker CLI installed?)", id, err)
	}
	go func() { pw.CloseWithError(logs.Wait()) }()
	go func() {
		out, err := exec.CommandContext(ctx, "docker", "wait", id).Output()
		code, perr := strconv.Atoi(strings.TrimSpace(string(out)))
		switch {
		case ctx.Err() != nil:
			return
		case err != nil || perr != nil:
			c.status = ExitStatus{Code: -1, Signal: fmt.Sprintf("unknown (docker wait: %v)", err)}
		default:
			c.status = ExitStatus{Code: code}
		}
		close(c.done)
	}()
	return c, pr, nil
}

func (c *Container) Done() <-chan struct{} { return c.done }
func (c *Container) Status() ExitStatus    { return c.status }
