package fault

import (
	"net/http"
	"time"
)

// FailRequests answers requests with an error status.
const FailRequests Kind = "fail_requests"

// DefaultFailStatus is a failed request's status when status is left out.
const DefaultFailStatus = http.StatusInternalServerError

func init() {
	register(Def{Kind: FailRequests, Summary: "the first count requests to route (all routes when empty) answer status (default 500) with an error body",
		Fields: fields(window, []string{FieldRoute, FieldCount, FieldStatus}), Required: []string{FieldCount},
		DefaultStatus: DefaultFailStatus, Fault: failRequests{}})
}

type failRequests struct{}

func (failRequests) Check(s Spec) error { return checkStatus(s) }

// Predict: client requests change no event of the truth (the warmup is the server's own).
func (failRequests) Predict(Spec, time.Duration, *Forecast) {}

func (failRequests) Answer(l *Live, at time.Duration, path string) (Answer, bool) {
	if !l.Take(at, path) {
		return Answer{}, false
	}
	return Answer{Status: l.HTTPStatus(), Message: "injected failure (fault fail_requests)"}, true
}
