package fakeserver

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fault"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
)

// Config is one run of the fake server.
type Config struct {
	Profile  sglang.Profile
	Args     sglang.ServerArgs // zero Port: pick a free loopback port at Start; zero Host: 127.0.0.1
	Timeline replay.Timeline
	Faults   []fault.Spec
	Behavior Behavior
	// Env is the process environment the server reads (SGLANG_HEALTH_CHECK_TIMEOUT,
	// SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION, http_proxy...). Behavior fields win over it.
	Env   map[string]string
	Clock replay.Clock // nil: replay.Scaled(Timeline.Start, 1)
	Seed  int64        // drives every random choice: client ports, ids, generated tokens

	Stdout, Stderr io.Writer // nil: discarded (Logs still has them)
	LogFile        string    // also write every line here (SGLang's --log-file equivalent)
	Journal        io.Writer // ground-truth JSON lines; nil: none

	// Holder is the port holder's socket (errno98, stale_listener), already listening: the
	// other process was on the port before this server started, so a client that connects
	// at once is queued, not refused. nil: the server opens it when it starts.
	Holder net.Listener
}

// args are the launch flags the HTTP surface depends on, resolved from sglang.ServerArgs.
type args struct {
	Host              string // default 127.0.0.1
	Port              int    // 0: pick a free loopback port at Start
	ModelPath         string
	ServedModelName   string // default ModelPath
	APIKey            string
	EnableMetrics     bool
	SkipServerWarmup  bool
	ContextLength     int // max_model_len; default 32768
	TPSize            int // default 1
	DecodeLogInterval int // default 40
}

// Behavior tunes what the timeline does not say: latencies (scenario time) and probe details.
type Behavior struct {
	// WarmupPoll is the wait between bind and the first model-info poll (SGLang sleeps 1 s).
	WarmupPoll time.Duration
	// WarmupGenerate is how long the warmup POST /generate takes.
	WarmupGenerate time.Duration
	// WarmupTokens is the prefill size of the warmup request (6 or 7 in real logs).
	WarmupTokens int
	// HealthLatency is how long a generating health check sleeps before it looks for the
	// scheduler's answer (SGLang: asyncio.sleep(1); >= 1 s).
	HealthLatency time.Duration
	// HealthOverheadMin and HealthOverheadMax bound the check-and-respond time after that
	// sleep, drawn per check from the seed: a passing check answers after HealthLatency plus
	// a few milliseconds, never exactly 1 s, so a client whose 1 s deadline includes the dial
	// never gets the 200 (as on SGLang). Zero: 2 ms and 15 ms.
	HealthOverheadMin, HealthOverheadMax time.Duration
	// HealthTimeout is SGLANG_HEALTH_CHECK_TIMEOUT: the wait before a hung check fails.
	HealthTimeout time.Duration
	// HealthGeneration is SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (era C; default on).
	HealthGeneration *bool
	// ProbeTokens is the prefill size a health probe logs (1; the GLM incident shows 64).
	ProbeTokens int
	// ProbeCUDAGraph is the "cuda graph:" value printed on probe prefill lines.
	ProbeCUDAGraph bool
	// TokenLatency is the time per generated token; 0 streams as fast as the client reads.
	TokenLatency time.Duration
	// DefaultMaxTokens applies when a request does not say how many tokens to generate.
	DefaultMaxTokens int
	// PID is the uvicorn "Started server process [PID]" number; 0: derived from Seed.
	PID int
}

// Limits that guard the server against hostile clients (wall time: they protect the host).
const (
	MaxHeaderBytes    = 64 << 10
	MaxBodyBytes      = 4 << 20
	ReadHeaderTimeout = 10 * time.Second
	MaxTokensCap      = 4096
)

// EnvKeys are the environment variables the server reads from Config.Env.
var EnvKeys = []string{"SGLANG_HEALTH_CHECK_TIMEOUT", "SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"}

// InheritEnv overlays this process's values of EnvKeys on c.Env, as a real server inherits
// its launcher's environment; they win over the scenario's.
func (c *Config) InheritEnv() {
	for _, k := range EnvKeys {
		if v, ok := os.LookupEnv(k); ok {
			if c.Env == nil {
				c.Env = map[string]string{}
			}
			c.Env[k] = v
		}
	}
}

func resolveArgs(sa sglang.ServerArgs) args {
	a := args{Host: sa.Host, Port: sa.Port, ModelPath: sa.ModelPath, ServedModelName: sa.ServedModelName,
		APIKey: sa.APIKey, EnableMetrics: sa.EnableMetrics, SkipServerWarmup: sa.SkipServerWarmup,
		TPSize: sa.TPSize, DecodeLogInterval: sa.DecodeLogInterval}
	if sa.ContextLength != nil {
		a.ContextLength = *sa.ContextLength
	}
	if a.Host == "" {
		a.Host = "127.0.0.1"
	}
	if a.ModelPath == "" {
		a.ModelPath = "qwen/qwen2.5-0.5b-instruct"
	}
	if a.ServedModelName == "" {
		a.ServedModelName = a.ModelPath
	}
	if a.ContextLength == 0 {
		a.ContextLength = 32768
	}
	if a.TPSize == 0 {
		a.TPSize = 1
	}
	if a.DecodeLogInterval == 0 {
		a.DecodeLogInterval = 40
	}
	return a
}

// The default bounds of a health check's check-and-respond time after its 1 s sleep.
const (
	DefaultHealthOverheadMin = 2 * time.Millisecond
	DefaultHealthOverheadMax = 15 * time.Millisecond
)

// DefaultHealthTimeout is SGLANG_HEALTH_CHECK_TIMEOUT's default: a generating health check
// that has not finished by then answers 503.
const DefaultHealthTimeout = 20 * time.Second

func (c *Config) withDefaults() error {
	if c.Profile.Era == 0 {
		c.Profile = sglang.ProfileFor(sglang.EraC)
	}
	b := &c.Behavior
	if b.WarmupPoll == 0 {
		b.WarmupPoll = time.Second
	}
	if b.WarmupGenerate == 0 {
		b.WarmupGenerate = 300 * time.Millisecond
	}
	if b.WarmupTokens == 0 {
		b.WarmupTokens = 7
		if c.Profile.Era == sglang.EraC {
			b.WarmupTokens = 6
		}
	}
	if b.HealthTimeout == 0 {
		b.HealthTimeout = DefaultHealthTimeout
		if v, ok := c.Env["SGLANG_HEALTH_CHECK_TIMEOUT"]; ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n <= 0 {
				return fmt.Errorf("fakeserver: SGLANG_HEALTH_CHECK_TIMEOUT=%q: use a whole number of seconds > 0", v)
			}
			b.HealthTimeout = time.Duration(n) * time.Second
		}
	}
	if b.HealthLatency == 0 {
		b.HealthLatency = time.Second
	}
	if b.HealthOverheadMin == 0 && b.HealthOverheadMax == 0 {
		b.HealthOverheadMin, b.HealthOverheadMax = DefaultHealthOverheadMin, DefaultHealthOverheadMax
	}
	if b.HealthGeneration == nil {
		on := true
		if v, ok := c.Env["SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION"]; ok {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "0", "false", "no", "off":
				on = false
			case "1", "true", "yes", "on", "":
			default:
				return fmt.Errorf("fakeserver: SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=%q: use true or false", v)
			}
		}
		b.HealthGeneration = &on
	}
	if b.ProbeTokens == 0 {
		b.ProbeTokens = 1
	}
	if b.DefaultMaxTokens == 0 {
		b.DefaultMaxTokens = 16
	}
	if b.PID == 0 {
		b.PID = 1000 + int(uint64(c.Seed)%60000)
	}
	return nil
}

func (c *Config) validate() error {
	var errs []error
	if c.Args.Port < 0 || c.Args.Port > 65535 || c.Args.TPSize < 0 {
		errs = append(errs, fmt.Errorf("fakeserver: port %d is out of range; use 0 (pick one) or 1..65535, and tp >= 1", c.Args.Port))
	}
	if c.Behavior.HealthLatency < time.Second {
		errs = append(errs, fmt.Errorf("fakeserver: health latency %v is below SGLang's 1 s sleep; use >= 1s", c.Behavior.HealthLatency))
	}
	if o := c.Behavior; o.HealthOverheadMin <= 0 || o.HealthOverheadMax < o.HealthOverheadMin {
		errs = append(errs, fmt.Errorf("fakeserver: health overhead %v..%v: use 0 < min <= max (a check always takes a little longer than its sleep)", o.HealthOverheadMin, o.HealthOverheadMax))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"warmup poll", c.Behavior.WarmupPoll}, {"warmup generate", c.Behavior.WarmupGenerate}, {"token latency", c.Behavior.TokenLatency}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("fakeserver: %s %v is negative", d.name, d.v))
		}
	}
	if c.Behavior.DefaultMaxTokens > MaxTokensCap || c.Behavior.DefaultMaxTokens < 0 {
		errs = append(errs, fmt.Errorf("fakeserver: default max tokens %d: use 1..%d", c.Behavior.DefaultMaxTokens, MaxTokensCap))
	}
	if err := c.Timeline.Validate(); err != nil {
		errs = append(errs, err)
	}
	if err := fault.ValidateAll(c.Faults); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
