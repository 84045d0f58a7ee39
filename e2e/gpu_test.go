package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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

	"github.com/incident-replay/incident-replay/gpu"
)

// GPU-lab acceptance (docs/gpu-lab.md): on a machine with NVIDIA GPUs, record the inventory,
// launch the real SGLang with the operator's command, and capture its log into a bundle for
// the catalogue. Everywhere else these specs skip and say why.
//
// Environment:
//
//	SGLANG_LAUNCH   the launch command, run with bash -c (required for the launch spec)
//	SGLANG_URL      the server's base URL (default http://127.0.0.1:30000)
//	GPU_LAB_OUT     bundle directory (default: a new directory under $TMPDIR)
//	GPU_LAB_TIMEOUT how long a cold start may take (default 30m)
//	GPU_LAB_ARCH    expected architecture name, e.g. Hopper, checked against every GPU
var _ = Describe("GPU lab", Label("gpu"), Ordered, func() {
	var (
		snap   gpu.Snapshot
		bundle string
	)

	BeforeAll(func(ctx SpecContext) {
		var err error
		snap, err = gpu.Inventory(ctx)
		if errors.Is(err, gpu.ErrNoNVML) {
			Skip("gpu: " + err.Error() + "; these specs need an NVIDIA driver and a cgo build")
		}
		Expect(err).NotTo(HaveOccurred())
		bundle = os.Getenv("GPU_LAB_OUT")
		if bundle == "" {
			bundle, err = os.MkdirTemp("", "gpu-lab-")
			Expect(err).NotTo(HaveOccurred())
		}
		Expect(os.MkdirAll(bundle, 0o755)).To(Succeed())
		AddReportEntry("gpu-lab bundle", bundle)
	}, NodeTimeout(time.Minute))

	It("records the inventory and names each GPU's architecture", func() {
		Expect(snap.Devices).NotTo(BeEmpty(), "NVML loaded but lists no GPUs")
		b, err := json.MarshalIndent(snap, "", "  ")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(bundle, "inventory.json"), b, 0o644)).To(Succeed())
		Expect(inventoryDisagreements(snap, nvidiaSMI())).To(BeEmpty())
		for _, d := range snap.Devices {
			Expect(d.Architecture).NotTo(Equal(gpu.ArchUnknown), "GPU %d CC %s", d.Index, d.ComputeCapability)
			Expect(d.MemoryTotal).To(BeNumerically(">", 0))
			if want := os.Getenv("GPU_LAB_ARCH"); want != "" {
				Expect(string(d.Architecture)).To(Equal(want))
			}
			GinkgoWriter.Printf("GPU %d %s CC %s %s (NVML: %s) %.2f GiB total, %.2f GiB free, %d processes\n",
				d.Index, d.Name, d.ComputeCapability, d.Architecture, d.NVMLArchitecture,
				float64(d.MemoryTotal)/gpu.GiB, float64(d.MemoryFree)/gpu.GiB, len(d.Processes))
		}
		host := snap.HostProfile()
		Expect(host.Validate()).To(Succeed())
		y, err := json.MarshalIndent(host, "", "  ")
		Expect(err).NotTo(HaveOccurred())
		Expect(os.WriteFile(filepath.Join(bundle, "host.json"), y, 0o644)).To(Succeed())
	})

	It("launches the real server and captures its log until ready", func(ctx SpecContext) {
		launch := os.Getenv("SGLANG_LAUNCH")
		if launch == "" {
			Skip("gpu: SGLANG_LAUNCH is not set; set it to the server command, e.g. " +
				`SGLANG_LAUNCH='python -m sglang.launch_server --model-path Qwen/Qwen2.5-0.5B-Instruct --port 30000'`)
		}
		url := envOr("SGLANG_URL", "http://127.0.0.1:30000")
		timeout, err := time.ParseDuration(envOr("GPU_LAB_TIMEOUT", "30m"))
		Expect(err).NotTo(HaveOccurred(), "GPU_LAB_TIMEOUT")

		logPath := filepath.Join(bundle, "server.log")
		logFile, err := os.Create(logPath)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(logFile.Close)

		cmd := exec.Command("bash", "-c", launch)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the launcher spawns schedulers; kill them all
		pr, pw := io.Pipe()
		cmd.Stdout, cmd.Stderr = pw, pw
		Expect(cmd.Start()).To(Succeed())
		start := time.Now()
		DeferCleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); pw.Close() }()

		// Copy the log to the bundle, noting when the ready line appears.
		readyLine := make(chan time.Duration, 1)
		go func() {
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				fmt.Fprintln(logFile, sc.Text())
				if strings.Contains(sc.Text(), "The server is fired up and ready to roll!") {
					select {
					case readyLine <- time.Since(start):
					default:
					}
				}
			}
		}()

		var readyAfter time.Duration
		deadline := time.After(timeout)
		select {
		case readyAfter = <-readyLine:
		case err := <-exited:
			Fail(fmt.Sprintf("the server exited before ready (%v) after %s; log: %s", err, time.Since(start).Round(time.Second), logPath))
		case <-deadline:
			Fail(fmt.Sprintf("no ready line within %s; log: %s", timeout, logPath))
		case <-ctx.Done():
			Fail("interrupted")
		}
		AddReportEntry("ready line after", readyAfter.Round(time.Second).String())

		// The ready line follows a successful warmup, so /health must answer 200 (an empty body).
		Eventually(ctx, func() (int, error) { return httpStatus(ctx, url+"/health") }).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(http.StatusOK))
	}, NodeTimeout(2*time.Hour))
})

// inventoryDisagreements compares each GPU of an inventory with two sources it does not derive
// from: NVML's own DEVICE_ARCH (where the driver names one) against the architecture the
// compute capability gives, and nvidia-smi, a separate client of the driver, for the compute
// capability, name and total memory.
func inventoryDisagreements(snap gpu.Snapshot, smi map[int]smiGPU) []string {
	var out []string
	for _, d := range snap.Devices {
		if d.ComputeCapability.IsZero() {
			out = append(out, fmt.Sprintf("GPU %d has no compute capability", d.Index))
		}
		if d.NVMLArchitecture != "" && d.NVMLArchitecture != gpu.ArchUnknown && d.Architecture != d.NVMLArchitecture {
			out = append(out, fmt.Sprintf("GPU %d: CC %s names %s, NVML says %s", d.Index, d.ComputeCapability, d.Architecture, d.NVMLArchitecture))
		}
		row, ok := smi[d.Index]
		if !ok {
			continue
		}
		if got := fmt.Sprintf("%s %s %d MiB", d.Name, d.ComputeCapability, d.MemoryTotal>>20); got != fmt.Sprintf("%s %s %d MiB", row.name, row.cc, row.totalMiB) {
			out = append(out, fmt.Sprintf("GPU %d: inventory %s, nvidia-smi %s %s %d MiB", d.Index, got, row.name, row.cc, row.totalMiB))
		}
	}
	return out
}

// smiGPU is one row of nvidia-smi's GPU query.
type smiGPU struct {
	name, cc string
	totalMiB uint64
}

// nvidiaSMI reads index, name, compute capability and total memory of every GPU from
// nvidia-smi; empty when it is not installed or too old for compute_cap (driver < 510).
func nvidiaSMI() map[int]smiGPU {
	out, err := exec.Command("nvidia-smi", "--query-gpu=index,name,compute_cap,memory.total", "--format=csv,noheader,nounits").Output()
	if err != nil {
		GinkgoWriter.Printf("nvidia-smi not used: %v\n", err)
		return nil
	}
	rows := map[int]smiGPU{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, ", ")
		if len(f) != 4 {
			continue
		}
		i, err1 := strconv.Atoi(f[0])
		mib, err2 := strconv.ParseUint(f[3], 10, 64)
		if err1 == nil && err2 == nil {
			rows[i] = smiGPU{name: f[1], cc: f[2], totalMiB: mib}
		}
	}
	return rows
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func httpStatus(ctx context.Context, url string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // /health runs a generation
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}
