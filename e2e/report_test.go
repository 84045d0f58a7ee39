package e2e

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/harness/report"
	"github.com/incident-replay/incident-replay/harness/report/svgtest"
	"github.com/incident-replay/incident-replay/scenarios"
)

// The demo run the report spec draws: the founding incidents plus a flap and a fast start,
// against the founding loop, a strict curl, a probe model and llmwait.
var (
	reportScenarios = []string{"glm5-nvfp4-probe-64", "hicache-300-host-oom", "s16-flap", "s1-empty-200"}
	reportTools     = []string{"founding-loop-1", "curl-strict", "k8s-kserve", "llmwait"}
)

// markTolerance is how far (SVG units) a marker may sit from the journal's time.
const markTolerance = 1.0

// svgNode is the report's SVG read back as a tree.
type svgNode struct{ svgtest.Node }

func (n svgNode) float(name string) float64 {
	f, err := n.Float(name)
	Expect(err).NotTo(HaveOccurred())
	return f
}

// find returns every descendant whose class list holds c.
func (n svgNode) find(c string) []svgNode {
	var out []svgNode
	for _, k := range n.Find(c) {
		out = append(out, svgNode{k})
	}
	return out
}

// plotted keeps the elements placed on the time axis (data-at), leaving out the legend's
// samples of the same classes.
func plotted(ns []svgNode) []svgNode {
	var out []svgNode
	for _, n := range ns {
		if n.Attr("data-at") != "" {
			out = append(out, n)
		}
	}
	return out
}

func (n svgNode) child(local string) svgNode {
	for _, k := range n.Nodes {
		if k.XMLName.Local == local {
			return svgNode{k}
		}
	}
	Fail(fmt.Sprintf("<%s class=%q> has no <%s>", n.XMLName.Local, n.Attr("class"), local))
	return svgNode{}
}

// findChromium returns a headless-capable Chromium, or skips (fails under CI) when none is
// installed: CI installs the Debian package `chromium`.
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		Fail("CI=true but no chromium on PATH: install the Debian package `chromium`")
	}
	Skip("browser check skipped: no chromium on PATH (apt-get install chromium)")
	return ""
}

// chromium runs the browser headless on a local file and returns stdout and stderr.
// --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
func chromium(ctx context.Context, bin string, args ...string) (string, string) {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
		"--user-data-dir=" + GinkgoT().TempDir()}
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	Expect(cmd.Run()).To(Succeed(), "chromium %v: %s", args, errb.String())
	return out.String(), errb.String()
}

// pngStats decodes a screenshot and counts its distinct colours and non-white pixels.
func pngStats(path string) (colours int, inked float64) {
	f, err := os.Open(path)
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	img, err := png.Decode(f)
	Expect(err).NotTo(HaveOccurred(), "the screenshot is not a PNG")
	seen := map[[3]uint32]bool{}
	b := img.Bounds()
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			if r>>8 < 245 || g>>8 < 245 || bl>>8 < 245 {
				ink++
			}
		}
	}
	return len(seen), float64(ink) / float64(b.Dx()*b.Dy())
}

var _ = Describe("the HTML report", Ordered, ContinueOnFailure, Label("inprocess"), func() {
	var (
		dir     string
		results []harness.Result
	)
	BeforeAll(func(ctx SpecContext) {
		var cases []harness.Case
		for _, n := range reportScenarios {
			s, err := scenarios.Lookup(n)
			Expect(err).NotTo(HaveOccurred())
			c, err := harness.NewCase(s, 1)
			Expect(err).NotTo(HaveOccurred())
			cases = append(cases, c)
		}
		tools, err := harness.SelectTools(harness.Builtins(), reportTools)
		Expect(err).NotTo(HaveOccurred())
		// On virtual time, as the demo runs: the pictures' times are the scenario's on any host.
		m := harness.Matrix{
			Runner:   harness.Runner{Launcher: harness.InProcess{Dir: GinkgoT().TempDir()}, Speed: harness.Virtual, Expect: harness.DefaultExpect},
			Progress: GinkgoWriter,
		}
		start := time.Now()
		results = m.Run(ctx, cases, tools)
		card := harness.Scorecard{Results: results, Speed: harness.Virtual, Wall: time.Since(start), Where: "inprocess", Tools: tools}
		dir = GinkgoT().TempDir()
		t0 := time.Now()
		sum, err := report.Write(dir, card)
		Expect(err).NotTo(HaveOccurred())
		AddReportEntry("report", fmt.Sprintf("%d pictures, index.html %d bytes, rendered in %s", sum.Pictures, sum.Bytes, time.Since(t0)))
		for _, r := range results {
			Expect(r.Err).NotTo(HaveOccurred(), "%s x %s", r.Scenario, r.Tool)
		}
	}, NodeTimeout(5*time.Minute))

	It("gives every run a picture, in the page and as a file", func() {
		page, err := os.ReadFile(filepath.Join(dir, "index.html"))
		Expect(err).NotTo(HaveOccurred())
		Expect(regexp.MustCompile(`<figure id="run-[^"]+"><svg `).FindAll(page, -1)).To(HaveLen(len(results)))
		Expect(string(page)).NotTo(MatchRegexp(`(src|href)="(https?:)?//`), "the page must not load anything from the network")
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		Expect(err).NotTo(HaveOccurred())
		for _, r := range results {
			file := filepath.Join("runs", r.Scenario+"--"+r.Tool+".svg")
			Expect(string(md)).To(ContainSubstring("](" + file + ")"))
			Expect(filepath.Join(dir, file)).To(BeARegularFile())
		}
	})

	It("puts the ground-truth markers, probes and claim at the journal's times", func() {
		for _, r := range results {
			raw, err := os.ReadFile(filepath.Join(dir, "runs", r.Scenario+"--"+r.Tool+".svg"))
			Expect(err).NotTo(HaveOccurred())
			tree, err := svgtest.Parse(raw)
			Expect(err).NotTo(HaveOccurred(), "%s x %s", r.Scenario, r.Tool)
			root := svgNode{tree}
			left, right, tmax := root.float("data-plot-left"), root.float("data-plot-right"), root.float("data-tmax")
			x := func(d time.Duration) float64 { return left + (right-left)*d.Seconds()/tmax }

			// The axis labels agree with that scale, so a reader's eye lands on the right time.
			ticks := root.find("tick")
			Expect(len(ticks)).To(BeNumerically(">=", 3))
			for _, tk := range ticks {
				Expect(tk.child("line").float("x1")).To(BeNumerically("~", x(time.Duration(tk.float("data-at")*float64(time.Second))), markTolerance))
			}

			g := fakeserver.GroundTruth(r.Journal)
			want := map[string]time.Duration{}
			for name, at := range map[string]*time.Duration{"bound": g.Bound, "ready": g.Ready, "dead": g.Dead} {
				if at != nil {
					want[name] = *at
				}
			}
			for name, at := range want {
				mk := plotted(root.find("mk-" + name))
				Expect(mk).To(HaveLen(1), "%s x %s: one %s marker", r.Scenario, r.Tool, name)
				Expect(mk[0].child("line").float("x1")).To(BeNumerically("~", x(at), markTolerance),
					"%s x %s: %s marker vs the journal's %s", r.Scenario, r.Tool, name, at)
			}

			// Every request the tool made is a tick.
			var probes int
			for _, rec := range fakeserver.Requests(r.Journal) {
				if !rec.Internal {
					probes++
				}
			}
			ticksDrawn := 0
			for _, p := range root.find("probes") {
				ticksDrawn += strings.Count(p.find("tk")[0].Attr("d"), "M")
			}
			Expect(ticksDrawn).To(Equal(probes), "%s x %s: probe ticks", r.Scenario, r.Tool)

			claim := plotted(root.find("claim"))
			Expect(claim).To(HaveLen(1))
			at := r.ClaimAfter()
			if r.Claim.Outcome == harness.NoClaim {
				at = r.Limit
			}
			d := claim[0].child("path").Attr("d") // "Mx y..."
			cx, err := strconv.ParseFloat(strings.Fields(strings.TrimPrefix(d, "M"))[0], 64)
			Expect(err).NotTo(HaveOccurred())
			Expect(cx).To(BeNumerically("~", x(at), markTolerance), "%s x %s: claim", r.Scenario, r.Tool)
		}
	})

	It("tells the founding incident on its own: ready before the loop's last probe, each 200 ignored", func() {
		var r harness.Result
		for _, x := range results {
			if x.Scenario == "glm5-nvfp4-probe-64" && x.Tool == "founding-loop-1" {
				r = x
			}
		}
		Expect(r.Verdict).To(Equal(harness.MissedReady), r.Reason)
		g := fakeserver.GroundTruth(r.Journal)
		Expect(g.Ready).NotTo(BeNil())
		var last time.Duration
		ok200 := 0
		for _, rec := range fakeserver.Requests(r.Journal) {
			if !rec.Internal && rec.Route == "/health" {
				last = max(last, rec.At)
				if rec.Status == 200 && rec.At >= *g.Ready {
					ok200++
				}
			}
		}
		// The server is ready from 4m20s; the loop probes on to 11m08s: the incident.
		Expect(last).To(BeNumerically(">", *g.Ready), "the loop kept probing a ready server")
		Expect(ok200).To(BeNumerically(">=", 1))
		raw, err := os.ReadFile(filepath.Join(dir, "runs", "glm5-nvfp4-probe-64--founding-loop-1.svg"))
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).To(ContainSubstring(fmt.Sprintf("%d health probe(s) answered 2xx after the server was ready; the tool did not act on them", ok200)))
		Expect(string(raw)).To(ContainSubstring("gave up at"))
	})

	It("loads in headless Chromium without console errors and paints a non-blank page", func(ctx SpecContext) {
		bin := findChromium()
		url := "file://" + filepath.Join(dir, "index.html")
		dom, _ := chromium(ctx, bin, "--dump-dom", url)
		Expect(dom).To(ContainSubstring(fmt.Sprintf(`data-loaded="%d"`, len(results)+1)), "every picture (and the legend) in the DOM after load")
		Expect(dom).NotTo(ContainSubstring(`data-js-errors="`), "script errors on the page")

		shot := filepath.Join(GinkgoT().TempDir(), "report.png")
		_, log := chromium(ctx, bin, "--enable-logging=stderr", "--v=0", "--window-size=1366,900", "--screenshot="+shot, url)
		for _, line := range strings.Split(log, "\n") {
			// The page writes nothing to the console; any CONSOLE line is an error or a warning.
			Expect(line).NotTo(ContainSubstring(":CONSOLE"), "console output while loading the report")
		}
		colours, inked := pngStats(shot)
		AddReportEntry("screenshot", fmt.Sprintf("%d colours, %.1f%% inked", colours, 100*inked))
		Expect(colours).To(BeNumerically(">=", 16), "the screenshot looks blank")
		Expect(inked).To(BeNumerically(">", 0.02), "the screenshot is nearly all white")

		if os.Getenv("UPDATE_DOCS") == "1" {
			// docs/founding-incident.png: the founding run's picture alone, at its natural width.
			svg := filepath.Join(dir, "runs", "glm5-nvfp4-probe-64--founding-loop-1.svg")
			raw, err := os.ReadFile(svg)
			Expect(err).NotTo(HaveOccurred())
			root := svgNode{must(svgtest.Parse(raw))}
			h := int(math.Ceil(root.float("height")))
			chromium(ctx, bin, fmt.Sprintf("--window-size=%d,%d", report.Width, h), "--force-device-scale-factor=2", "--screenshot="+filepath.Join(repoRoot(), "docs", "founding-incident.png"), "file://"+svg)
		}
	})
})
