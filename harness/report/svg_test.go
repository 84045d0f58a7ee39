package report

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
	"github.com/incident-replay/incident-replay/harness/report/svgtest"

	"github.com/incident-replay/incident-replay/truth"
)

// node adds the report's own font-size rules to the generic tree.
type node struct{ svgtest.Node }

func (n node) attr(k string) string  { return n.Attr(k) }
func (n node) has(class string) bool { return n.HasClass(class) }
func (n node) child(i int) node      { return node{n.Nodes[i]} }

func (n node) num(t *testing.T, k string) float64 {
	t.Helper()
	f, err := n.Float(k)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// walk visits every element with the font size it inherits from its classes.
func (n node) walk(fn func(n node, size float64), size float64) {
	n.walkAt(func(n node, size, _ float64) { fn(n, size) }, size, 0)
}

// walkAt also passes the vertical offset of enclosing translate(0 Y) groups.
func (n node) walkAt(fn func(n node, size, dy float64), size, dy float64) {
	switch {
	case n.HasClass("title"):
		size = 13
	case n.HasClass("bl") || n.HasClass("tick"):
		size = 10
	}
	if tr := n.Attr("transform"); strings.HasPrefix(tr, "translate(0 ") {
		off, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimPrefix(tr, "translate(0 "), ")"), 64)
		dy += off
	}
	fn(n, size, dy)
	for _, k := range n.Nodes {
		node{k}.walkAt(fn, size, dy)
	}
}

func parse(t *testing.T, b []byte) node {
	t.Helper()
	n, err := svgtest.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	return node{n}
}

func render(t *testing.T, tl Timeline, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tl.SVG(&b, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestSVGPlacesEventsAtTheirTimes(t *testing.T) {
	r := foundingResult()
	tl := NewTimeline(r, r.Journal)
	out := render(t, tl, Options{Standalone: true})
	if !bytes.Equal(out, render(t, tl, Options{Standalone: true})) {
		t.Fatal("two renders differ")
	}
	root := parse(t, out)
	left, right, tmax := root.num(t, "data-plot-left"), root.num(t, "data-plot-right"), root.num(t, "data-tmax")
	x := func(s float64) float64 { return left + (right-left)*s/tmax }
	want := map[string]float64{"mk-bound": 632, "mk-ready": 633, "mk-dead": 900}
	got := map[string]float64{}
	var ticks, claims int
	root.walk(func(n node, _ float64) {
		for cls := range want {
			if n.HasClass(cls) && n.Attr("data-at") != "" {
				got[cls] = n.child(0).num(t, "x1")
			}
		}
		if n.HasClass("tk") && n.Attr("d") != "" && strings.Contains(n.Attr("d"), "v9") {
			ticks += strings.Count(n.Attr("d"), "M")
		}
		if n.HasClass("claim") && n.Attr("data-at") != "" {
			claims++
			cx, _ := strconv.ParseFloat(strings.Fields(strings.TrimPrefix(n.child(0).Attr("d"), "M"))[0], 64)
			if math.Abs(cx-x(700)) > 0.5 {
				t.Errorf("claim at x=%v, want %v", cx, x(700))
			}
		}
	}, 11)
	for cls, at := range want {
		if math.Abs(got[cls]-x(at)) > 0.5 {
			t.Errorf("%s at x=%v, want %v (t=%vs)", cls, got[cls], x(at), at)
		}
	}
	if ticks != 14 || claims != 1 {
		t.Errorf("%d probe ticks, %d claims; want 14 and 1", ticks, claims)
	}
	for _, s := range []string{"13 health probe(s) answered 2xx after the server was ready", "gave up at 11m40s", "replayed at 60×", `class="mk mk-dead pred"`} {
		if !bytes.Contains(out, []byte(s)) {
			t.Errorf("picture lacks %q", s)
		}
	}
}

// texts lists every text's estimated box; the estimate is the one placement uses, so this
// catches placement logic that ignores it (rows, anchors, fit checks).
type box struct {
	s                        string
	left, right, top, bottom float64
}

func textBoxes(t *testing.T, root node) []box {
	var out []box
	root.walkAt(func(n node, size, dy float64) {
		if n.XMLName.Local != "text" {
			return
		}
		x, y := n.num(t, "x"), n.num(t, "y")+dy
		w := textW(n.Text, size)
		anchor := n.Attr("text-anchor")
		switch {
		case n.HasClass("lane"):
			anchor = "end"
		case n.HasClass("bl") || (anchor == "" && size == 10):
			anchor = "middle"
		}
		b := box{s: n.Text, top: y - 0.8*size, bottom: y + 0.2*size}
		switch anchor {
		case "end":
			b.left, b.right = x-w, x
		case "middle":
			b.left, b.right = x-w/2, x+w/2
		default:
			b.left, b.right = x, x+w
		}
		out = append(out, b)
	}, 11, 0)
	return out
}

func assertNoOverlap(t *testing.T, name string, svg []byte) {
	t.Helper()
	bs := textBoxes(t, parse(t, svg))
	for i := range bs {
		for j := i + 1; j < len(bs); j++ {
			a, b := bs[i], bs[j]
			if a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom {
				t.Errorf("%s: %q overlaps %q", name, a.s, b.s)
			}
		}
		if bs[i].right > Width+0.5 || bs[i].left < -0.5 {
			t.Errorf("%s: %q runs off the picture (%v..%v)", name, bs[i].s, bs[i].left, bs[i].right)
		}
	}
}

func TestSVGTextDoesNotOverlap(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return start.Add(sec(s)) }
	crowded := func(name string, bound, ready, dead, claim float64, outcome harness.Outcome) harness.Result {
		code := 137
		j := []fakeserver.Record{logRec(1, "load_begin"), logRec(bound-1, "load_end"), stateRec(bound, fakeserver.StateBound),
			stateRec(ready, fakeserver.StateReady), {Type: fakeserver.RecState, At: sec(dead), State: fakeserver.StateDead, Code: &code}}
		return harness.Result{Scenario: name, Tool: "curl-strict", Speed: 60, Verdict: harness.FailedFast, Expect: harness.ReadyOK,
			Claim: harness.Claim{Outcome: outcome, At: at(claim)}, Journal: j, Reason: "crowded",
			Start: start, Truth: truth.Truth{Bound: truth.At(sec(bound)), Ready: truth.At(sec(ready)), Dead: truth.At(sec(dead)), ExitCode: &code}}
	}
	results := []harness.Result{
		foundingResult(),
		crowded("all-at-the-end", 598, 599, 600, 600, harness.ClaimFailed),
		crowded("all-at-the-start", 1.2, 1.3, 1.4, 0.1, harness.ClaimReady),
		crowded("middle", 300, 300.5, 301, 301, harness.ClaimFailed),
	}
	for _, r := range results {
		for _, o := range []Options{{}, {Standalone: true}} {
			assertNoOverlap(t, r.Scenario, render(t, NewTimeline(r, r.Journal), o))
		}
	}
	assertNoOverlap(t, "legend", []byte(Legend()))
	if !testing.Short() {
		card := catalogueCard(t)
		for _, r := range card.Results {
			assertNoOverlap(t, r.Scenario+"/"+r.Tool, render(t, NewTimeline(r, r.Journal), Options{}))
		}
	}
}
