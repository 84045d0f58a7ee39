package preload

import (
	"bytes"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/incident-replay/incident-replay/internal/proc"
)

// Group is one process group as a participant of the clock.
type Group struct {
	p    *Page
	pgid int

	mu     sync.Mutex
	procFd int
	loadFd int
	cursor int  // /proc/loadavg's newest pid when the caches below were brought up to date
	rescan bool // look for orphans on the next scan: a member exited
	full   bool // read all of /proc on the next scan: a registered thread no list named
	// probed is the newest pid when every process then in /proc was last accounted for;
	// missing, the pids of that look that /proc did not show (gone, or still being forked);
	// procs, how many processes the last read of /proc found.
	probed  int
	missing []int
	procs   int
	// noChildren: the kernel keeps no /proc/PID/task/TID/children, so every scan reads /proc
	noChildren bool
	gen        uint32
	members    map[int]*member
	others     map[int]uint32   // pids seen outside the group, with the scan that saw them
	outside    map[int]struct{} // registered threads seen outside the group
	tids       map[int]*task
	kids       []int
	hot        *task // the thread refresh last found able to run: Idle looks at it first
	buf        []byte
	dirbuf     []byte
	reclaim    time.Time
}

type member struct {
	pid    int
	taskFd int
	gen    uint32
	tasks  map[int]*task
	exited bool // its main thread is a zombie
}

// task is one thread, with its /proc files kept open: a pread renews them, and fails with
// ESRCH once the thread is gone, even if its id was reused.
type task struct {
	tid                             int
	statFd, schedFd, childFd, sysFd int // childFd and sysFd are -1 where the kernel refuses them
	gen                             uint32
	state                           byte
	runtime, runs                   uint64
	threads                         int // the process's thread count, from the thread's stat
}

const (
	unvirtualisedGrace = 100 * time.Millisecond
	reclaimEvery       = 100 * time.Millisecond
	userHz             = 100 // the unit of /proc/PID/stat's times on Linux
)

// Group returns the process group pgid as a clock participant. A Group is safe for
// concurrent use; it keeps a few /proc files open per thread until Close.
func (p *Page) Group(pgid int) *Group {
	return &Group{p: p, pgid: pgid, procFd: -1, loadFd: -1, members: map[int]*member{}, others: map[int]uint32{}, outside: map[int]struct{}{},
		tids: map[int]*task{}, buf: make([]byte, 1024), dirbuf: make([]byte, 32<<10)}
}

// Idle reports whether no process in the group can make progress until virtual time moves,
// and next, the earliest virtual deadline among the group's waiters (zero when none).
//
// Every thread of every live process in the group must be asleep (state S; zombies and
// stopped processes do not count), and every thread registered in a library wait must
// have a deadline after now. The threads are read twice, with the scan for new
// processes and the read of the slots in between; a thread that changed state or ran in
// between (its run time or run count moved) makes the answer false. So a true answer
// means that, at one instant between the two reads, the whole group was asleep.
func (g *Group) Idle() (idle bool, next time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p.mu.RLock()
	defer g.p.mu.RUnlock()
	if g.p.closed {
		return false, time.Time{}
	}
	// The driver asks again within milliseconds while a process runs (a curl starting up),
	// and the thread that ran last time most likely runs still: one read says so, where the
	// whole group's would take a few per thread.
	if t := g.hot; t != nil {
		if g.running(t) {
			return false, time.Time{}
		}
		g.hot = nil
	}
	if !g.refresh(true) {
		return false, time.Time{}
	}
	if g.scan() {
		return false, time.Time{} // a new member: read it on the next call
	}
	// A wait due by fire is ending; one due after fire, even at the instant shown, waits for
	// the page's Set (it is the next instant, which may be now).
	now := atomic.LoadInt64(g.p.i64(offFire))
	earliest := int64(deadlineNone)
	var foreign bool
	for i := range nSlots {
		off := slotAt(i)
		tid := int(atomic.LoadInt32(g.p.i32(off + slotTid)))
		if tid == 0 {
			continue
		}
		if g.tids[tid] == nil {
			if g.ours(tid) {
				g.full = true // a member no list named: read /proc again
				return false, time.Time{}
			}
			foreign = true
			continue
		}
		if atomic.LoadUint32(g.p.u32(off+slotState)) == 0 {
			continue
		}
		d := atomic.LoadInt64(g.p.i64(off + slotDeadline))
		if d <= now {
			return false, time.Time{} // due: it is about to run
		}
		earliest = min(earliest, d)
	}
	// A process's alarm lives in its process entry, not in a thread's slot: an exec kills the
	// thread that waits for it, and the new image re-arms it from the entry.
	for i := range nProcs {
		off := procAt(i)
		pid := int(atomic.LoadInt32(g.p.i32(off + procPid)))
		if pid == 0 || g.members[pid] == nil {
			continue
		}
		if d := atomic.LoadInt64(g.p.i64(off + procAlarm)); d != 0 {
			if d <= now {
				return false, time.Time{} // due: SIGALRM is on its way
			}
			earliest = min(earliest, d)
		}
	}
	if foreign && time.Since(g.reclaim) > reclaimEvery {
		g.reclaimSlots()
	}
	for _, m := range g.members {
		if !g.same(m) {
			return false, time.Time{}
		}
	}
	if earliest != deadlineNone {
		next = time.Unix(0, earliest)
	}
	return true, next
}

// refresh reads every member's threads, and lists a member's task directory when the
// threads it knows do not add up to the thread count their stats carry (see same). With
// stopAtBusy it stops at the first thread that is running, runnable or in disk sleep and
// returns false.
func (g *Group) refresh(stopAtBusy bool) bool {
	for pid, m := range g.members {
		for listed := false; ; listed = true {
			if listed && !g.listTasks(m) {
				g.drop(pid)
				break
			}
			live, counted := 0, -2
			for tid, t := range m.tasks {
				if !g.readTask(t) {
					g.closeTask(m, tid)
					continue
				}
				if tid == pid && t.state == 'Z' && !m.exited {
					m.exited, g.rescan = true, true
				}
				if stopAtBusy && !asleep(t.state) {
					g.hot = t
					return false
				}
				live, counted = count(t, live, counted)
			}
			if counted == live || listed {
				if len(m.tasks) == 0 {
					g.drop(pid)
				}
				break
			}
		}
	}
	return true
}

// count adds t, just read, to a tally of a member's threads: live counts those not exited,
// counted is the thread count their stats agree on (-2 before the first, -1 when they
// disagree: a thread started or ended between the reads).
func count(t *task, live, counted int) (int, int) {
	if t.state != 'Z' && t.state != 'X' {
		live++
	}
	switch {
	case counted == -2:
		counted = t.threads
	case counted != t.threads:
		counted = -1
	}
	return live, counted
}

// same re-reads m's threads and reports whether none appeared, went, woke or ran. A thread
// that went fails its read; one that appeared shows in the thread count each stat carries,
// which spares listing the task directory again (6 of an idle look's 26 syscalls). Where
// the count cannot say (a leader that exited before its threads is listed but not counted),
// the directory is listed again.
func (g *Group) same(m *member) bool {
	n := len(m.tasks)
	live, counted := 0, -2
	for _, t := range m.tasks {
		if !g.offCPU(t) {
			return false
		}
		state, runtime, runs := t.state, t.runtime, t.runs
		if !g.readTask(t) || t.state != state || t.runtime != runtime || t.runs != runs {
			return false
		}
		live, counted = count(t, live, counted)
	}
	if counted == live {
		return true
	}
	if !g.listTasks(m) || len(m.tasks) != n {
		return false
	}
	for _, t := range m.tasks {
		if t.gen != g.gen {
			return false // listed before, gone now
		}
	}
	return true
}

// offCPU reports whether t, read as asleep, has really left the CPU. A thread shows S as
// soon as it means to sleep, and goes on running until it is switched out: bash in wait4
// reaps a child, and forks the next, while /proc says S and its run time stays put (the
// kernel adds run time at the switch). Reading /proc/TID/syscall waits for the switch, and
// says "running" when the thread woke instead, so the run time read after it is current.
func (g *Group) offCPU(t *task) bool {
	if t.sysFd < 0 || t.state == 'Z' || t.state == 'X' {
		return true
	}
	n, err := syscall.Pread(t.sysFd, g.buf, 0)
	return err == nil && n > 0 && !bytes.HasPrefix(g.buf[:n], []byte("running"))
}

// running reports whether t, kept open, is still in the group and able to run; it changes
// nothing of what refresh read.
func (g *Group) running(t *task) bool {
	n, err := syscall.Pread(t.statFd, g.buf, 0)
	if err != nil || n <= 0 {
		return false
	}
	l := proc.Fields(g.buf[:n])
	return l.Int(5) == g.pgid && !asleep(l.State())
}

func asleep(state byte) bool {
	switch state {
	case 'S', 'Z', 'T', 't', 'X':
		return true
	}
	return false
}

// listTasks reads /proc/PID/task, opening newly seen threads and closing gone ones.
func (g *Group) listTasks(m *member) bool {
	if _, err := syscall.Seek(m.taskFd, 0, 0); err != nil {
		return false
	}
	g.gen++
	ok := g.readDir(m.taskFd, func(tid int) {
		t := m.tasks[tid]
		if t == nil {
			t = g.openTask(m.pid, tid)
			if t == nil {
				return
			}
			m.tasks[tid] = t
			g.tids[tid] = t
		}
		t.gen = g.gen
	})
	if !ok {
		return false
	}
	for tid, t := range m.tasks {
		if t.gen != g.gen {
			g.closeTask(m, tid)
		}
	}
	return true
}

func (g *Group) openTask(pid, tid int) *task {
	dir := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(tid)
	sfd, err := syscall.Open(dir+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	cfd, err := syscall.Open(dir+"/schedstat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		syscall.Close(sfd)
		return nil
	}
	kfd, err := syscall.Open(dir+"/children", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		kfd = -1
		g.noChildren = g.noChildren || err == syscall.ENOENT
	}
	// syscall needs ptrace rights over the thread (a tool is the harness's descendant)
	yfd, err := syscall.Open(dir+"/syscall", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		yfd = -1
	}
	return &task{tid: tid, statFd: sfd, schedFd: cfd, childFd: kfd, sysFd: yfd, state: 'R'}
}

// readTask renews t's state, run time and run count; false when the thread is gone or
// has left the group.
func (g *Group) readTask(t *task) bool {
	n, err := syscall.Pread(t.statFd, g.buf, 0)
	if err != nil || n <= 0 {
		return false
	}
	l := proc.Fields(g.buf[:n])
	if l.Int(5) != g.pgid {
		return false
	}
	t.state, t.threads = l.State(), l.Int(20)
	n, err = syscall.Pread(t.schedFd, g.buf, 0)
	if err != nil || n <= 0 {
		return false
	}
	var nums [3]uint64
	i := 0
	for _, c := range g.buf[:n] {
		if c >= '0' && c <= '9' {
			nums[i] = nums[i]*10 + uint64(c-'0')
		} else if c == ' ' && i < 2 {
			i++
		}
	}
	t.runtime, t.runs = nums[0], nums[2]
	return true
}

// scan finds processes that joined the group and forgets processes that are gone; it
// reports whether it found a new member. A fork keeps the parent's group, and the child is
// in its parent thread's children list from the moment it exists, so the members' lists
// name every new process. A process whose parent leaves is reparented out of those lists,
// so once a member has exited the processes started since the last look are looked at one
// by one (and all of /proc is read where that is dearer, or where the kernel keeps no
// children lists).
func (g *Group) scan() (found bool) {
	if g.procFd < 0 {
		fd, err := syscall.Open("/proc", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return false
		}
		g.procFd = fd
		if g.loadFd, err = syscall.Open("/proc/loadavg", syscall.O_RDONLY|syscall.O_CLOEXEC, 0); err != nil {
			g.loadFd = -1
		}
		g.full = true
	}
	last := g.newestPid()
	if last != g.cursor || last <= 0 {
		g.forgetReused(g.cursor, last)
		g.cursor = last
	}
	switch {
	case g.full || g.noChildren:
		found = g.scanProc(last)
	case g.rescan:
		found = g.probe(last)
	}
	return g.scanChildren() || found
}

// probe looks for the group's processes among those started since the last look (pids
// after probed up to last, the newest), and among the pids that look could not find yet:
// a fork holds its pid a moment before /proc shows the child, and the parent, which does
// not sleep meanwhile, can exit right after it. A missing pid costs about what reading
// eight processes' entries of /proc does, so a longer range reads /proc instead.
func (g *Group) probe(last int) (found bool) {
	if g.probed <= 0 || last < g.probed || (last-g.probed+len(g.missing))*8 > max(g.procs, 64) {
		return g.scanProc(last) // also where pids wrapped around, or the newest is unknown
	}
	missing := g.missing
	g.missing = nil
	look := func(pid int, again bool) {
		if g.members[pid] != nil {
			return
		}
		if _, ok := g.others[pid]; ok {
			return
		}
		switch pgrp := g.pgrpOf(pid); {
		case pgrp == g.pgid && g.leads(pid):
			found = g.add(pid) || found
		case pgrp < 0:
			if !again { // missing at two looks: taken for gone
				g.missing = append(g.missing, pid)
			}
		default:
			g.others[pid] = g.gen
		}
	}
	for _, pid := range missing {
		look(pid, true)
	}
	for pid := g.probed + 1; pid <= last; pid++ {
		look(pid, false)
	}
	g.probed, g.rescan = last, false
	if len(g.others) > maxOthers {
		clear(g.others) // a cache: a pid dropped from it is read again if it shows up
	}
	return found
}

// leads reports whether pid is a process and not another thread of one: /proc/TID is
// there for every thread, though /proc lists only processes.
func (g *Group) leads(pid int) bool {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/status", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, g.buf)
	if err != nil || n <= 0 {
		return false
	}
	return proc.Atoi(proc.StatusValue(g.buf[:n], "Tgid")) == pid
}

// maxOthers bounds the pids remembered as outside the group between reads of /proc.
const maxOthers = 4096

// scanProc reads /proc for the group's processes; last is the newest pid read before it.
func (g *Group) scanProc(last int) (found bool) {
	if _, err := syscall.Seek(g.procFd, 0, 0); err != nil {
		return false
	}
	g.gen++
	gen := g.gen
	procs := 0
	g.readDir(g.procFd, func(pid int) {
		procs++
		if m := g.members[pid]; m != nil {
			m.gen = gen
			return
		}
		if _, ok := g.others[pid]; ok {
			g.others[pid] = gen
			return
		}
		if g.join(pid) {
			g.members[pid].gen = gen
			found = true
		}
	})
	for pid, m := range g.members {
		if m.gen != gen {
			g.drop(pid)
		}
	}
	for pid, seen := range g.others {
		if seen != gen {
			delete(g.others, pid)
		}
	}
	g.procs, g.probed, g.missing = procs, last, g.missing[:0]
	g.rescan, g.full = false, false
	return found
}

// scanChildren adds the members' children that are in the group.
func (g *Group) scanChildren() (found bool) {
	g.kids = g.kids[:0]
	for _, m := range g.members {
		for _, t := range m.tasks {
			if t.childFd >= 0 {
				g.kids = g.readChildren(t.childFd, g.kids)
			}
		}
	}
	for _, pid := range g.kids {
		if g.members[pid] != nil {
			continue
		}
		if _, ok := g.others[pid]; ok {
			continue
		}
		if g.join(pid) {
			found = true
		}
	}
	return found
}

// readChildren appends the pids of a children list to kids.
func (g *Group) readChildren(fd int, kids []int) []int {
	id, in := 0, false
	for off := int64(0); ; {
		n, err := syscall.Pread(fd, g.buf, off)
		if err != nil || n <= 0 {
			break
		}
		off += int64(n)
		for _, c := range g.buf[:n] {
			if c >= '0' && c <= '9' {
				id, in = id*10+int(c-'0'), true
			} else if in {
				kids, id, in = append(kids, id), 0, false
			}
		}
	}
	if in {
		kids = append(kids, id)
	}
	return kids
}

// join makes pid a member when it is in the group, and remembers it as outside otherwise.
func (g *Group) join(pid int) bool {
	if g.pgrpOf(pid) != g.pgid {
		g.others[pid] = g.gen
		return false
	}
	return g.add(pid)
}

// add makes pid, in the group, a member.
func (g *Group) add(pid int) bool {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/task", syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	g.members[pid] = &member{pid: pid, taskFd: fd, gen: g.gen, tasks: map[int]*task{}}
	return true
}

// forgetReused drops what the caches say of the ids handed out since the newest pid was
// from (pids are allocated cyclically, so those are the ids after from up to to, with
// wrap-around): each may now be a new process, in the group or not.
func (g *Group) forgetReused(from, to int) {
	reused := func(id int) bool {
		switch {
		case from <= 0 || to <= 0:
			return true
		case from < to:
			return id > from && id <= to
		default:
			return id > from || id <= to
		}
	}
	for id := range g.others {
		if reused(id) {
			delete(g.others, id)
		}
	}
	for id := range g.outside {
		if reused(id) {
			delete(g.outside, id)
		}
	}
}

// newestPid is the last field of /proc/loadavg; 0 when unknown.
func (g *Group) newestPid() int {
	if g.loadFd < 0 {
		return 0
	}
	n, err := syscall.Pread(g.loadFd, g.buf, 0)
	if err != nil || n <= 0 {
		return 0
	}
	b := bytes.TrimRight(g.buf[:n], "\n")
	return max(proc.Atoi(b[bytes.LastIndexByte(b, ' ')+1:]), 0)
}

// ours reports whether thread tid, registered in the page but unknown to the group, is in
// the group; threads found elsewhere are remembered until their id is handed out again.
func (g *Group) ours(tid int) bool {
	if _, ok := g.outside[tid]; ok {
		return false
	}
	if g.pgrpOf(tid) == g.pgid {
		return true
	}
	g.outside[tid] = struct{}{}
	return false
}

func (g *Group) pgrpOf(pid int) int {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, g.buf)
	if err != nil || n <= 0 {
		return -1
	}
	return proc.Fields(g.buf[:n]).Int(5)
}

// readDir calls fn for every numeric entry of the directory open at fd.
func (g *Group) readDir(fd int, fn func(int)) bool {
	for {
		n, err := syscall.Getdents(fd, g.dirbuf)
		if err != nil {
			return false
		}
		if n <= 0 {
			return true
		}
		for b := g.dirbuf[:n]; len(b) >= 19; {
			reclen := int(b[16]) | int(b[17])<<8
			if reclen < 19 || reclen > len(b) {
				break
			}
			name := b[19:reclen]
			if z := bytes.IndexByte(name, 0); z >= 0 {
				name = name[:z]
			}
			if id := proc.Atoi(name); id > 0 {
				fn(id)
			}
			b = b[reclen:]
		}
	}
}

func (g *Group) drop(pid int) {
	m := g.members[pid]
	if m == nil {
		return
	}
	for tid := range m.tasks {
		g.closeTask(m, tid)
	}
	syscall.Close(m.taskFd)
	delete(g.members, pid)
	g.rescan = true
}

func (g *Group) closeTask(m *member, tid int) {
	t := m.tasks[tid]
	syscall.Close(t.statFd)
	syscall.Close(t.schedFd)
	for _, fd := range []int{t.childFd, t.sysFd} {
		if fd >= 0 {
			syscall.Close(fd)
		}
	}
	delete(m.tasks, tid)
	if g.hot == t {
		g.hot = nil
	}
	if g.tids[tid] == t {
		delete(g.tids, tid)
	}
}

// reclaimSlots frees slots and process entries whose thread or process is gone (killed
// in a wait, or replaced by exec).
func (g *Group) reclaimSlots() {
	g.reclaim = time.Now()
	for i := range nSlots {
		off := slotAt(i)
		tid := atomic.LoadInt32(g.p.i32(off + slotTid))
		if tid != 0 && g.tids[int(tid)] == nil && !alive(int(tid)) {
			atomic.StoreUint32(g.p.u32(off+slotState), 0)
			atomic.CompareAndSwapInt32(g.p.i32(off+slotTid), tid, 0)
		}
	}
	for i := range nProcs {
		off := procAt(i)
		pid := atomic.LoadInt32(g.p.i32(off + procPid))
		if pid != 0 && g.members[int(pid)] == nil && !alive(int(pid)) {
			atomic.CompareAndSwapInt32(g.p.i32(off+procPid), pid, 0)
		}
	}
}

// Unvirtualised returns the live pids in the group that do not see virtual time, sorted:
// processes past a short grace after they started that never registered in the page
// (static binaries, a stripped environment, setuid programs), that exec'd into an image
// that did not register, or that registered as a Go binary (which reads time through the
// vDSO).
func (g *Group) Unvirtualised() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.p.mu.RLock()
	defer g.p.mu.RUnlock()
	if g.p.closed {
		return nil
	}
	g.scan()
	g.refresh(false)
	type entry struct {
		flags    uint32
		dev, ino uint64
	}
	reg := map[int]entry{}
	for i := range nProcs {
		off := procAt(i)
		if pid := int(atomic.LoadInt32(g.p.i32(off + procPid))); pid != 0 && g.members[pid] != nil {
			reg[pid] = entry{atomic.LoadUint32(g.p.u32(off + procFlags)), *g.p.u64(off + procDev), *g.p.u64(off + procIno)}
		}
	}
	boot := clockNs(clockBoottime)
	var out []int
	for pid := range g.members {
		start, state := g.startOf(pid)
		if start < 0 || state == 'Z' || state == 'X' || time.Duration(boot-start) < unvirtualisedGrace {
			continue
		}
		e, ok := reg[pid]
		if ok && e.flags&flagBypass == 0 {
			var st syscall.Stat_t
			if syscall.Stat("/proc/"+strconv.Itoa(pid)+"/exe", &st) != nil || (st.Dev == e.dev && st.Ino == e.ino) {
				continue
			}
		}
		out = append(out, pid)
	}
	slices.Sort(out)
	return out
}

// startOf returns a process's start (CLOCK_BOOTTIME ns) and state; -1 when it is gone.
func (g *Group) startOf(pid int) (int64, byte) {
	fd, err := syscall.Open("/proc/"+strconv.Itoa(pid)+"/stat", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0
	}
	defer syscall.Close(fd)
	n, err := syscall.Read(fd, g.buf)
	if err != nil || n <= 0 {
		return -1, 0
	}
	l := proc.Fields(g.buf[:n])
	start := l.Int(22)
	if start < 0 {
		return -1, 0
	}
	return int64(start) * (int64(time.Second) / userHz), l.State()
}

// Members returns the pids of the group's processes as the last Idle or Unvirtualised call
// found them, sorted.
func (g *Group) Members() []int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]int, 0, len(g.members))
	for pid, m := range g.members {
		if !m.exited {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// Close releases the /proc files the group keeps open.
func (g *Group) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for pid := range g.members {
		g.drop(pid)
	}
	if g.procFd >= 0 {
		syscall.Close(g.procFd)
		g.procFd = -1
	}
	if g.loadFd >= 0 {
		syscall.Close(g.loadFd)
		g.loadFd = -1
	}
}
