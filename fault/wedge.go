package fault

import "time"

// Wedge: the whole server stops answering; connections are accepted, no response is sent.
const Wedge Kind = "wedge"

func init() {
	register(Def{Kind: Wedge, Summary: "the whole server stops answering: connections are accepted, no response is ever sent (for bounds it)",
		Fields: window, Fault: wedge{}})
}

type wedge struct{}

// Predict: a wedge with no end is a death as a tool sees it.
func (wedge) Predict(s Spec, at time.Duration, f *Forecast) {
	if s.For == 0 {
		f.Truth.Wedge(at)
	}
}

func (wedge) Arm(l *Live, srv Server) {
	srv.After(l.start(), srv.Wedge)
	if l.For > 0 {
		srv.After(l.start()+l.For, srv.Unwedge)
	}
}
