package report

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/incident-replay/incident-replay/harness"
)

func TestWrite(t *testing.T) {
	ok := foundingResult()
	ok.Mode = harness.ModePtrace
	miss := foundingResult()
	miss.Tool, miss.Expect, miss.MustPass = "llmwait", harness.ReadyOK, true
	broken := harness.Result{Scenario: "hicache-48-cold-start", Tool: "my tool/v2", Err: errors.New("launch: no port")}
	card := harness.Scorecard{Results: []harness.Result{ok, miss, broken}, Speed: 60, Where: "inprocess"}

	dir := t.TempDir()
	sum, err := Write(dir, card)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Pictures != 3 {
		t.Errorf("%d pictures, want 3", sum.Pictures)
	}
	page, err := os.ReadFile(sum.Index)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if n := len(regexp.MustCompile(`<figure id="run-[^"]+"><svg `).FindAllString(html, -1)); n != 3 {
		t.Errorf("%d figures with a picture, want 3", n)
	}
	if regexp.MustCompile(`(src|href)="(https?:)?//`).MatchString(html) {
		t.Error("the page refers to the network")
	}
	for _, want := range []string{
		`id="run-hicache-48-cold-start--founding-loop-1"`,
		`id="run-hicache-48-cold-start--my_tool_v2"`, // names made safe for anchors and files
		`class="v-missed-ready miss"`,                // llmwait was expected ready-ok
		`Time: virtual (ptrace)"`,                    // the cell's caption names its time mode
		`<small>exp ok</small>`,
		`class="err"`,
		`Expected vs got`,
		`data-js-errors`,
		`<svg xmlns="http://www.w3.org/2000/svg" class="tl legend"`,
		// each run says why, as `incident-replay explain` does
		`<details class="why"><summary>why MISSED</summary><pre>hicache-48-cold-start x llmwait: missed-ready (expected ready-ok)`,
		"  picture:   runs/hicache-48-cold-start--founding-loop-1.svg\n",
		"  rule:      missed-ready: gave up (failure or timeout) on a server that became ready\n",
		`hicache-48-cold-start x my tool/v2: could not run: launch: no port`,
	} {
		if !strings.Contains(html, want) {
			t.Errorf("index.html lacks %s", want)
		}
	}
	md, err := os.ReadFile(sum.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	refs := regexp.MustCompile(`\]\((runs/[^)]+\.svg)\)`).FindAllStringSubmatch(string(md), -1)
	if len(refs) != 4 { // the legend and three runs
		t.Fatalf("report.md references %d pictures, want 4", len(refs))
	}
	for _, ref := range refs {
		b, err := os.ReadFile(filepath.Join(dir, ref[1]))
		if err != nil {
			t.Errorf("report.md refers to a missing file: %v", err)
			continue
		}
		parse(t, b) // each file is a well-formed standalone SVG
		if !strings.Contains(string(b), "<style>") {
			t.Errorf("%s has no stylesheet of its own", ref[1])
		}
	}
	if _, err := Write(t.TempDir(), harness.Scorecard{}); err == nil {
		t.Error("an empty scorecard rendered without error")
	}
}
