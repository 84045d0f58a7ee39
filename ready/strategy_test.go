package ready

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
)

// procTarget is a wait.StrategyTarget for a server that is not in a container.
type procTarget struct {
	port   uint16
	log    string
	exited bool
}

func (p *procTarget) Host(context.Context) (string, error) { return "localhost", nil }
func (p *procTarget) Inspect(context.Context) (*container.InspectResponse, error) {
	return &container.InspectResponse{}, nil
}
func (p *procTarget) Ports(context.Context) (network.PortMap, error) { return nil, nil }
func (p *procTarget) MappedPort(context.Context, string) (network.Port, error) {
	pt, _ := network.PortFrom(p.port, network.TCP)
	return pt, nil
}
func (p *procTarget) Logs(context.Context) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(p.log)), nil
}
func (p *procTarget) Exec(context.Context, []string, ...tcexec.ProcessOption) (int, io.Reader, error) {
	return 0, nil, errors.New("no exec")
}
func (p *procTarget) State(context.Context) (*container.State, error) {
	if p.exited {
		return &container.State{Status: container.StateExited, ExitCode: 137}, nil
	}
	return &container.State{Running: true, Status: container.StateRunning}, nil
}
func (p *procTarget) CopyFileFromContainer(context.Context, string) (io.ReadCloser, error) {
	return nil, errors.New("no copy")
}

func TestStrategy(t *testing.T) {
	// /health takes 1.2 s: testcontainers' ForHTTP (1 s client timeout) never passes this.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(1200 * time.Millisecond)
		w.WriteHeader(200)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	tests := []struct {
		name   string
		target *procTarget
		want   Code
	}{
		{"slow health is ready", &procTarget{port: uint16(port)}, CodeReady},
		{"exited container fails fast", &procTarget{port: 1, exited: true}, CodeExited},
		{"fatal line in the container log", &procTarget{port: 1, log: "[2026-03-01 12:00:00] ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 30000): address already in use\n"}, CodeFatalLog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			s := ForSGLang("30000/tcp", Spec{Successes: 1, Interval: 100 * time.Millisecond, FatalConfirm: 100 * time.Millisecond})
			err := s.WaitUntilReady(ctx, tc.target)
			if got := ExitCode(err); got != int(tc.want) {
				t.Fatalf("WaitUntilReady = %v (code %d), want code %d", err, got, tc.want)
			}
		})
	}
}
