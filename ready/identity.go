package ready

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// mismatchError: the port is served by someone other than the server we are waiting for.
type mismatchError struct{ msg string }

func (e *mismatchError) Error() string { return e.msg }

// identity is rung (d). It runs once per Wait after the first healthy answer: a listener does
// not change owner while it stays bound.
func (p *prober) identity(ctx context.Context) error {
	id := p.spec.Identity
	if p.idOK || (id.PID == 0 && len(id.ServerInfo) == 0) {
		return nil
	}
	if id.PID != 0 {
		port, _ := strconv.Atoi(p.base.Port())
		owners, foreign, err := ListenerOwners(id.ProcRoot, port)
		switch {
		case err != nil:
			return err
		case len(owners) == 0 && foreign == 0:
			// Another network namespace (container, published port): procfs cannot tell.
			p.notes = append(p.notes, fmt.Sprintf("identity: no listener on port %d in this network namespace; owner not verified", port))
		default:
			for _, o := range owners {
				if !InTree(id.ProcRoot, o, id.PID) {
					return &mismatchError{fmt.Sprintf("port %d is served by PID %d (%s), not by the launched process tree of PID %d: a stale or foreign server holds the port",
						port, o, procComm(id.ProcRoot, o), id.PID)}
				}
			}
			if foreign > 0 {
				return &mismatchError{fmt.Sprintf("port %d has %d listener(s) owned by processes we cannot inspect (another user?), not the launched PID %d", port, foreign, id.PID)}
			}
		}
	}
	if len(id.ServerInfo) > 0 {
		if err := p.serverInfo(ctx, id.ServerInfo); err != nil {
			return err
		}
	}
	p.idOK = true
	return nil
}

func (p *prober) serverInfo(ctx context.Context, want map[string]string) error {
	var body []byte
	for _, path := range []string{"/server_info", "/get_server_info"} {
		status, b, _, err := p.do(ctx, http.MethodGet, path, nil, p.timeout())
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		if status == http.StatusOK {
			body = b
			break
		}
		if status != http.StatusNotFound {
			return fmt.Errorf("GET %s: status %d", path, status)
		}
	}
	if body == nil {
		return &mismatchError{"neither /server_info nor /get_server_info exists: not an SGLang server"}
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		return &mismatchError{"server info is not a JSON object: " + snippet(body)}
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v, ok := got[k]
		if !ok {
			return &mismatchError{fmt.Sprintf("server info has no %q; expected %q", k, want[k])}
		}
		if s := jsonScalar(v); s != want[k] {
			return &mismatchError{fmt.Sprintf("server info %s=%q, but we launched %s=%q: another server answers on this port", k, s, k, want[k])}
		}
	}
	return nil
}

func jsonScalar(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "None"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// ListenerOwners finds the processes holding a TCP socket listening on port (IPv4 and IPv6),
// via the socket inodes in procRoot/net/tcp{,6} and procRoot/*/fd. foreign counts listening
// sockets whose owner is not visible to us (another user's process).
func ListenerOwners(procRoot string, port int) (pids []int, foreign int, err error) {
	inodes := map[string]bool{}
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		if err := listenInodes(filepath.Join(procRoot, f), port, inodes); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, 0, err
		}
	}
	if len(inodes) == 0 {
		return nil, 0, nil
	}
	found := map[string]bool{}
	ents, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", procRoot, err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fds, err := os.ReadDir(filepath.Join(procRoot, e.Name(), "fd"))
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, fd := range fds {
			l, err := os.Readlink(filepath.Join(procRoot, e.Name(), "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(l, "socket:[") {
				continue
			}
			ino := strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")
			if inodes[ino] {
				found[ino] = true
				if !slices.Contains(pids, pid) {
					pids = append(pids, pid)
				}
			}
		}
	}
	slices.Sort(pids)
	return pids, len(inodes) - len(found), nil
}

// listenInodes adds the inodes of sockets in LISTEN state (st 0A) on port from one procfs table.
func listenInodes(path string, port int, into map[string]bool) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 10 || fs[3] != "0A" || !strings.HasSuffix(fs[1], want) {
			continue
		}
		if fs[9] != "0" {
			into[fs[9]] = true
		}
	}
	return sc.Err()
}

// InTree reports whether pid is root or one of its descendants (following PPid links).
func InTree(procRoot string, pid, root int) bool {
	for range 64 { // bounded: a corrupt or racing /proc must not loop forever
		if pid == root {
			return true
		}
		if pid <= 1 {
			return false
		}
		pp, ok := parentPID(procRoot, pid)
		if !ok {
			return false
		}
		pid = pp
	}
	return false
}

func parentPID(procRoot string, pid int) (int, bool) {
	st, err := proc.Read(procRoot, pid)
	return st.PPID, err == nil
}

func procComm(procRoot string, pid int) string {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "comm"))
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(b))
}
