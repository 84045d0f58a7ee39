package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/testcontainers/testcontainers-go"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/ready"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
)

// fidelityReleases are the SGLang releases every behaviour spec runs at.
var fidelityReleases = []string{"0.5.2", "0.5.9"}

// syncBuffer is an io.Writer the server writes from its goroutines while a spec reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// vrun is a happy-path server (bound at 2 s, the warmup's generate at 3 s, ready at 3.3 s) on
// virtual time, with the spec as a client task of the same clock: waits cost nothing and every
// instant is exact, however loaded the machine is.
type vrun struct {
	srv            *fakeserver.Server
	clk            *vtime.Clock
	task           *vtime.Task
	ctx            context.Context
	env            harness.Env
	stdout, stderr *syncBuffer
	journal        *bytes.Buffer
}

func startVirtual(release string, faults ...fault.Spec) *vrun {
	GinkgoHelper()
	prof, err := sglang.LookupProfile(release)
	Expect(err).NotTo(HaveOccurred())
	clk := vtime.New(epoch, vtime.Options{})
	DeferCleanup(clk.Close)
	v := &vrun{clk: clk, stdout: &syncBuffer{}, stderr: &syncBuffer{}, journal: &bytes.Buffer{}}
	// The client is on the clock before the server starts: time cannot run through the
	// server's timeline before the spec acts.
	v.task = vtime.NewTask(clk)
	v.srv, err = fakeserver.Start(context.Background(), fakeserver.Config{Profile: prof, Clock: clk, Seed: 13,
		Timeline: fakeserver.HappyPath(epoch, prof, 2*time.Second, 0, 0), Faults: faults,
		Stdout: v.stdout, Stderr: v.stderr, Journal: v.journal})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) error { return v.srv.Stop(ctx) })
	DeferCleanup(v.task.End) // first: the server's stop may wait on the clock
	v.ctx = vtime.WithTask(context.Background(), v.task)
	v.env = harness.Env{Clock: clk, URL: v.srv.BaseURL()}
	return v
}

// until sleeps the client task to scenario offset at.
func (v *vrun) until(at time.Duration) {
	GinkgoHelper()
	Expect(v.task.Sleep(v.ctx, at-v.clk.Since(epoch))).To(Succeed())
}

// get is one GET with a scenario-time timeout: the status, or 0 when no answer came in time.
func (v *vrun) get(path string, timeout time.Duration) (code int, took time.Duration) {
	GinkgoHelper()
	begin := v.clk.Now()
	code, err := harness.HTTPGet(v.ctx, v.env, path, timeout)
	if err != nil {
		Expect(err.Error()).To(ContainSubstring("no answer within"))
		return 0, v.clk.Since(begin)
	}
	return code, v.clk.Since(begin)
}

// exit waits, idle on the clock, for the process to end: when and with what code.
func (v *vrun) exit() (time.Duration, int) {
	GinkgoHelper()
	vtime.IdleDuring(v.ctx, v.clk, func() {
		select {
		case <-v.srv.Done():
		case <-time.After(30 * time.Second):
		}
	})
	code, ok := v.srv.ExitCode()
	Expect(ok).To(BeTrue(), "the process never exited")
	return v.states(fakeserver.StateDead)[0], code
}

func (v *vrun) logs() string { return string(must(v.srv.Logs(context.Background()))) }

func (v *vrun) states(state string) []time.Duration {
	GinkgoHelper()
	var at []time.Duration
	for _, r := range must(v.srv.Journal(context.Background())) {
		if r.Type == fakeserver.RecState && r.State == state {
			at = append(at, r.At)
		}
	}
	return at
}

// checkStreams holds SGLang's stream split: stdout carries only uvicorn's access lines, stderr
// SGLang's own lines and uvicorn's lifecycle, and no access line.
func checkStreams(stdout, stderr string) {
	GinkgoHelper()
	access := func(l string) bool { return strings.Contains(l, `INFO:     `) && strings.Contains(l, ` - "`) }
	outLines := strings.Split(strings.TrimSpace(stdout), "\n")
	Expect(outLines).NotTo(BeEmpty())
	for _, l := range outLines {
		Expect(access(l)).To(BeTrue(), "stdout holds only access lines, got %q", l)
	}
	Expect(stdout).To(ContainSubstring(`"GET /health HTTP/1.1" 200 OK`))
	for _, l := range strings.Split(strings.TrimSpace(stderr), "\n") {
		Expect(access(l)).To(BeFalse(), "an access line on stderr: %q", l)
	}
	for _, want := range []string{"Load weight begin.", "INFO:     Uvicorn running on ", "INFO:     Application startup complete.",
		"Prefill batch", "The server is fired up and ready to roll!"} {
		Expect(stderr).To(ContainSubstring(want), "stderr has SGLang's and uvicorn's own lines")
	}
}

var _ = Describe("fidelity to SGLang's HTTP server", Label("fidelity", "inprocess"), func() {
	for _, release := range fidelityReleases {
		It("answers HEAD 405 on every route, GET as before, release "+release, func(ctx SpecContext) {
			v := startVirtual(release)
			v.until(10 * time.Second)
			c := &http.Client{Timeout: 5 * time.Second}
			for _, path := range []string{"/health", "/health_generate", "/v1/models", "/get_model_info", "/generate", "/v1/chat/completions"} {
				req := must(http.NewRequestWithContext(ctx, http.MethodHead, v.srv.BaseURL()+path, nil))
				var resp *http.Response
				var err error
				vtime.RequestDuring(v.ctx, v.clk, req.URL.Host, func() { resp, err = c.Do(req) })
				Expect(err).NotTo(HaveOccurred())
				body := must(io.ReadAll(resp.Body))
				resp.Body.Close()
				Expect(resp.StatusCode).To(Equal(http.StatusMethodNotAllowed), "HEAD %s", path)
				Expect(resp.Header.Get("Allow")).NotTo(BeEmpty(), "HEAD %s names the route's methods", path)
				Expect(resp.Header.Get("Content-Type")).To(Equal("application/json"))
				Expect(resp.Header.Get("Content-Length")).To(Equal("31"), `{"detail":"Method Not Allowed"}, headers only`)
				Expect(body).To(BeEmpty())
			}
			code, _ := v.get("/health", 5*time.Second)
			Expect(code).To(Equal(200), "GET still works")
			Expect(v.logs()).To(ContainSubstring(`"HEAD /health HTTP/1.1" 405 Method Not Allowed`))
		})

		It("times a healthy check at 1 s plus a few ms, so a 1 s client timeout never gets the 200, release "+release, func() {
			v := startVirtual(release)
			v.until(10 * time.Second)
			for range 3 {
				code, took := v.get("/health", time.Second)
				Expect(code).To(BeZero(), "a 1 s deadline that includes the dial misses the answer (took %v)", took)
				code, took = v.get("/health", 2*time.Second)
				Expect(code).To(Equal(200))
				Expect(took).To(BeNumerically(">", time.Second))
				Expect(took).To(BeNumerically("<=", time.Second+fakeserver.DefaultHealthOverheadMax))
			}
		})

		It("writes SGLang's own lines to stderr and only access lines to stdout, release "+release, func() {
			v := startVirtual(release)
			v.until(10 * time.Second)
			code, _ := v.get("/health", 5*time.Second)
			Expect(code).To(Equal(200))
			checkStreams(v.stdout.String(), v.stderr.String())
		})

		It("finishes a health check whose client left: logs the failure after 20 s and marks UnHealthy, release "+release, func() {
			v := startVirtual(release, fault.Spec{Kind: fault.WedgeScheduler, At: 10 * time.Second, For: time.Minute})
			v.until(12 * time.Second)
			code, _ := v.get("/health", time.Second) // the kubelet's default timeoutSeconds: 1
			Expect(code).To(BeZero())
			v.until(31 * time.Second)
			Expect(v.logs()).NotTo(ContainSubstring("Health check failed"), "the handler waits its full 20 s")
			Expect(v.states(fakeserver.StateUnhealthy)).To(BeEmpty())
			v.until(33 * time.Second)
			Expect(v.logs()).To(ContainSubstring("Health check failed. Server couldn't get a response from detokenizer for last 20 seconds. tic start time: 16:30:12. last_heartbeat time: "))
			Expect(v.states(fakeserver.StateUnhealthy)).To(Equal([]time.Duration{32 * time.Second}))
			Expect(v.logs()).NotTo(ContainSubstring(`"GET /health HTTP/1.1"`), "uvicorn prints no access line for a client that left")
			// A later probe with a long timeout sees what SGLang shows: UnHealthy does not gate
			// the check, the wedged scheduler does, so 503 after another 20 s.
			code, took := v.get("/health", time.Minute)
			Expect(code).To(Equal(503))
			Expect(took).To(Equal(20 * time.Second))
			// The scheduler is back at 70 s: a check whose client left again still passes and
			// sets the status back to Up.
			v.until(75 * time.Second)
			code, _ = v.get("/health", time.Second)
			Expect(code).To(BeZero())
			v.until(77 * time.Second)
			healthy := v.states(fakeserver.StateHealthy)
			Expect(healthy).To(HaveLen(1))
			Expect(healthy[0]).To(BeNumerically(">", 76*time.Second))
		})

		It("drains on SIGTERM: the handler's line, /health 503 during shutdown, exit 137 at the watchdog's next look, release "+release, func() {
			v := startVirtual(release)
			v.until(10 * time.Second)
			v.srv.Terminate()
			Expect(v.logs()).To(ContainSubstring("[2026-02-19 16:30:10] SIGTERM received. signum=None frame=None. Draining requests and shutting down..."))
			v.until(11 * time.Second)
			code, took := v.get("/health", 5*time.Second)
			Expect(code).To(Equal(503))
			Expect(took).To(BeZero())
			Expect(v.logs()).To(ContainSubstring("Health check request received during shutdown. Returning 503."))
			// The watchdog began with the warmup's generate at 3 s and looks every 5 s.
			at, exit := v.exit()
			Expect(at).To(Equal(13 * time.Second))
			Expect(exit).To(Equal(137))
			Expect(v.logs()).To(MatchRegexp(`\[2026-02-19 16:30:13\] Gracefully exiting\.\.\. [Rr]emaining number of requests 0`))
		})
	}
})

var _ = Describe("fidelity of the container's log streams", Label("fidelity", "container"), func() {
	for _, release := range fidelityReleases {
		It("keeps Docker's stdout to access lines and stderr to SGLang's own, release "+release, func(ctx SpecContext) {
			c := runContainer(ctx, fakeserver.WithSpeed(20), fakeserver.WithFlags("--profile", release, "--bind-after", "2s"))
			rep, err := ready.Wait(ctx, ready.Spec{Endpoint: c.BaseURL(), Timeout: 60 * time.Second, Interval: 100 * time.Millisecond})
			Expect(err).NotTo(HaveOccurred(), rep.Verdict())
			var stdout, stderr bytes.Buffer
			Eventually(func() string {
				stdout.Reset()
				stderr.Reset()
				demuxLogs(ctx, c.Container, &stdout, &stderr)
				return stdout.String()
			}).WithTimeout(10 * time.Second).WithPolling(100 * time.Millisecond).Should(ContainSubstring(`"GET /health HTTP/1.1" 200 OK`))
			checkStreams(stdout.String(), stderr.String())
		}, SpecTimeout(2*time.Minute))
	}
})

// demuxLogs reads a container's log as Docker stores it, one stream per destination.
func demuxLogs(ctx context.Context, ctr testcontainers.Container, stdout, stderr io.Writer) {
	GinkgoHelper()
	cli := must(testcontainers.NewDockerClientWithOpts(ctx))
	defer cli.Close()
	rc := must(cli.ContainerLogs(ctx, ctr.GetContainerID(), client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true}))
	defer rc.Close()
	_, err := stdcopy.StdCopy(stdout, stderr, rc)
	Expect(err).NotTo(HaveOccurred())
}
