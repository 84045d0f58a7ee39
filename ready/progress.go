package ready

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress is one observable step of a Wait: what the --json stream prints, one object a line.
type Progress struct {
	T       float64 `json:"t"`     // seconds since Wait started, on the Spec's clock
	Event   string  `json:"event"` // phase | progress | probe | fatal | line | verdict
	Phase   Phase   `json:"phase"`
	Pct     *int    `json:"pct,omitempty"`
	Code    *int    `json:"code,omitempty"` // verdict only
	Message string  `json:"msg,omitempty"`
}

// Printer renders Progress for a human or a machine. It is safe for concurrent use.
type Printer struct {
	mu   sync.Mutex
	w    io.Writer
	mode PrintMode
	live bool // a status line is on screen and must be cleared before other output
}

// PrintMode selects the rendering.
type PrintMode uint8

const (
	PrintPlain PrintMode = iota // one line per phase change, percent step or probe change
	PrintTTY                    // one live status line, redrawn in place
	PrintJSON                   // the event stream, one JSON object per line
)

// NewPrinter writes to w in mode.
func NewPrinter(w io.Writer, mode PrintMode) *Printer { return &Printer{w: w, mode: mode} }

// Observe is a Spec.Observe func.
func (p *Printer) Observe(ev Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.mode {
	case PrintJSON:
		b, _ := json.Marshal(ev)
		p.w.Write(append(b, '\n'))
	case PrintTTY:
		if ev.Event == "line" || ev.Event == "verdict" || ev.Event == "fatal" {
			p.clear()
			fmt.Fprintln(p.w, ev.Message)
			return
		}
		fmt.Fprintf(p.w, "\r\x1b[K%s", statusLine(ev))
		p.live = true
	default:
		if ev.Event == "line" || ev.Event == "verdict" {
			fmt.Fprintln(p.w, ev.Message)
			return
		}
		fmt.Fprintln(p.w, "llmwait: "+statusLine(ev))
	}
}

func (p *Printer) clear() {
	if p.live {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.live = false
	}
}

func statusLine(ev Progress) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[%7s] %-10s", (time.Duration(ev.T * float64(time.Second))).Round(100*time.Millisecond), ev.Phase)
	if ev.Pct != nil {
		fmt.Fprintf(&b, " %3d%%", *ev.Pct)
	}
	if ev.Message != "" {
		b.WriteString("  " + ev.Message)
	}
	return b.String()
}
