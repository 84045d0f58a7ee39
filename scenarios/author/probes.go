package author

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/scenarios"
	"github.com/incident-replay/incident-replay/sglang"
)

// warmupRoutes are the server's own warmup requests, not probes.
var warmupRoutes = map[string]bool{"GET /get_model_info": true, "GET /model_info": true, "POST /generate": true}

// probePatterns groups access lines by client address and route. The server's own warmup
// requests (before ready) are left out; what remains is the traffic a readiness tool, a
// health checker or users sent.
func probePatterns(tl replay.Timeline) []ProbePattern {
	type group struct {
		p        ProbePattern
		at       []time.Duration
		statuses []string
		count    map[string]int
	}
	var order []string
	groups := map[string]*group{}
	ready := false
	for _, e := range tl.Entries {
		if e.Op != replay.OpLog {
			continue
		}
		ev := e.Event
		if ev.Kind == sglang.KindReady {
			ready = true
		}
		if ev.Kind != sglang.KindAccess {
			continue
		}
		f := ev.Fields
		client, _ := f.Get("client")
		method, _ := f.Get("method")
		route, _ := f.Get("path")
		status, _ := f.Get("status")
		if !ready && warmupRoutes[method+" "+route] {
			continue
		}
		if i := strings.LastIndexByte(client, ':'); i > 0 && !strings.HasSuffix(client, "]") {
			client = client[:i]
		}
		key := client + " " + method + " " + route
		g := groups[key]
		if g == nil {
			g = &group{p: ProbePattern{Client: client, Method: method, Route: route, First: e.At}, count: map[string]int{}}
			groups[key] = g
			order = append(order, key)
		}
		g.at = append(g.at, e.At)
		if g.count[status] == 0 {
			g.statuses = append(g.statuses, status)
		}
		g.count[status]++
	}
	var out []ProbePattern
	for _, k := range order {
		g := groups[k]
		g.p.Count = len(g.at)
		if len(g.at) > 1 {
			gaps := make([]time.Duration, len(g.at)-1)
			for i := range gaps {
				gaps[i] = g.at[i+1] - g.at[i]
			}
			slices.Sort(gaps)
			g.p.Interval = gaps[len(gaps)/2]
		}
		var st []string
		for _, s := range g.statuses {
			st = append(st, fmt.Sprintf("%s×%d", s, g.count[s]))
		}
		g.p.Statuses = strings.Join(st, " ")
		out = append(out, g.p)
	}
	slices.SortStableFunc(out, func(a, b ProbePattern) int { return cmp.Compare(b.Count, a.Count) })
	return out
}

// inferBehavior reads the warmup prefill size and the idle probes' prefill size (each
// generating /health check logs a small Prefill line: 1 token, or 64 in incident 2).
func inferBehavior(tl replay.Timeline) scenarios.Behavior {
	var b scenarios.Behavior
	bound, ready := false, false
	healthProbes := 0
	tokens := map[string]int{}
	graphs := map[string]int{}
	prefills := 0
	for _, e := range tl.Entries {
		ev := e.Event
		switch ev.Kind {
		case sglang.KindUvicornRunning:
			bound = true
		case sglang.KindReady:
			ready = true
		case sglang.KindAccess:
			if p, _ := ev.Fields.Get("path"); ready && (p == "/health" || p == "/health_generate") {
				healthProbes++
			}
		case sglang.KindPrefill:
			n, _ := ev.Fields.Get(sglang.LabelNewToken)
			switch {
			case bound && !ready && b.WarmupTokens == 0:
				b.WarmupTokens, _ = strconv.Atoi(n)
			case ready:
				prefills++
				tokens[n]++
				g, _ := ev.Fields.Get(sglang.LabelCUDAGraph)
				graphs[g]++
			}
		}
	}
	// Idle probes: as many small prefills as health probes, nothing else generating.
	if healthProbes > 0 && prefills > 0 && prefills <= healthProbes {
		n, _ := strconv.Atoi(mostCommon(tokens))
		b.ProbeTokens = n
		switch mostCommon(graphs) {
		case "True":
			t := true
			b.ProbeCUDAGraph = &t
		case "False":
			f := false
			b.ProbeCUDAGraph = &f
		}
	}
	return b
}

func mostCommon(m map[string]int) string {
	best, n := "", 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] > n {
			best, n = k, m[k]
		}
	}
	return best
}
