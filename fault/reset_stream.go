package fault

import "time"

// ResetStream cuts streaming responses with a TCP reset.
const ResetStream Kind = "reset_stream"

// DefaultResetAfterChunks is how many chunks a reset stream sends when chunks is left out.
const DefaultResetAfterChunks = 1

func init() {
	register(Def{Kind: ResetStream, Summary: "streaming responses (on route, or every streaming route) are cut with a TCP reset after chunks chunks; count limits how many streams",
		Fields: fields(window, []string{FieldRoute, FieldCount, FieldChunks}), Fault: resetStream{}})
}

type resetStream struct{}

// Predict: client streams change no event of the truth.
func (resetStream) Predict(Spec, time.Duration, *Forecast) {}

func (resetStream) ResetAfter(l *Live, at time.Duration, path string) (int, bool) {
	if !l.Take(at, path) {
		return 0, false
	}
	if l.Chunks == 0 {
		return DefaultResetAfterChunks, true
	}
	return l.Chunks, true
}
