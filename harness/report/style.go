package report

import (
	"fmt"
	"strings"

	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/scenarios"
)

// Colours come from the Okabe-Ito palette, which stays distinct under the common colour-vision
// deficiencies; every colour also carries a text label (lane names, band names, cell text), so
// nothing is told by colour alone.
const (
	okOrange    = "#E69F00"
	okSky       = "#56B4E9"
	okGreen     = "#009E73"
	okYellow    = "#F0E442"
	okBlue      = "#0072B2"
	okVermilion = "#D55E00"
	okPurple    = "#CC79A7"
)

var phaseFill = map[Phase]string{
	PhaseInit:      "#E4E4E4",
	PhaseLoad:      "#BFE0F4", // pale sky
	PhaseCapture:   "#F6EE9A", // pale yellow
	PhaseHiCache:   "#E8C3DA", // pale purple
	PhaseStarting:  "#F5D38A", // pale orange
	PhaseReady:     "#7FCDB4", // pale bluish green
	PhaseUnhealthy: "#F0B08A", // pale vermilion
	PhaseWedged:    "#B38AA6",
	PhaseDead:      "#3A3A3A",
}

var probeColour = [numProbeClasses]string{okGreen, okOrange, okVermilion, okPurple}

var markColour = map[string]string{"bound": okBlue, "ready": "#00664A", "dead": "#000000"}

// verdictStyle is a verdict's fill and text colour, for matrix cells and claim markers.
var verdictStyle = map[harness.Verdict][2]string{
	harness.ReadyOK:     {"#7FCDB4", "#000"},
	harness.ReadyLate:   {okYellow, "#000"},
	harness.FalseReady:  {okVermilion, "#fff"},
	harness.MissedReady: {okOrange, "#000"},
	harness.FailedFast:  {okSky, "#000"},
	harness.FailedSlow:  {okBlue, "#fff"},
	harness.GaveUp:      {"#BBBBBB", "#000"},
	harness.Hung:        {okPurple, "#000"},
}

// Style is the stylesheet the pictures use; the HTML page carries it once, a standalone SVG
// embeds it.
var Style = buildStyle()

func buildStyle() string {
	var b strings.Builder
	b.WriteString(`.tl{font-family:"DejaVu Sans",Verdana,Arial,sans-serif;font-size:11px}`)
	b.WriteString(`.tl .bg{fill:#fff}.tl text{fill:#222}.tl .title{font-size:13px;font-weight:bold}`)
	b.WriteString(`.tl .lane{text-anchor:end;fill:#444}.tl .axis text{text-anchor:middle;fill:#555;font-size:10px}.tl .axis .axt{text-anchor:start;font-size:11px;fill:#333}`)
	b.WriteString(`.tl .grid{stroke:#e8e8e8}.tl .base{stroke:#888}`)
	b.WriteString(`.tl .bl{font-size:10px;text-anchor:middle}.tl .ph{stroke:#fff;stroke-width:1}.tl .after{fill:#f7f7f7;stroke:#bbb;stroke-dasharray:3 3}`)
	for _, p := range Phases() {
		fmt.Fprintf(&b, ".tl .ph-%s{fill:%s}", phaseClass(p), phaseFill[p])
	}
	b.WriteString(`.tl .bl-dead,.tl .bl-wedged{fill:#fff}`)
	for c := ProbeClass(0); c < numProbeClasses; c++ {
		fmt.Fprintf(&b, ".tl .pr-%d path{stroke:%s}", c, probeColour[c])
	}
	b.WriteString(`.tl .tk{stroke-width:1.6}.tl .lat{stroke-width:3;stroke-opacity:.3}`)
	for _, n := range []string{"bound", "ready", "dead"} {
		fmt.Fprintf(&b, ".tl .mk-%s line{stroke:%s}.tl .mk-%s text{fill:%s}", n, markColour[n], n, markColour[n])
	}
	b.WriteString(`.tl .mk line{stroke-width:1.5}.tl .mk.pred line{stroke-dasharray:4 3}.tl .mk text{font-weight:bold}.tl .mk text.key{font-weight:normal}`)
	b.WriteString(`.tl .claim path{stroke:#000;stroke-width:1}.tl .claim text{font-weight:bold}.tl .note{fill:#8a3b00;font-style:italic}.tl .err{fill:#b00}`)
	for _, v := range scenarios.Verdicts() {
		fmt.Fprintf(&b, ".tl .cv-%s path{fill:%s}", v, verdictStyle[v][0])
	}
	return b.String()
}

// legend rows: y offsets inside the legend block.
const legendRow = 18

func legendHeight() float64 { return 4*legendRow + 12 }

// Legend is the key to every picture as its own SVG, for a page that carries Style.
func Legend() string { return legend(Options{}) }

func legend(o Options) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" class="tl legend" viewBox="0 0 %d %s" width="%d" height="%s" role="img" aria-label="legend">`,
		Width, num(legendHeight()), Width, num(legendHeight()))
	if o.Standalone {
		b.WriteString("<style>" + Style + "</style>")
	}
	fmt.Fprintf(&b, `<rect class="bg" width="%d" height="%s"/>`, Width, num(legendHeight()))
	legendBody(&b)
	b.WriteString("</svg>")
	return b.String()
}

// legendBody draws the legend rows; x advances by each item's estimated text width, so items
// never overlap.
func legendBody(b *strings.Builder) {
	y := 14.0
	head := func(s string) float64 {
		fmt.Fprintf(b, `<text x="8" y="%s" font-weight="bold">%s</text>`, num(y), esc(s))
		return PlotLeft
	}
	x := head("phases")
	for _, p := range Phases() {
		fmt.Fprintf(b, `<rect class="ph ph-%s" x="%s" y="%s" width="14" height="12"/><text x="%s" y="%s">%s</text>`,
			phaseClass(p), num(x), num(y-10), num(x+18), num(y), p)
		x += 18 + textW(string(p), 11) + 14
	}
	y += legendRow
	x = head("probes")
	for c := ProbeClass(0); c < numProbeClasses; c++ {
		fmt.Fprintf(b, `<g class="pr-%d"><path class="tk" d="M%s %sv10"/></g><text x="%s" y="%s">%s</text>`, c, num(x+3), num(y-9), num(x+9), num(y), esc(c.String()))
		x += 9 + textW(c.String(), 11) + 14
	}
	txt := "one tick per request the server saw; faint bar: its latency"
	fmt.Fprintf(b, `<text x="%s" y="%s" fill="#555">%s</text>`, num(x+6), num(y), esc(txt))
	y += legendRow
	x = head("truth")
	for _, m := range []struct{ name, label string }{{"bound", "bound: port open"}, {"ready", "ready: health passes"}, {"dead", "dead / wedged (exit code)"}} {
		fmt.Fprintf(b, `<g class="mk mk-%s"><line x1="%s" x2="%s" y1="%s" y2="%s"/><text class="key" x="%s" y="%s">%s</text></g>`,
			m.name, num(x+3), num(x+3), num(y-10), num(y+2), num(x+9), num(y), esc(m.label))
		x += 9 + textW(m.label, 11) + 14
	}
	fmt.Fprintf(b, `<g class="mk pred mk-bound"><line x1="%s" x2="%s" y1="%s" y2="%s"/></g><text x="%s" y="%s">dashed: predicted (run ended first)</text>`,
		num(x+3), num(x+3), num(y-10), num(y+2), num(x+9), num(y))
	x += 9 + textW("dashed: predicted (run ended first)", 11) + 14
	fmt.Fprintf(b, `<g class="claim"><path d="M%s %sl6 6l-6 6l-6-6z" fill="#fff"/></g><text x="%s" y="%s">tool's claim</text>`,
		num(x+6), num(y-10), num(x+15), num(y))
	y += legendRow
	fmt.Fprintf(b, `<text x="8" y="%s" fill="#555">%s</text>`, num(y), esc("Probes refused before the port is bound never reach the server, so its journal (and this picture) cannot show them."))
}
