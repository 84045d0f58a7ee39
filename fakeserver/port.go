package fakeserver

import (
	"regexp"
	"slices"
	"strconv"

	"github.com/incident-replay/incident-replay/sglang"
)

// serverArgsPort matches the port in a server_args line: port=N in the ServerArgs(...) form,
// 'port': N in the dict form (metrics_port and the like are other fields).
var serverArgsPort = regexp.MustCompile(`(^|[(,{ ])(port=|'port': )\d+`)

// realPort returns ev stating the port the server binds instead of the one the timeline was
// built with: a scenario's launch flags say 30000, while --port or a harness picks another,
// and the log must name the port clients reach. Other events are returned as they are.
func (s *Server) realPort(ev sglang.Event) sglang.Event {
	port := strconv.Itoa(s.port)
	switch ev.Kind {
	case sglang.KindServerArgs:
		ev.Text = serverArgsPort.ReplaceAllString(ev.Text, "${1}${2}"+port)
	case sglang.KindUvicornRunning, sglang.KindErrno98:
		i := slices.IndexFunc(ev.Fields, func(f sglang.Field) bool { return f.Key == "port" })
		if i >= 0 && ev.Fields[i].Value != port {
			ev.Fields = slices.Clone(ev.Fields) // the timeline's entries are shared
			ev.Fields[i].Value = port
		}
	}
	return ev
}
