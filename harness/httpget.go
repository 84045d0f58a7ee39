package harness

import (
	"context"
	"time"
)

// HTTPGet is one GET of path on env's server, made the way a Go wait function should make it:
// on the run's clock (timeout is scenario time), through no proxy, without following redirects,
// and, on virtual time, with the request holding the clock while it is on the wire and the
// tool idle while it waits for the answer. ctx must be the one the harness passed the wait
// function. It returns the status code, or an error when no answer came.
func HTTPGet(ctx context.Context, env Env, path string, timeout time.Duration) (int, error) {
	return get(ctx, env.Clock, env.URL+path, timeout, false)
}
