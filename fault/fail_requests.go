package fault

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// FailRequests answers requests with an error status.
const FailRequests Kind = "fail_requests"

// DefaultFailStatus is a failed request's status when status is left out.
const DefaultFailStatus = http.StatusInternalServerError

func init() {
	register(Def{Kind: FailRequests, Summary: "the first count requests (all when count is omitted) to route (all routes when empty) answer status (default 500) with an error body; a 3xx carries location as its Location header",
		Fields:        fields(window, []string{FieldRoute, FieldCount, FieldStatus, FieldLocation}),
		DefaultStatus: DefaultFailStatus, Fault: failRequests{}})
}

type failRequests struct{}

func (failRequests) Check(s Spec) error {
	if err := checkStatus(s); err != nil {
		return err
	}
	redirect := s.HTTPStatus() >= 300 && s.HTTPStatus() < 400
	switch {
	case s.Location != "" && !redirect:
		return fmt.Errorf("fault %s: location applies to a 3xx status only (status is %d)", s.Kind, s.HTTPStatus())
	case s.Location != "" && !strings.HasPrefix(s.Location, "/"):
		return fmt.Errorf("fault %s: location %q must be a path starting with /", s.Kind, s.Location)
	}
	return nil
}

// HoldsHealth reports whether s keeps /health from ever answering 200: every request to it
// (no count, no end), from the start, answered with a status other than 200.
func (failRequests) HoldsHealth(s Spec) bool {
	return s.Count == 0 && s.For == 0 && s.At == 0 && s.AfterLine == "" &&
		(s.Route == "" || s.Route == "/health") && s.HTTPStatus() != http.StatusOK
}

// Predict: a fault that answers every /health itself means the server never reports ready
// (a redirect to a page that answers 200 is not the server saying so); other client
// requests change no event of the truth (the warmup is the server's own).
func (f failRequests) Predict(s Spec, _ time.Duration, fc *Forecast) {
	if f.HoldsHealth(s) {
		fc.HealthHeld = true
	}
}

func (failRequests) Answer(l *Live, at time.Duration, path string) (Answer, bool) {
	if !l.Take(at, path) {
		return Answer{}, false
	}
	return Answer{Status: l.HTTPStatus(), Message: "injected failure (fault fail_requests)", Location: l.Location}, true
}
