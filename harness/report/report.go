package report

import (
	"bytes"
	"errors"
	"fmt"
	"html"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

// Run is one scored run with its picture data and stable names.
type run struct {
	res  harness.Result
	tl   Timeline
	id   string // HTML anchor
	file string // picture file under runs/
}

// Summary says what Write produced.
type Summary struct {
	Index    string // DIR/index.html
	Markdown string // DIR/report.md
	Pictures int    // one per run
	Bytes    int64  // size of index.html
}

// WriteRun writes one run's standalone picture (stylesheet and legend included).
func WriteRun(w io.Writer, r harness.Result) error {
	return NewTimeline(r, r.Journal).SVG(w, Options{Standalone: true})
}

// Write renders a scorecard into dir: a self-contained index.html (matrix and every run's
// timeline inline, no external resources), report.md for CI artifacts, and runs/*.svg, the
// standalone pictures report.md shows.
func Write(dir string, card harness.Scorecard) (Summary, error) {
	if len(card.Results) == 0 {
		return Summary{}, errors.New("report: the scorecard has no results; run at least one (scenario, tool) pair")
	}
	if err := os.MkdirAll(filepath.Join(dir, "runs"), 0o755); err != nil {
		return Summary{}, fmt.Errorf("report: create %s: %w", dir, err)
	}
	runs := prepare(card)
	var page bytes.Buffer
	writeHTML(&page, card, runs)
	s := Summary{Index: filepath.Join(dir, "index.html"), Markdown: filepath.Join(dir, "report.md"), Pictures: len(runs), Bytes: int64(page.Len())}
	if err := os.WriteFile(s.Index, page.Bytes(), 0o644); err != nil {
		return s, fmt.Errorf("report: %w", err)
	}
	var md bytes.Buffer
	if err := writeMarkdown(&md, card, runs); err != nil {
		return s, err
	}
	if err := os.WriteFile(s.Markdown, md.Bytes(), 0o644); err != nil {
		return s, fmt.Errorf("report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "runs", "legend.svg"), []byte(legend(Options{Standalone: true})), 0o644); err != nil {
		return s, fmt.Errorf("report: %w", err)
	}
	for _, r := range runs {
		var b strings.Builder
		r.tl.svg(&b, Options{Standalone: true})
		if err := os.WriteFile(filepath.Join(dir, "runs", r.file), []byte(b.String()), 0o644); err != nil {
			return s, fmt.Errorf("report: %w", err)
		}
	}
	return s, nil
}

// prepare builds every run's timeline and gives it a unique, stable name.
func prepare(card harness.Scorecard) []run {
	used := map[string]int{}
	runs := make([]run, 0, len(card.Results))
	for _, r := range card.Results {
		base := slug(r.Scenario) + "--" + slug(r.Tool)
		used[base]++
		if n := used[base]; n > 1 {
			base += "-" + strconv.Itoa(n)
		}
		runs = append(runs, run{res: r, tl: NewTimeline(r, r.Journal), id: "run-" + base, file: base + ".svg"})
	}
	return runs
}

// slug keeps names usable as file names and anchors; catalogue names pass unchanged.
func slug(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.':
			return r
		}
		return '_'
	}, s)
}

// expectOf is the verdict a correct tool reaches on a scenario: the must-pass tool's
// expectation in this card, else the catalogue's expect block.
func expectOf(runs []run, scen string) string {
	for _, r := range runs {
		if r.res.Scenario == scen && r.res.MustPass && r.res.Expect != "" {
			return string(r.res.Expect)
		}
	}
	if s, err := scenarios.Lookup(scen); err == nil {
		return string(s.Expect.Verdict)
	}
	return ""
}

func summaryOf(scen string) string {
	if s, err := scenarios.Lookup(scen); err == nil {
		return strings.TrimSpace(s.Summary)
	}
	return ""
}

const pageStyle = `*{box-sizing:border-box}body{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;margin:0;padding:16px 20px;color:#222;background:#fff;font-size:14px;line-height:1.4}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd}h3{font-size:15px;margin:22px 0 4px}
.meta{color:#555;margin:0 0 12px}.scroll{overflow-x:auto;max-width:100%}
table.matrix{border-collapse:collapse;font-size:10px}
.matrix th,.matrix td{border:1px solid #fff;padding:1px 2px;text-align:center;white-space:nowrap}
.matrix thead th{vertical-align:bottom;background:#f3f3f3}
.matrix thead th.rot span{writing-mode:vertical-rl;transform:rotate(180deg);display:inline-block;max-height:120px}
.matrix tbody th{text-align:left;background:#f3f3f3;position:sticky;left:0}
.matrix td a{color:inherit;text-decoration:none;display:block;min-width:40px}
.matrix td.miss{outline:3px solid #000;outline-offset:-3px;font-weight:bold}
.matrix td.err{background:#999;color:#fff}.matrix small{display:block;font-size:9px}
.legend{max-width:960px;width:100%;height:auto}
figure{margin:6px 0 14px;max-width:960px}figure svg{width:100%;height:auto;display:block;border:1px solid #e4e4e4}
figcaption{font-size:12px;color:#444;margin-top:2px}
.sum{color:#444;margin:0 0 4px;max-width:960px}details.why{font-size:12px;margin:2px 0 0}details.why pre{white-space:pre-wrap;background:#f7f7f7;padding:4px 6px;margin:2px 0}ul.miss li{margin:2px 0}code{font-size:12px}
`

// errorHook records script errors on the root element, so a headless browser's --dump-dom
// shows them, and marks the page loaded with the number of pictures it found.
const errorHook = `<script>window.__errors=[];addEventListener("error",function(e){__errors.push(String(e.message||e.type));document.documentElement.setAttribute("data-js-errors",__errors.join(" | "))},true);addEventListener("load",function(){document.documentElement.setAttribute("data-loaded",String(document.querySelectorAll("svg.tl").length))});</script>`

func writeHTML(w *bytes.Buffer, card harness.Scorecard, runs []run) {
	scen, tools := card.Axes()
	var misses []run
	for _, r := range runs {
		if !r.res.Pass() {
			misses = append(misses, r)
		}
	}
	w.WriteString("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">")
	w.WriteString("<title>incident-replay report</title>" + errorHook + "<style>" + pageStyle + Style + "</style></head><body>\n")
	fmt.Fprintf(w, "<h1>incident-replay: %d scenarios × %d tools</h1>\n", len(scen), len(tools))
	fmt.Fprintf(w, "<p class=\"meta\">%d runs, %s, %s%s. %d run(s) missed an expectation or could not run.</p>\n",
		len(runs), html.EscapeString(card.Where), html.EscapeString(card.SpeedClause()), card.WallClause(), len(misses))
	w.WriteString("<h2 id=\"matrix\">Scorecard</h2>\n<p class=\"meta\">Each cell: the verdict the harness gave the tool, then its claim time (scenario time). A black outline and <b>exp …</b> mark a missed expectation; ✓ a met one. Select a cell for its timeline.</p>\n")
	w.WriteString("<div class=\"scroll\"><table class=\"matrix\"><thead><tr><th>scenario</th><th>correct<br>verdict</th>")
	for _, t := range tools {
		fmt.Fprintf(w, "<th class=\"rot\"><span>%s</span></th>", html.EscapeString(t))
	}
	w.WriteString("</tr></thead><tbody>\n")
	byPair := map[[2]string]run{}
	for _, r := range runs {
		byPair[[2]string{r.res.Scenario, r.res.Tool}] = r
	}
	for _, s := range scen {
		fmt.Fprintf(w, "<tr><th><a href=\"#s-%s\">%s</a></th><td>%s</td>", slug(s), html.EscapeString(s), html.EscapeString(expectOf(runs, s)))
		for _, t := range tools {
			r, ok := byPair[[2]string{s, t}]
			if !ok {
				w.WriteString("<td>-</td>")
				continue
			}
			w.WriteString(cellHTML(r))
		}
		w.WriteString("</tr>\n")
	}
	w.WriteString("</tbody></table></div>\n")
	if len(misses) > 0 {
		w.WriteString("<h2 id=\"expected-vs-got\">Expected vs got</h2><ul class=\"miss\">\n")
		for _, r := range misses {
			fmt.Fprintf(w, "<li><a href=\"#%s\"><code>%s</code> × <code>%s</code></a>: %s</li>\n", r.id, html.EscapeString(r.res.Scenario), html.EscapeString(r.res.Tool), html.EscapeString(mismatch(r.res)))
		}
		w.WriteString("</ul>\n")
	}
	w.WriteString("<h2 id=\"timelines\">Timelines</h2>\n")
	w.WriteString(Legend())
	for _, s := range scen {
		fmt.Fprintf(w, "<section id=\"s-%s\"><h3>%s</h3>", slug(s), html.EscapeString(s))
		if sum := summaryOf(s); sum != "" {
			fmt.Fprintf(w, "<p class=\"sum\">%s</p>", html.EscapeString(sum))
		}
		w.WriteString("\n")
		for _, r := range runs {
			if r.res.Scenario != s {
				continue
			}
			fmt.Fprintf(w, "<figure id=\"%s\">", r.id)
			var b strings.Builder
			r.tl.svg(&b, Options{})
			w.WriteString(b.String())
			fmt.Fprintf(w, "<figcaption>%s</figcaption>", html.EscapeString(caption(r.res)))
			var why strings.Builder
			_ = harness.Explain(r.res).WriteText(&why, "runs/"+r.file)
			fmt.Fprintf(w, "<details class=\"why\"><summary>why %s</summary><pre>%s</pre></details></figure>\n",
				html.EscapeString(harness.ShortVerdict(r.res.Verdict)), html.EscapeString(why.String()))
		}
		w.WriteString("</section>\n")
	}
	w.WriteString("</body></html>\n")
}

func cellHTML(r run) string {
	res := r.res
	if res.Err != nil {
		return fmt.Sprintf("<td class=\"err\"><a href=\"#%s\" title=\"%s\">ERROR</a></td>", r.id, html.EscapeString(res.Err.Error()))
	}
	cls := "v-" + string(res.Verdict)
	extra := ""
	switch {
	case res.Expect != "" && res.Verdict != res.Expect:
		cls += " miss"
		extra = "<small>exp " + harness.ShortVerdict(res.Expect) + "</small>"
	case res.Expect != "":
		extra = "<small>✓ " + harness.FormatDuration(r.tl.ClaimAt) + "</small>"
	default:
		extra = "<small>" + harness.FormatDuration(r.tl.ClaimAt) + "</small>"
	}
	if res.Unscaled {
		extra += "<small>1×</small>"
	}
	st := verdictStyle[res.Verdict]
	return fmt.Sprintf("<td class=\"%s\" style=\"background:%s;color:%s\"><a href=\"#%s\" title=\"%s\">%s%s</a></td>",
		cls, st[0], st[1], r.id, html.EscapeString(caption(res)), harness.ShortVerdict(res.Verdict), extra)
}

func caption(r harness.Result) string {
	if r.Err != nil {
		return r.Tool + ": could not run: " + r.Err.Error()
	}
	s := r.Tool + ": " + string(r.Verdict)
	if r.Expect != "" && r.Expect != r.Verdict {
		s += " (expected " + string(r.Expect) + ")"
	}
	s += ". " + r.Reason
	if r.Mode != "" {
		s += ". Time: " + string(r.Mode)
	}
	return s
}

func mismatch(r harness.Result) string {
	if r.Err != nil {
		return "could not run: " + r.Err.Error()
	}
	return "got " + string(r.Verdict) + ", expected " + string(r.Expect) + ": " + r.Reason
}

// writeMarkdown is the scorecard's own Markdown, followed by every run's picture as a file
// reference (CI artifact viewers render relative images).
func writeMarkdown(w *bytes.Buffer, card harness.Scorecard, runs []run) error {
	if err := card.WriteMarkdown(w); err != nil {
		return fmt.Errorf("report: scorecard markdown: %w", err)
	}
	scen, _ := card.Axes()
	w.WriteString("\n## Timelines\n\n![legend](runs/legend.svg)\n")
	for _, s := range scen {
		fmt.Fprintf(w, "\n### %s\n\n", s)
		if sum := summaryOf(s); sum != "" {
			w.WriteString(sum + "\n\n")
		}
		for _, r := range runs {
			if r.res.Scenario != s {
				continue
			}
			fmt.Fprintf(w, "![%s](runs/%s)\n\n%s\n\n", strings.ReplaceAll(r.tl.Title(), "]", ")"), r.file, caption(r.res))
		}
	}
	return nil
}
