package main

import (
	"encoding/json"
	"net"
	"strconv"

	"github.com/jonboulle/clockwork"

	"github.com/incident-replay/incident-replay/ready"
)

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

func joinHostPort(host string, port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }

func clockOr(s ready.Spec) clockwork.Clock {
	if s.Clock != nil {
		return s.Clock
	}
	return clockwork.NewRealClock()
}
