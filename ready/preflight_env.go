package ready

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/incident-replay/incident-replay/internal/bindtest"
)

// portFindings bind-tests the port on both loopbacks (and the server's own bind address): a
// port held by an old server makes the new one die with Errno 98 after minutes of loading,
// while the old one answers every probe.
func portFindings(host string, port int, procRoot string) []Finding {
	addrs := []string{"127.0.0.1", "::1"}
	if host != "" && !slices.Contains(addrs, host) && net.ParseIP(host) != nil {
		addrs = append(addrs, host)
	}
	var out []Finding
	for _, a := range addrs {
		_, err := bindtest.Free(net.JoinHostPort(a, strconv.Itoa(port)))
		if err == nil {
			continue
		}
		if errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT) {
			continue // no IPv6 here: nothing can be listening on ::1 either
		}
		owners, foreign, _ := ListenerOwners(procRoot, port)
		who := "owner unknown"
		if len(owners) > 0 {
			parts := make([]string, len(owners))
			for i, o := range owners {
				parts[i] = fmt.Sprintf("PID %d (%s)", o, procComm(procRoot, o))
			}
			who = "held by " + strings.Join(parts, ", ")
		} else if foreign > 0 {
			who = "held by a process we cannot inspect (another user, or a container proxy)"
		}
		out = append(out, Finding{Severity: SeverityError, Check: CheckPort, Message: fmt.Sprintf(
			"port %d is in use on %s, %s: SGLang binds only after loading, so it would die with Errno 98 while the old listener answers probes. Stop it or pick another --port",
			port, a, who)})
		break // one finding names the owner; more addresses add nothing
	}
	return out
}

// mustBypass are the names SGLang's own warmup and clients use for a local server (the warmup
// targets 0.0.0.0 when bound there, which no_proxy=localhost,127.0.0.1 misses: sglang #9814).
var mustBypass = []string{"127.0.0.1", "localhost", "::1", "0.0.0.0"}

// proxyFinding warns when a proxy variable would catch the server's loopback warmup request:
// SGLang's warmup uses Python requests, gets a 502/403 from the proxy, and kills itself.
func proxyFinding(env []string, host string) (Finding, bool) {
	proxy, missing := proxyGaps(env, host)
	if proxy == "" || len(missing) == 0 {
		return Finding{}, false
	}
	return Finding{Severity: SeverityWarning, Check: CheckProxy, Message: fmt.Sprintf(
		"%s is set and no_proxy does not cover %s: SGLang's warmup request would go to the proxy and the server would kill itself. llmwait launch adds them to the server's no_proxy (disable with --keep-proxy-env)",
		proxy, strings.Join(missing, ","))}, true
}

func proxyGaps(env []string, host string) (proxyVar string, missing []string) {
	vals := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vals[k] = v
		}
	}
	for _, k := range []string{"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", "https_proxy", "HTTPS_PROXY"} {
		if vals[k] != "" {
			proxyVar = k + "=" + vals[k]
			break
		}
	}
	if proxyVar == "" {
		return "", nil
	}
	var entries []string
	for _, k := range []string{"no_proxy", "NO_PROXY"} {
		for e := range strings.SplitSeq(vals[k], ",") {
			if e = strings.TrimSpace(e); e != "" {
				entries = append(entries, e)
			}
		}
	}
	if slices.Contains(entries, "*") {
		return proxyVar, nil
	}
	want := slices.Clone(mustBypass)
	if host != "" && !slices.Contains(want, host) {
		want = append(want, host)
	}
	for _, w := range want {
		if !slices.Contains(entries, w) && !slices.Contains(entries, "["+w+"]") {
			missing = append(missing, w)
		}
	}
	return proxyVar, missing
}

// FixNoProxy returns env with no_proxy and NO_PROXY extended to cover the loopback names and
// host, so the server's own warmup bypasses any proxy.
func FixNoProxy(env []string, host string) []string {
	_, missing := proxyGaps(env, host)
	if len(missing) == 0 {
		return env
	}
	out := slices.Clone(env)
	for _, k := range []string{"no_proxy", "NO_PROXY"} {
		i := slices.IndexFunc(out, func(kv string) bool { return strings.HasPrefix(kv, k+"=") })
		if i < 0 {
			out = append(out, k+"="+strings.Join(missing, ","))
			continue
		}
		cur := strings.TrimPrefix(out[i], k+"=")
		if cur != "" {
			cur += ","
		}
		out[i] = k + "=" + cur + strings.Join(missing, ",")
	}
	return out
}
