package report

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/harness"
)

// Picture geometry (SVG user units; the picture scales to its container). The plot spans
// [PlotLeft, PlotRight]; the lane labels sit left of it.
const (
	Width     = 960
	PlotLeft  = 104.0
	PlotRight = 944.0

	rowMark  = 14 // one row of marker labels
	bandH    = 22
	probeRow = 11
	claimRow = 18
)

// Options tune one picture.
type Options struct {
	// Standalone embeds the stylesheet and the legend, for a .svg file read on its own. In a
	// page that already carries Style and Legend, leave it off: 660 copies would add ~2 MB.
	Standalone bool
}

// charW estimates the advance of one character at the given font size (DejaVu Sans and its
// look-alikes average ~0.6 em; wider glyphs are covered by the spacing around labels).
func charW(size float64) float64 { return 0.62 * size }

func textW(s string, size float64) float64 { return float64(len([]rune(s))) * charW(size) }

// scale maps scenario time to x.
type scale struct{ tmax time.Duration }

func (s scale) x(t time.Duration) float64 {
	if s.tmax <= 0 {
		return PlotLeft
	}
	return PlotLeft + (PlotRight-PlotLeft)*float64(t)/float64(s.tmax)
}

// num prints a coordinate with one decimal, trimmed: stable bytes for the same input.
func num(f float64) string {
	s := strconv.FormatFloat(f, 'f', 1, 64)
	return strings.TrimSuffix(s, ".0")
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 3, 64) }

// Title is the one-line caption of a run: pair, verdict, expectation.
func (t Timeline) Title() string {
	s := t.Scenario + " × " + t.Tool + ": "
	switch {
	case t.Err != nil:
		return s + "could not run"
	case t.Expect == "":
		return s + string(t.Verdict)
	case t.Expect == t.Verdict:
		return s + string(t.Verdict) + " (as expected)"
	}
	return s + string(t.Verdict) + " (expected " + string(t.Expect) + ")"
}

// claimText says what the tool concluded and when: its time to verdict.
func (t Timeline) claimText() string {
	switch {
	case t.Err != nil:
		return "harness error: " + t.Err.Error()
	case t.Claim == harness.ClaimReady:
		return "claimed ready at " + harness.FormatDuration(t.ClaimAt)
	case t.Claim == harness.ClaimFailed:
		return "gave up at " + harness.FormatDuration(t.ClaimAt)
	}
	return "still waiting at " + harness.FormatDuration(t.ClaimAt) + ": killed at the harness limit"
}

func (t Timeline) speedText() string {
	if t.Unscaled || t.Speed == 1 {
		return "real time (tool ran unscaled, S=1)"
	}
	s := fmt.Sprintf("replayed at %g×", t.Speed)
	if t.Wall > 0 {
		s += fmt.Sprintf(": %s of scenario time in %.1fs wall", harness.FormatDuration(t.Duration), t.Wall.Seconds())
	}
	return s
}

// placed is a label assigned a row so that no two labels in a row overlap.
type placed struct {
	Mark
	x, left, right float64
	anchor         string
	row            int
}

// placeLabels stacks marker labels into rows, earliest first; a label that would run past
// the plot's right edge is drawn to the left of its marker.
func placeLabels(ms []Mark, sc scale) []placed {
	var out []placed
	var rowEnds []float64
	for _, m := range ms {
		p := placed{Mark: m, x: sc.x(m.At), anchor: "start"}
		w := textW(m.Label, 11)
		p.left, p.right = p.x+3, p.x+3+w
		if p.right > PlotRight+12 {
			p.anchor, p.left, p.right = "end", p.x-3-w, p.x-3
		}
		p.row = -1
		for i, end := range rowEnds {
			if p.left > end+6 {
				p.row = i
				break
			}
		}
		if p.row < 0 {
			p.row = len(rowEnds)
			rowEnds = append(rowEnds, 0)
		}
		rowEnds[p.row] = p.right
		out = append(out, p)
	}
	return out
}

// tickStep picks an axis step that leaves room for every tick label.
func tickStep(tmax time.Duration) time.Duration {
	steps := []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour}
	for _, s := range steps {
		if float64(tmax)/float64(s) <= 12 {
			return s
		}
	}
	return 2 * time.Hour
}

// axisMax pads the run's end so the last event is not drawn on the border.
func axisMax(d time.Duration) time.Duration {
	return max(10*time.Second, d+d/25)
}

// SVG writes the run's picture.
func (t Timeline) SVG(w io.Writer, o Options) error {
	var b strings.Builder
	t.svg(&b, o)
	_, err := io.WriteString(w, b.String())
	return err
}

func (t Timeline) svg(b *strings.Builder, o Options) {
	sc := scale{tmax: axisMax(t.Duration)}
	labels := placeLabels(t.Marks, sc)
	c := t.layout(b, sc, labels, o)
	t.drawHeader(c, o)
	// Grid and axis first, so everything else draws over them.
	t.drawAxis(c)
	c.drawLanes()
	t.drawBands(c)
	t.drawProbes(c)
	c.drawMarkers(labels)
	t.drawClaim(c)
	t.drawNote(c)
	if o.Standalone {
		fmt.Fprintf(b, `<g transform="translate(0 %s)">`, num(c.height))
		legendBody(b)
		b.WriteString(`</g>`)
	}
	b.WriteString("</svg>")
}

// canvas is where one picture is drawn: its time scale and the top of each of its rows.
type canvas struct {
	b  *strings.Builder
	sc scale

	yMarks, yBand, yProbe, yClaim, yNote, yAxis float64
	height, total                               float64 // without and with the legend
}

// layout lays the picture's rows out: marker labels, phase band, one row per probe class,
// the claim, the note and the axis.
func (t Timeline) layout(b *strings.Builder, sc scale, labels []placed, o Options) *canvas {
	rows := 1
	for _, l := range labels {
		rows = max(rows, l.row+1)
	}
	c := &canvas{b: b, sc: sc, yMarks: 22.0}
	c.yBand = c.yMarks + float64(rows)*rowMark + 4
	c.yProbe = c.yBand + bandH + 4
	c.yClaim = c.yProbe + probeRow*float64(numProbeClasses) + 2
	c.yNote = c.yClaim + claimRow
	c.yAxis = c.yNote
	if t.Ignored > 0 {
		c.yAxis += 14
	}
	c.height = c.yAxis + 34
	legendH := 0.0
	if o.Standalone {
		legendH = legendHeight()
	}
	c.total = c.height + legendH
	return c
}

// drawHeader opens the picture: its size, caption, style (standalone) and background.
func (t Timeline) drawHeader(c *canvas, o Options) {
	b, total := c.b, c.total
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" class="tl" viewBox="0 0 %d %s" width="%d" height="%s" role="img" aria-label="%s" data-scenario="%s" data-tool="%s" data-plot-left="%s" data-plot-right="%s" data-tmax="%s">`,
		Width, num(total), Width, num(total), esc(t.Title()), esc(t.Scenario), esc(t.Tool), num(PlotLeft), num(PlotRight), secs(c.sc.tmax))
	fmt.Fprintf(b, "<title>%s</title>", esc(t.Title()+". "+t.Reason))
	if o.Standalone {
		b.WriteString("<style>" + Style + "</style>")
	}
	fmt.Fprintf(b, `<rect class="bg" width="%d" height="%s"/>`, Width, num(total))
	fmt.Fprintf(b, `<text class="title" x="8" y="15">%s</text>`, esc(t.Title()))
}

// drawAxis draws the time axis with its ticks and grid lines.
func (t Timeline) drawAxis(c *canvas) {
	b, sc, yAxis := c.b, c.sc, c.yAxis
	step := tickStep(sc.tmax)
	b.WriteString(`<g class="axis">`)
	for at := time.Duration(0); at <= sc.tmax; at += step {
		x := num(sc.x(at))
		fmt.Fprintf(b, `<g class="tick" data-at="%s"><line class="grid" x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s">%s</text></g>`,
			secs(at), x, x, num(c.yBand), num(yAxis+4), x, num(yAxis+15), tickLabel(at))
	}
	fmt.Fprintf(b, `<line class="base" x1="%s" x2="%s" y1="%s" y2="%s"/>`, num(PlotLeft), num(PlotRight), num(yAxis), num(yAxis))
	fmt.Fprintf(b, `<text class="axt" x="%s" y="%s">scenario time since launch · %s</text></g>`, num(PlotLeft), num(yAxis+29), esc(t.speedText()))
}

// drawLanes labels the rows left of the plot.
func (c *canvas) drawLanes() {
	lane := func(y float64, s string) {
		fmt.Fprintf(c.b, `<text class="lane" x="%s" y="%s">%s</text>`, num(PlotLeft-6), num(y), esc(s))
	}
	lane(c.yBand+15, "server")
	for pc := ProbeClass(0); pc < numProbeClasses; pc++ {
		lane(c.yProbe+float64(pc)*probeRow+9, "probe "+pc.String())
	}
	lane(c.yClaim+12, "tool claim")
}

// drawBands draws the phase bands, labelled where the label fits inside.
func (t Timeline) drawBands(c *canvas) {
	b, sc, yBand := c.b, c.sc, c.yBand
	b.WriteString(`<g class="bands">`)
	for i, bd := range t.Bands {
		x0, x1 := sc.x(bd.From), sc.x(bd.To)
		if bd.Phase == PhaseDead && i == len(t.Bands)-1 {
			x1 = PlotRight // dead for good: to the edge, not just to the last record
		}
		if x1 <= x0 {
			continue
		}
		fmt.Fprintf(b, `<rect class="ph ph-%s" x="%s" y="%s" width="%s" height="%d" data-from="%s" data-to="%s"><title>%s %s–%s</title></rect>`,
			phaseClass(bd.Phase), num(x0), num(yBand), num(x1-x0), bandH, secs(bd.From), secs(bd.To), bd.Phase, harness.FormatDuration(bd.From), harness.FormatDuration(bd.To))
		if x1-x0 >= textW(string(bd.Phase), 10)+6 {
			fmt.Fprintf(b, `<text class="bl bl-%s" x="%s" y="%s">%s</text>`, phaseClass(bd.Phase), num((x0+x1)/2), num(yBand+15), bd.Phase)
		}
	}
	if t.Stopped > 0 && sc.x(sc.tmax)-sc.x(t.Stopped) > 2 {
		x0 := sc.x(t.Stopped)
		fmt.Fprintf(b, `<rect class="after" x="%s" y="%s" width="%s" height="%d"><title>not replayed: the run ended when the tool returned</title></rect>`,
			num(x0), num(yBand), num(PlotRight-x0), bandH)
		if lbl := "not replayed"; PlotRight-x0 >= textW(lbl, 10)+6 {
			fmt.Fprintf(b, `<text class="bl" x="%s" y="%s">%s</text>`, num((x0+PlotRight)/2), num(yBand+15), lbl)
		}
	}
	b.WriteString(`</g>`)
}

// drawProbes draws one path per probe class, a tick per request and a faint bar for its
// latency.
func (t Timeline) drawProbes(c *canvas) {
	b, sc := c.b, c.sc
	var counts [numProbeClasses]int
	var ticks, lats [numProbeClasses]strings.Builder
	for _, p := range t.Probes {
		counts[p.Class]++
		y := c.yProbe + float64(p.Class)*probeRow + 1
		x := sc.x(p.At)
		fmt.Fprintf(&ticks[p.Class], "M%s %sv9", num(x), num(y))
		if lw := sc.x(p.At+p.Latency) - x; lw >= 2 {
			fmt.Fprintf(&lats[p.Class], "M%s %sh%s", num(x), num(y+4.5), num(lw))
		}
	}
	for pc := ProbeClass(0); pc < numProbeClasses; pc++ {
		if counts[pc] == 0 {
			continue
		}
		fmt.Fprintf(b, `<g class="probes pr-%d" data-class="%s" data-count="%d"><title>%d %s</title>`, pc, esc(pc.String()), counts[pc], counts[pc], esc(probeSummary(t.Probes, pc)))
		if lats[pc].Len() > 0 {
			fmt.Fprintf(b, `<path class="lat" d="%s"/>`, lats[pc].String())
		}
		fmt.Fprintf(b, `<path class="tk" d="%s"/></g>`, ticks[pc].String())
	}
}

// drawMarkers draws the ground-truth markers across band and probe rows, labels stacked
// above.
func (c *canvas) drawMarkers(labels []placed) {
	for _, l := range labels {
		cls := "mk mk-" + l.Name
		if l.Predicted {
			cls += " pred"
		}
		x := num(l.x)
		ly := c.yMarks + float64(l.row)*rowMark + 10
		tx := l.x + 3
		if l.anchor == "end" {
			tx = l.x - 3
		}
		fmt.Fprintf(c.b, `<g class="%s" data-at="%s"><line x1="%s" x2="%s" y1="%s" y2="%s"/><text x="%s" y="%s" text-anchor="%s">%s</text></g>`,
			cls, secs(l.At), x, x, num(ly-9), num(c.yClaim), num(tx), num(ly), l.anchor, esc(l.Label))
	}
}

// drawClaim draws the claim: a diamond at the time the tool returned (or was killed), and what
// it said.
func (t Timeline) drawClaim(c *canvas) {
	b, yClaim := c.b, c.yClaim
	if t.Err == nil {
		x := c.sc.x(t.ClaimAt)
		y := yClaim + 8
		txt := t.claimText()
		tx, anchor := x+9, "start"
		if tx+textW(txt, 11) > PlotRight+12 {
			tx, anchor = x-9, "end"
		}
		fmt.Fprintf(b, `<g class="claim cv-%s" data-at="%s" data-outcome="%s"><path d="M%s %sl6 6l-6 6l-6-6z"/><text x="%s" y="%s" text-anchor="%s">%s</text></g>`,
			t.Verdict, secs(t.ClaimAt), t.Claim, num(x), num(y-6), num(tx), num(y+4), anchor, esc(txt))
	} else {
		fmt.Fprintf(b, `<text class="err" x="%s" y="%s">%s</text>`, num(PlotLeft), num(yClaim+12), esc(t.claimText()))
	}
}

// drawNote notes the health answers that came after the server was ready.
func (t Timeline) drawNote(c *canvas) {
	if t.Ignored <= 0 {
		return
	}
	what := "the tool did not act on them"
	if t.Claim == harness.ClaimReady {
		what = "before the tool claimed ready"
	}
	fmt.Fprintf(c.b, `<text class="note" x="%s" y="%s">%d health probe(s) answered 2xx after the server was ready; %s</text>`,
		num(PlotLeft), num(c.yNote+10), t.Ignored, what)
}

func probeSummary(ps []Probe, c ProbeClass) string {
	var routes []string
	seen := map[string]int{}
	for _, p := range ps {
		if p.Class != c {
			continue
		}
		k := p.Route
		if p.Status != 0 {
			k = strconv.Itoa(p.Status) + " " + p.Route
		}
		if seen[k] == 0 {
			routes = append(routes, k)
		}
		seen[k]++
	}
	var parts []string
	for _, r := range routes {
		parts = append(parts, fmt.Sprintf("%d× %s", seen[r], r))
	}
	return c.String() + " answers: " + strings.Join(parts, ", ")
}

func phaseClass(p Phase) string { return strings.ToLower(string(p)) }

func tickLabel(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	m, s := int(d/time.Minute), int((d%time.Minute)/time.Second)
	switch {
	case m == 0:
		return strconv.Itoa(s) + "s"
	case s == 0:
		return strconv.Itoa(m) + "m"
	}
	return fmt.Sprintf("%dm%02ds", m, s)
}
