package e2e

import (
	"context"
	"errors"
	"io"
	"net/netip"
	"os"
	"strconv"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/incident-replay/incident-replay/fakeserver"
	"github.com/incident-replay/incident-replay/harness"
)

// envTarget is an in-process fake server as a testcontainers wait.StrategyTarget: a
// container that exposes fakesglang's port, published at the server's loopback port, and is
// running until the server exits. It is what wait.HTTPStrategy reads (Host, Inspect's port
// map, MappedPort, State); exec and file copies are refused.
type envTarget struct{ env harness.Env }

var _ wait.StrategyTarget = envTarget{}

var errNotAContainer = errors.New("an in-process fake server is not a container: no exec or file copy")

func (t envTarget) Host(context.Context) (string, error) { return t.env.Host, nil }

func (t envTarget) Inspect(ctx context.Context) (*container.InspectResponse, error) {
	st, _ := t.State(ctx)
	return &container.InspectResponse{State: st, NetworkSettings: &container.NetworkSettings{Ports: t.ports()}}, nil
}

func (t envTarget) ports() network.PortMap {
	host, err := netip.ParseAddr(t.env.Host)
	if err != nil {
		host = netip.MustParseAddr("127.0.0.1")
	}
	return network.PortMap{network.MustParsePort(fakeserver.ContainerPort): {{HostIP: host, HostPort: strconv.Itoa(t.env.Port)}}}
}

func (t envTarget) Ports(context.Context) (network.PortMap, error) { return t.ports(), nil }

// MappedPort maps fakesglang's container port (with or without "/tcp") to the server's port.
func (t envTarget) MappedPort(_ context.Context, port string) (network.Port, error) {
	want, err := network.ParsePort(port)
	if err != nil {
		return network.Port{}, err
	}
	if want != network.MustParsePort(fakeserver.ContainerPort) {
		return network.Port{}, errors.New("port " + port + " is not exposed (fakesglang exposes " + fakeserver.ContainerPort + ")")
	}
	p, _ := network.PortFrom(uint16(t.env.Port), network.TCP)
	return p, nil
}

func (t envTarget) Logs(context.Context) (io.ReadCloser, error) { return os.Open(t.env.LogFile) }

func (t envTarget) Exec(context.Context, []string, ...exec.ProcessOption) (int, io.Reader, error) {
	return 0, nil, errNotAContainer
}

// State is running until the server process exits, then exited with its code.
func (t envTarget) State(context.Context) (*container.State, error) {
	if t.env.Exited != nil {
		if code, ok := t.env.Exited(); ok {
			return &container.State{Status: container.StateExited, ExitCode: code}, nil
		}
	}
	return &container.State{Status: container.StateRunning, Running: true}, nil
}

func (t envTarget) CopyFileFromContainer(context.Context, string) (io.ReadCloser, error) {
	return nil, errNotAContainer
}
