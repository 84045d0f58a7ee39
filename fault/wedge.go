package fault

import "time"

// Wedge: the whole server stops answering; connections are accepted, no response is sent.
const Wedge Kind = "wedge"

func init() {
	register(Def{Kind: Wedge, Summary: "the whole server stops answering: connections are accepted, no response is ever sent (for bounds it)",
		Fields: window, Fault: wedge{}})
}

type wedge struct{}

func (wedge) Predict(s Spec, at time.Duration, f *Forecast) { predictLastingWedge(s, at, f) }

func (wedge) Arm(l *Live, srv Server) { armWindow(l, srv, srv.Wedge, srv.Unwedge) }
