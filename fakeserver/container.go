package fakeserver

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"

	"github.com/incident-replay/incident-replay/internal/proc"
	"github.com/incident-replay/incident-replay/vtime"
)

// Labels every container this package starts carries, so a sweep can find leftovers (Ryuk
// is off: nothing else removes them).
const (
	LabelProject = "org.incident-replay.project"
	ProjectName  = "incident-replay"
	LabelRun     = "org.incident-replay.run"
	// LabelOwner names the process that started the container (see Owner), so a sweep can
	// tell an orphan from a container of a run still in progress.
	LabelOwner = "org.incident-replay.owner"
	// ContainerPort is where fakesglang listens inside the container.
	ContainerPort = "30000/tcp"
	journalPath   = "/journal.jsonl"
	hostDirMount  = "/run/fakesglang" // WithHostDir's mount point
	scenarioPath  = "/scenario.yaml"
	imageRepo     = "incident-replay/fakesglang"
)

//go:embed Dockerfile
var dockerfile []byte

// RunID identifies this process's containers (env INCIDENT_REPLAY_RUN_ID, else random).
var RunID = func() string {
	if id := os.Getenv("INCIDENT_REPLAY_RUN_ID"); id != "" {
		return id
	}
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}()

// Owner identifies this process among the daemon's clients: host, PID and the process's
// start time (clock ticks since boot), so a PID reused after the owner died is not taken for
// it. The start time is empty where /proc is missing.
var Owner = func() string {
	h, _ := os.Hostname()
	return h + "/" + strconv.Itoa(os.Getpid()) + "/" + procStart(os.Getpid())
}()

// procStart is field 22 of /proc/PID/stat, the process's start time, or "" if unreadable.
func procStart(pid int) string {
	st, err := proc.Read("", pid)
	if err != nil {
		return ""
	}
	return strconv.FormatUint(st.StartTime, 10)
}

// ownerGone reports whether the process an owner label names has certainly exited: it ran
// on this host and no process with its PID and start time exists. Containers of other hosts
// (a shared daemon) and unreadable labels are not judged gone.
func ownerGone(owner string) bool {
	host, rest, ok := strings.Cut(owner, "/")
	if !ok {
		return false
	}
	pidStr, start, _ := strings.Cut(rest, "/")
	pid, err := strconv.Atoi(pidStr)
	if h, _ := os.Hostname(); err != nil || pid <= 0 || host != h {
		return false
	}
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	return start != "" && procStart(pid) != "" && procStart(pid) != start
}

// Container is fakesglang running in Docker; it implements Target.
type Container struct {
	testcontainers.Container
	baseURL string
	hostDir string      // WithHostDir: the journal and log are read here, not through Docker
	link    *vtime.Link // WithClock: the container's clock follows this process's
	// port is the container's host port, reserved for it until Stop.
	port *Reservation
}

type options struct {
	scenario string
	speed    float64
	seed     int64
	flags    []string
	env      map[string]string
	hostDir  string
	clock    *vtime.Clock
}

// Option configures Run. It is also a testcontainers.ContainerCustomizer, so module options
// and testcontainers options go in the same list.
type Option func(*options) error

// Customize implements testcontainers.ContainerCustomizer; module options act in Run.
func (Option) Customize(*testcontainers.GenericContainerRequest) error { return nil }

var _ testcontainers.ContainerCustomizer = Option(nil)

// WithScenario runs a catalogue scenario by name, or a scenario file from the host (copied in).
func WithScenario(nameOrFile string) Option {
	return func(o *options) error {
		if nameOrFile == "" {
			return errors.New("WithScenario: empty name; pass a catalogue name or a file path")
		}
		o.scenario = nameOrFile
		return nil
	}
}

// WithSpeed sets the time factor (scenario seconds per wall second).
func WithSpeed(factor float64) Option {
	return func(o *options) error {
		if factor <= 0 || factor != factor {
			return fmt.Errorf("WithSpeed: factor %v must be > 0", factor)
		}
		o.speed = factor
		return nil
	}
}

// WithSeed sets the seed every random choice derives from.
func WithSeed(seed int64) Option { return func(o *options) error { o.seed = seed; return nil } }

// WithFlags appends SGLang launch flags (e.g. "--enable-metrics", "--api-key", "k").
func WithFlags(flags ...string) Option {
	return func(o *options) error { o.flags = append(o.flags, flags...); return nil }
}

// WithHostDir bind-mounts dir (on the Docker host, which must be this host) into the
// container and has fakesglang write its journal and a copy of its log there, as journal.jsonl
// and server.log: a tool tails the log as the server writes it (Docker's log stream can lag by
// seconds, which at 60x is minutes of scenario time), and the journal is read without a copy
// out of the container. The directory is made writable for the container's user.
func WithHostDir(dir string) Option {
	return func(o *options) error {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("WithHostDir: %w", err)
		}
		if st, err := os.Stat(abs); err != nil || !st.IsDir() {
			return fmt.Errorf("WithHostDir: %s is not a directory (create it first)", abs)
		}
		if err := os.Chmod(abs, 0o777); err != nil {
			return fmt.Errorf("WithHostDir: %w", err)
		}
		o.hostDir = abs
		return nil
	}
}

// HostLog and HostJournal name the files WithHostDir has fakesglang write in its directory;
// hostClock is WithClock's socket there.
const (
	HostLog     = "server.log"
	HostJournal = "journal.jsonl"
	hostClock   = "vclock.sock"
)

// WithClock runs the container's fakesglang on c, a virtual clock of this process: the
// container's clock follows c over a Unix socket in the WithHostDir directory (required), so
// a tool on c and the server in the container see one time, as in-process. The container
// shares the host's network and its server listens on 127.0.0.1 of this host: a byte a client
// has sent is then in a queue the server's clock watches, where a port published through
// docker-proxy would hide it in a process no clock sees.
func WithClock(c *vtime.Clock) Option {
	return func(o *options) error {
		if c == nil {
			return errors.New("WithClock: nil clock")
		}
		o.clock = c
		return nil
	}
}

// WithEnv sets environment variables (SGLANG_HEALTH_CHECK_TIMEOUT, ...).
func WithEnv(env map[string]string) Option {
	return func(o *options) error {
		if o.env == nil {
			o.env = map[string]string{}
		}
		for k, v := range env {
			o.env[k] = v
		}
		return nil
	}
}

// Run starts image (from BuildImage) with the options. The port is published on 127.0.0.1
// only; the container is labelled for Sweep. Like testcontainers modules it returns a
// non-nil *Container with the error whenever a container was created: terminate it.
func Run(ctx context.Context, image string, opts ...testcontainers.ContainerCustomizer) (*Container, error) {
	o := options{speed: 1}
	for _, opt := range opts {
		if mo, ok := opt.(Option); ok {
			if err := mo(&o); err != nil {
				return nil, fmt.Errorf("run fakesglang: %w", err)
			}
		}
	}
	journal := journalPath
	if o.hostDir != "" {
		journal = path.Join(hostDirMount, HostJournal)
	}
	if o.clock != nil {
		return runOnClock(ctx, image, o, opts)
	}
	args := []string{"--host", "0.0.0.0", "--port", "30000", "--journal", journal,
		"--speed", strconv.FormatFloat(o.speed, 'g', -1, 64), "--seed", strconv.FormatInt(o.seed, 10)}
	base := baseCustomizers(o, &args)
	// The host port is picked here, not left to Docker: a server that dies within the launch
	// (nccl-init-error exits ~100 ms in) has no port mapping left to inspect by the time Run
	// returns, and its URL must still be known. Another process can take the port between the
	// pick and Docker's bind; then Docker refuses, and a fresh port is tried.
	for attempt := 1; ; attempt++ {
		res, err := hostPorts.take()
		if err != nil {
			return nil, fmt.Errorf("run fakesglang: %w", err)
		}
		port := res.Port()
		all := append(append(slices.Clip(base), loopbackPort(port, ContainerPort)), opts...)
		ctr, err := testcontainers.Run(ctx, image, all...)
		var c *Container
		if ctr != nil {
			c = &Container{Container: ctr, hostDir: o.hostDir, baseURL: "http://127.0.0.1:" + strconv.Itoa(port), port: res}
		} else {
			res.Release()
		}
		if err != nil && attempt < 3 && portTaken(err) {
			if c != nil {
				_ = c.Stop(context.WithoutCancel(ctx))
			}
			continue
		}
		if err != nil {
			return c, fmt.Errorf("run fakesglang: %w", err)
		}
		return c, nil
	}
}

// baseCustomizers are the labels, mounts, files, command and environment of every
// fakesglang container; args are fakesglang's own flags so far.
func baseCustomizers(o options, args *[]string) []testcontainers.ContainerCustomizer {
	base := []testcontainers.ContainerCustomizer{
		testcontainers.WithLabels(map[string]string{LabelProject: ProjectName, LabelRun: RunID, LabelOwner: Owner}),
	}
	if o.hostDir != "" {
		*args = append(*args, "--log-file", path.Join(hostDirMount, HostLog))
		base = append(base, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, o.hostDir+":"+hostDirMount)
		}))
	}
	if o.scenario != "" {
		if _, err := os.Stat(o.scenario); err == nil {
			base = append(base, testcontainers.WithFiles(testcontainers.ContainerFile{HostFilePath: o.scenario, ContainerFilePath: scenarioPath, FileMode: 0o644}))
			*args = append(*args, "--scenario", scenarioPath)
		} else {
			*args = append(*args, "--scenario", o.scenario)
		}
	} else {
		*args = append(*args, "--model-path", "qwen/qwen2.5-0.5b-instruct")
	}
	*args = append(*args, o.flags...)
	base = append(base, testcontainers.WithCmd(*args...))
	if len(o.env) > 0 {
		base = append(base, testcontainers.WithEnv(o.env))
	}
	return base
}

// runOnClock is Run with WithClock: host networking on a loopback port picked here, and the
// clock's socket in the host directory. The clock is held from before the container starts
// until its fakesglang is on it.
func runOnClock(ctx context.Context, image string, o options, opts []testcontainers.ContainerCustomizer) (*Container, error) {
	if o.hostDir == "" {
		return nil, errors.New("run fakesglang: WithClock needs WithHostDir (the clock's socket lives there)")
	}
	sock := filepath.Join(o.hostDir, hostClock)
	_ = os.Remove(sock)
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return nil, fmt.Errorf("run fakesglang: clock socket: %w", err)
	}
	defer ln.Close()
	defer os.Remove(sock) // the accepted connection outlives the path
	if err := os.Chmod(sock, 0o777); err != nil {
		return nil, fmt.Errorf("run fakesglang: %w", err)
	}
	release := o.clock.Hold()
	defer release()
	res, err := hostPorts.take()
	if err != nil {
		return nil, fmt.Errorf("run fakesglang: %w", err)
	}
	port := res.Port()
	args := []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--journal", path.Join(hostDirMount, HostJournal), "--vclock", path.Join(hostDirMount, hostClock),
		"--start-time", o.clock.Now().UTC().Format(time.RFC3339Nano), "--seed", strconv.FormatInt(o.seed, 10)}
	base := baseCustomizers(o, &args)
	base = append(base, testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
		hc.NetworkMode = "host"
	}))
	ctr, err := testcontainers.Run(ctx, image, append(base, opts...)...)
	if ctr == nil {
		res.Release()
	}
	var c *Container
	if ctr != nil {
		c = &Container{Container: ctr, hostDir: o.hostDir, baseURL: "http://127.0.0.1:" + strconv.Itoa(port), port: res}
	}
	if err != nil {
		return c, fmt.Errorf("run fakesglang: %w", err)
	}
	if err := c.join(ctx, ln, o.clock, "127.0.0.1:"+strconv.Itoa(port)); err != nil {
		return c, err
	}
	return c, nil
}

// joinLimit bounds the wall time from the container's start until its fakesglang is on the
// clock. Alone that is well under a second; a matrix's 132 containers starting at once beside
// two busy-loop CPU hogs took over 30 s. A container that exits first ends the wait at once.
const joinLimit = 3 * time.Minute

// join waits until the container's fakesglang has dialled ln and joined clock (its journal
// exists and its timeline is scheduled), the container has exited, or joinLimit has passed.
func (c *Container) join(ctx context.Context, ln net.Listener, clock *vtime.Clock, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, joinLimit)
	defer cancel()
	exited := make(chan int, 1)
	go func() {
		if code, werr := c.Wait(ctx); werr == nil {
			exited <- code
		}
	}()
	accepted := make(chan net.Conn, 1)
	go func() {
		defer close(accepted)
		if conn, aerr := ln.Accept(); aerr == nil {
			accepted <- conn
		}
	}()
	defer func() {
		if c.link == nil { // a connection accepted too late is nobody's
			_ = ln.Close()
			if conn, ok := <-accepted; ok {
				_ = conn.Close()
			}
		}
	}()
	gaveUp := func(why string) error {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("run fakesglang: the container's fakesglang %s within %s; see its logs", why, joinLimit)
		}
		return ctx.Err()
	}
	select {
	case conn := <-accepted:
		if conn == nil {
			return errors.New("run fakesglang: the clock socket closed before the container's fakesglang dialled it")
		}
		c.link = clock.Lead(conn, addr)
	case code := <-exited:
		return fmt.Errorf("run fakesglang: the container exited with code %d before its fakesglang dialled the clock; see its logs", code)
	case <-ctx.Done():
		return gaveUp("did not dial the clock")
	}
	select {
	case <-c.link.Joined():
		return nil
	case <-c.link.Done():
		return errors.New("run fakesglang: the container's fakesglang left the clock before it joined; see its logs")
	case <-ctx.Done():
		return gaveUp("did not join the clock")
	}
}

// Link is the container's end of WithClock's clock, nil without it: it announces the server
// process's exit at the virtual instant it happens.
func (c *Container) Link() *vtime.Link { return c.link }

func portTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use")
}

// loopbackPort exposes the container port and publishes it on 127.0.0.1:hostPort.
func loopbackPort(hostPort int, port string) testcontainers.CustomizeRequestOption {
	return func(req *testcontainers.GenericContainerRequest) error {
		if err := testcontainers.WithExposedPorts(port)(req); err != nil {
			return err
		}
		lo := netip.MustParseAddr("127.0.0.1")
		return testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			if hc.PortBindings == nil {
				hc.PortBindings = network.PortMap{}
			}
			hc.PortBindings[network.MustParsePort(port)] = []network.PortBinding{{HostIP: lo, HostPort: strconv.Itoa(hostPort)}}
		})(req)
	}
}

// BaseURL implements Target: http://127.0.0.1:<published port>.
func (c *Container) BaseURL() string { return c.baseURL }

// Logs implements Target.
func (c *Container) Logs(ctx context.Context) ([]byte, error) {
	rc, err := c.Container.Logs(ctx)
	if err != nil {
		return nil, fmt.Errorf("fakesglang logs: %w", err)
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

// Journal implements Target; it works on a running or an exited container.
func (c *Container) Journal(ctx context.Context) ([]Record, error) {
	if c.hostDir != "" {
		recs, err := ReadJournalFile(filepath.Join(c.hostDir, HostJournal))
		if err != nil {
			return nil, fmt.Errorf("fakesglang journal: %w", err)
		}
		return recs, nil
	}
	rc, err := c.CopyFileFromContainer(ctx, journalPath)
	if err != nil {
		return nil, fmt.Errorf("fakesglang journal: %w", err)
	}
	defer rc.Close()
	return ReadJournal(rc)
}

// ReadJournalFile reads the journal a running or exited fakesglang writes (--journal FILE).
// Records are written one Write each; a read that races one ends on the last whole line.
func ReadJournalFile(path string) ([]Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ReadJournal(bytes.NewReader(b[:bytes.LastIndexByte(b, '\n')+1]))
}

// Wait implements Target: it blocks until the container exits and returns its exit code.
// Docker's wait API answers the moment the process ends; polling the state lags by a second
// or more on a busy daemon, a minute of scenario time at 60x. An error that satisfies
// IsGone means the container was removed.
func (c *Container) Wait(ctx context.Context) (int, error) {
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err != nil {
		return 0, fmt.Errorf("fakesglang wait: %w", err)
	}
	defer cli.Close()
	w := cli.ContainerWait(ctx, c.GetContainerID(), client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case r := <-w.Result:
		return int(r.StatusCode), nil
	case err := <-w.Error:
		return 0, fmt.Errorf("fakesglang wait: %w", err)
	}
}

// IsGone reports whether err says the container no longer exists.
func IsGone(err error) bool {
	return err != nil && (cerrdefs.IsNotFound(err) || strings.Contains(err.Error(), "No such container"))
}

// Stop implements Target: terminate and remove the container.
// A container on a virtual clock (WithClock) is killed at once: its SIGTERM drain would wait
// for virtual time its owner is no longer moving.
func (c *Container) Stop(ctx context.Context) error {
	opts := []testcontainers.TerminateOption{testcontainers.StopContext(ctx)}
	if c.link != nil {
		opts = append(opts, testcontainers.StopTimeout(0))
	}
	err := testcontainers.TerminateContainer(c.Container, opts...)
	if err != nil && !IsGone(err) && strings.Contains(err.Error(), "unable to remove filesystem") {
		err = c.removeAgain(ctx, err)
	}
	if c.link != nil {
		_ = c.link.Close()
	}
	if c.port != nil && (err == nil || IsGone(err)) {
		c.port.Release()
	}
	return err
}

// removeAgain retries the removal of a stopped container whose files the daemon failed to
// delete: a loaded daemon now and then answers "unable to remove filesystem ... directory
// not empty" (once in a 363-container matrix, which then lost that cell's verdict). It
// returns first's error when every try fails.
func (c *Container) removeAgain(ctx context.Context, first error) error {
	return retryRemove(ctx, c.GetContainerID(), first, remove, 5, 200*time.Millisecond)
}

// retryRemove calls rm for id up to tries times, pause apart (the first after a pause), until
// one succeeds; it returns first when none did or ctx ended.
func retryRemove(ctx context.Context, id string, first error, rm func(context.Context, []string) (int, error), tries int, pause time.Duration) error {
	t := time.NewTimer(pause)
	defer t.Stop()
	for range tries {
		select {
		case <-ctx.Done():
			return first
		case <-t.C:
		}
		if ctx.Err() != nil { // both were ready: the select may have taken the timer
			return first
		}
		if _, err := rm(ctx, []string{id}); err == nil {
			return nil
		}
		t.Reset(pause)
	}
	return first
}

var _ Target = (*Container)(nil)
var _ Target = (*Server)(nil)
