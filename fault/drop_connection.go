package fault

import "time"

// DropConnection closes connections without an answer, as a crashing proxy or an overloaded
// uvicorn worker does: the client reads EOF (or a reset) instead of a status.
const DropConnection Kind = "drop_connection"

func init() {
	register(Def{Kind: DropConnection, Summary: "the first count requests to route (all routes when empty) have their connection closed without an answer",
		Fields: fields(window, []string{FieldRoute, FieldCount}), Fault: dropConnection{}})
}

type dropConnection struct{}

// Predict: client requests change no event of the truth (the warmup is the server's own).
func (dropConnection) Predict(Spec, time.Duration, *Forecast) {}

func (dropConnection) Answer(l *Live, at time.Duration, path string) (Answer, bool) {
	if !l.Take(at, path) {
		return Answer{}, false
	}
	return Answer{Drop: true}, true
}
