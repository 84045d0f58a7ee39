package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// The fakesglang process writes each line to the stream the release writes it on: uvicorn's
// access lines to stdout, SGLang's own lines, the tqdm bars and uvicorn's lifecycle lines to
// stderr. --sglang-version picks the release.
var _ = Describe("fakesglang output streams per release", Ordered, Label("inprocess"), func() {
	var bin string

	BeforeAll(func(ctx SpecContext) {
		bin = filepath.Join(GinkgoT().TempDir(), "fakesglang")
		build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/fakesglang")
		build.Dir = repoRoot()
		out, err := build.CombinedOutput()
		Expect(err).NotTo(HaveOccurred(), "go build ./cmd/fakesglang: %s", out)
	}, NodeTimeout(3*time.Minute))

	for _, release := range []string{"0.4.6", "main-2026-07"} {
		It("puts only access lines on stdout at "+release, func(ctx SpecContext) {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			Expect(err).NotTo(HaveOccurred())
			port := l.Addr().(*net.TCPAddr).Port
			Expect(l.Close()).To(Succeed())

			cmd := exec.CommandContext(ctx, bin, "--model-path", "qwen/qwen2.5-0.5b-instruct", "--host", "127.0.0.1",
				"--port", strconv.Itoa(port), "--speed", "20", "--bind-after", "2s", "--sglang-version", release)
			dir := GinkgoT().TempDir()
			stdoutF, err := os.Create(filepath.Join(dir, "stdout"))
			Expect(err).NotTo(HaveOccurred())
			stderrF, err := os.Create(filepath.Join(dir, "stderr"))
			Expect(err).NotTo(HaveOccurred())
			cmd.Stdout, cmd.Stderr = stdoutF, stderrF
			cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			Expect(cmd.Start()).To(Succeed())
			DeferCleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); _ = cmd.Wait() })

			read := func(f *os.File) string { b, _ := os.ReadFile(f.Name()); return string(b) }
			Eventually(func() string { return read(stderrF) }).WithTimeout(30 * time.Second).WithPolling(50 * time.Millisecond).
				Should(ContainSubstring("The server is fired up and ready to roll!"))
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/v1/models", port))
			Expect(err).NotTo(HaveOccurred())
			resp.Body.Close()
			Expect(syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)).To(Succeed())
			_ = cmd.Wait()

			out := strings.TrimSpace(read(stdoutF))
			Expect(out).To(ContainSubstring(`"GET /v1/models HTTP/1.1" 200 OK`))
			for _, line := range strings.Split(out, "\n") {
				Expect(line).To(ContainSubstring(`HTTP/1.1" `), "stdout carries a line that is not an access line")
			}
			errText := read(stderrF)
			for _, want := range []string{"Load weight end.", "Capture ", "INFO:     Uvicorn running on ", "The server is fired up and ready to roll!"} {
				Expect(errText).To(ContainSubstring(want))
			}
			Expect(errText).NotTo(ContainSubstring(`HTTP/1.1" `), "an access line reached stderr")
		}, NodeTimeout(time.Minute))
	}
})
