package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/ready"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/sglang"
	"github.com/incident-replay/incident-replay/vtime"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var epoch = time.Date(2026, 2, 19, 16, 30, 0, 0, time.UTC)

var _ = Describe("fakesglang in a container", Label("container"), func() {
	It("becomes ready on 127.0.0.1 as llmwait sees it, then serves the OpenAI surface", func(ctx SpecContext) {
		c := runContainer(ctx, fakeserver.WithScenario("s0-happy-era-c"), fakeserver.WithSpeed(50))
		Expect(c.BaseURL()).To(HavePrefix("http://127.0.0.1:"))
		rep, err := ready.Wait(ctx, ready.Spec{Endpoint: c.BaseURL(), Timeout: 90 * time.Second, Interval: 100 * time.Millisecond})
		Expect(err).NotTo(HaveOccurred(), rep.Verdict())
		logs, err := c.Logs(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(logs)).To(ContainSubstring("The server is fired up and ready to roll!"))
		Expect(string(logs)).To(MatchRegexp(`INFO:     172\.\d+\.\d+\.\d+:\d+ - "GET /health`))
		truth := fakeserver.GroundTruth(must(c.Journal(ctx)))
		Expect(truth.Ready).NotTo(BeNil())
	}, SpecTimeout(2*time.Minute))

	It("writes its log and journal into a bind-mounted host directory as it runs", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		c := runContainer(ctx, fakeserver.WithScenario("s0-happy-era-a"), fakeserver.WithSpeed(50), fakeserver.WithHostDir(dir))
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		log := ready.FollowFile(lctx, filepath.Join(dir, fakeserver.HostLog), 5*time.Millisecond)
		defer log.Close()
		// Era A answers /health 200 during warmup; only the log (as it is written) tells.
		rep, err := ready.Wait(ctx, ready.Spec{Endpoint: c.BaseURL(), Timeout: 90 * time.Second, Interval: 100 * time.Millisecond, Log: log})
		Expect(err).NotTo(HaveOccurred(), rep.Verdict())
		Expect(strings.Join(rep.Lines, "\n")).To(ContainSubstring("fired up and ready to roll"), "llmwait read the host log as it was written")
		truth := fakeserver.GroundTruth(must(c.Journal(ctx)))
		Expect(truth.Ready).NotTo(BeNil(), "the journal read from the host directory has the ready state")
		hostLog := string(must(os.ReadFile(filepath.Join(dir, fakeserver.HostLog))))
		Expect(hostLog).To(ContainSubstring("The server is fired up and ready to roll!"))
		dockerLines := strings.Split(strings.TrimSpace(string(must(c.Logs(ctx)))), "\n")
		Expect(len(dockerLines)).To(BeNumerically(">", 10), "Docker has the log too")
		for _, line := range dockerLines {
			Expect(hostLog).To(ContainSubstring(strings.TrimRight(line, "\r")), "every line Docker has is in the host file")
		}
	}, SpecTimeout(2*time.Minute))

	It("dies with 137 on an OOM-style timeline and never binds", func(ctx SpecContext) {
		c := runContainer(ctx, fakeserver.WithScenario("cuda-oom-capture"), fakeserver.WithSpeed(100))
		waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		code, err := c.Wait(waitCtx)
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(137))
		logs := string(must(c.Logs(ctx)))
		Expect(logs).To(ContainSubstring("CUDA out of memory"))
		truth := fakeserver.GroundTruth(must(c.Journal(ctx)))
		Expect(truth.Bound).To(BeNil())
		Expect(truth.ExitCode).To(HaveValue(Equal(137)))
	}, SpecTimeout(2*time.Minute))

	It("on a virtual clock, says at once that a fakesglang which exited never joined the clock", func(ctx SpecContext) {
		dir := GinkgoT().TempDir()
		clock := vtime.New(epoch, vtime.Options{})
		defer clock.Close()
		start := time.Now()
		c, err := fakeserver.Run(ctx, imageTag(), fakeserver.WithScenario("s0-happy-era-c"), fakeserver.WithHostDir(dir),
			fakeserver.WithClock(clock), fakeserver.WithFlags("--no-such-flag"))
		if c != nil {
			DeferCleanup(func(ctx SpecContext) error { return c.Stop(ctx) })
		}
		Expect(err).To(MatchError(ContainSubstring("exited with code 2 before its fakesglang dialled the clock")))
		Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second), "the exit ends the wait, not the join limit")
	}, SpecTimeout(2*time.Minute))
})

func must[T any](v T, err error) T {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred())
	return v
}

// startInProcess runs a happy-path timeline at 1000x with --enable-metrics.
func startInProcess(ctx context.Context, era sglang.Era) (*fakeserver.Server, *bytes.Buffer) {
	jr := &bytes.Buffer{}
	prof := sglang.ProfileFor(era)
	args := sglang.DefaultServerArgs()
	args.Port, args.ModelPath, args.EnableMetrics = 0, "qwen/qwen2.5-0.5b-instruct", true
	s, err := fakeserver.Start(ctx, fakeserver.Config{Profile: prof, Args: args, Seed: 11, Journal: jr,
		Timeline: fakeserver.HappyPath(epoch, prof, 2*time.Second, 0, 0), Clock: replay.Scaled(epoch, 1000)})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) error { return s.Stop(ctx) })
	Eventually(func() int {
		resp, err := http.Get(s.BaseURL() + "/health_generate")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}).WithTimeout(10 * time.Second).WithPolling(5 * time.Millisecond).Should(Equal(200))
	return s, jr
}

var _ = Describe("fakesglang in-process with real clients", Label("inprocess"), func() {
	for _, era := range []sglang.Era{sglang.EraA, sglang.EraB, sglang.EraC} {
		It("serves the official OpenAI SDK and a Prometheus scrape, era "+era.String(), func(ctx SpecContext) {
			s, _ := startInProcess(ctx, era)
			cl := openai.NewClient(option.WithBaseURL(s.BaseURL()+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
			chat, err := cl.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    "qwen/qwen2.5-0.5b-instruct",
				Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the capital of France?")},
			})
			Expect(err).NotTo(HaveOccurred())
			Expect(chat.Choices).To(HaveLen(1))
			Expect(chat.Choices[0].Message.Content).NotTo(BeEmpty())
			Expect(chat.Usage.TotalTokens).To(Equal(chat.Usage.PromptTokens + chat.Usage.CompletionTokens))

			stream := cl.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:         "qwen/qwen2.5-0.5b-instruct",
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("stream please")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			acc := openai.ChatCompletionAccumulator{}
			for stream.Next() {
				acc.AddChunk(stream.Current())
			}
			Expect(stream.Err()).NotTo(HaveOccurred())
			Expect(acc.Choices[0].Message.Content).NotTo(BeEmpty())
			Expect(acc.Usage.CompletionTokens).To(BeNumerically(">", 0))

			comp, err := cl.Completions.New(ctx, openai.CompletionNewParams{
				Model: "qwen/qwen2.5-0.5b-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Paris is")},
				MaxTokens: openai.Int(5)})
			Expect(err).NotTo(HaveOccurred())
			Expect(comp.Choices[0].Text).NotTo(BeEmpty())
			cs := cl.Completions.NewStreaming(ctx, openai.CompletionNewParams{
				Model: "qwen/qwen2.5-0.5b-instruct", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Paris is")}})
			var text strings.Builder
			for cs.Next() {
				for _, ch := range cs.Current().Choices {
					text.WriteString(ch.Text)
				}
			}
			Expect(cs.Err()).NotTo(HaveOccurred())
			Expect(text.String()).NotTo(BeEmpty())

			resp, err := http.Get(s.BaseURL() + "/metrics")
			Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			var parser expfmt.TextParser = expfmt.NewTextParser(model.UTF8Validation)
			fams, err := parser.TextToMetricFamilies(bytes.NewReader(body))
			Expect(err).NotTo(HaveOccurred(), string(body))
			Expect(fams).To(HaveKey("sglang:num_requests_total"))
			Expect(fams["sglang:num_requests_total"].GetMetric()[0].GetCounter().GetValue()).To(BeNumerically(">=", 4))
			Expect(fams).To(HaveKey("sglang:time_to_first_token_seconds"))
		}, SpecTimeout(time.Minute))
	}
})
