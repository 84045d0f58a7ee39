package harness

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/incident-replay/incident-replay/internal/proc"
	"github.com/incident-replay/incident-replay/replay"
	"github.com/incident-replay/incident-replay/vtime"
	"github.com/incident-replay/incident-replay/vtime/preload"
)

// virtualShell puts a shell tool's processes on a run's virtual clock: the LD_PRELOAD library
// serves their time from a page that follows the clock, and their process group is a
// participant the clock waits for.
type virtualShell struct {
	clock *vtime.Clock
	page  *preload.Page
	lib   string
}

// newVirtualShell returns nil when clock is not virtual.
func newVirtualShell(ctx context.Context, clock replay.Clock) (*virtualShell, error) {
	vc, ok := clock.(*vtime.Clock)
	if !ok {
		return nil, nil
	}
	lib, err := preload.Library(ctx)
	if err != nil {
		return nil, fmt.Errorf("shell tools on virtual time: %w", err)
	}
	page, err := preload.NewPage("", vc.Now())
	if err != nil {
		return nil, fmt.Errorf("shell tools on virtual time: %w", err)
	}
	vc.OnShow(page.Show)
	vc.OnAdvance(page.Set)
	return &virtualShell{clock: vc, page: page, lib: lib}, nil
}

func (v *virtualShell) env() []string { return v.page.Env(v.lib) }

// attach makes process group pgid (led by pgid) a participant until detach. The clock also
// waits while the tool's output pipe holds unread bytes and while the leader has exited but
// the harness has not yet recorded when (done). untraced is closed once a Go or static
// binary lives in the group: the library cannot reach it, so the run is not on virtual time,
// and the clock stands still from then on.
func (v *virtualShell) attach(pgid int, out *os.File, release []string) (detach func(), done func(), untraced <-chan struct{}) {
	p := &shellParticipant{g: v.page.Group(pgid), leader: pgid, out: out, exes: map[int]string{}, untraced: make(chan struct{}), release: release}
	d := v.clock.Attach(p)
	return func() { d(); p.g.Close() }, func() { p.recorded.Store(true) }, p.untraced
}

func (v *virtualShell) close() { _ = v.page.Close() }

type shellParticipant struct {
	g        *preload.Group
	leader   int
	out      *os.File
	recorded atomic.Bool

	mu       sync.Mutex
	exes     map[int]string // each member's executable when last looked at
	untraced chan struct{}
	found    bool
	release  []string // executables that keep their own time: never a bypass
}

// Idle implements vtime.Participant. The group is read before its output pipe: a line it
// writes after its read is in the pipe by then.
func (p *shellParticipant) Idle() (bool, time.Time) {
	idle, next := p.g.Idle()
	if !idle || vtime.Unread(p.out) > 0 {
		return false, time.Time{}
	}
	// An idle answer has just read every member: the live ones are Members.
	members := p.g.Members()
	if !p.recorded.Load() && !slices.Contains(members, p.leader) {
		return false, time.Time{} // its exit is work the harness has not seen yet
	}
	if p.bypassing(members) {
		return false, time.Time{}
	}
	return true, next
}

// Stage implements vtime.Staged: the group's processes hand requests, output and launched
// servers to the clock's other participants.
func (p *shellParticipant) Stage() int { return vtime.StageProcesses }

// bypassing reports whether a member is a Go or static binary, which sleeps in real time
// while the group looks idle; the first time, it closes untraced.
func (p *shellParticipant) bypassing(members []int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.found {
		return true
	}
	for _, pid := range members {
		exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
		if err != nil || p.exes[pid] == exe {
			continue
		}
		p.exes[pid] = exe
		if classifyCached(exe).Bypasses() && !slices.Contains(p.release, exe) {
			p.found = true
			close(p.untraced)
			return true
		}
	}
	return false
}

var (
	kindsMu sync.Mutex
	kinds   = map[string]ExecKind{}
)

// classifyCached classifies an executable once per path, size and modification time.
func classifyCached(exe string) ExecKind {
	st, err := os.Stat(exe)
	if err != nil {
		return ExecScript
	}
	key := exe + "\x00" + strconv.FormatInt(st.Size(), 10) + "\x00" + strconv.FormatInt(st.ModTime().UnixNano(), 10)
	kindsMu.Lock()
	defer kindsMu.Unlock()
	k, ok := kinds[key]
	if !ok {
		k = classify(exe)
		kinds[key] = k
	}
	return k
}

// alive reports whether pid runs (not a zombie, not gone).
func alive(pid int) bool {
	st, err := proc.Read("", pid)
	return err == nil && st.Alive()
}
