// Package preload puts unmodified dynamically linked processes on a virtual clock: an
// LD_PRELOAD library (the embedded C sources, built by Library) serves their time reads,
// sleeps, timed waits and signal timers from a shared page that a Page owns, and a Group
// tells the clock's driver when a process group cannot make progress until virtual time
// moves. A driver loops:
//
//	if idle, next := g.Idle(); idle && !next.IsZero() {
//		p.Set(next)
//	}
//
// The library covers clock_gettime (wall, monotonic and boot clocks), gettimeofday, time,
// timespec_get; nanosleep, clock_nanosleep, usleep, sleep; the timeouts of poll, ppoll,
// select, pselect, epoll_wait, epoll_pwait, epoll_pwait2, pthread_cond_timedwait,
// pthread_cond_clockwait, sem_timedwait, sem_clockwait, sigtimedwait; alarm, setitimer
// and getitimer (ITIMER_REAL), timer_create and the other timer_* calls. A connect or a
// send (send, sendto, sendmsg, write, writev) to a loopback TCP peer holds the clock until
// the peer's kernel has the handshake and the bytes. It does not cover
// timerfd, socket timeouts (SO_RCVTIMEO, SO_SNDTIMEO), pthread_mutex_timedlock,
// futex, clock_gettime or sleeps made as raw system calls, nor processes that do not
// load it (static binaries, setuid programs, a cleared environment) or that bypass libc
// for time (Go binaries): Group.Unvirtualised names those.
package preload

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/incident-replay/incident-replay/vtime"
)

// The page's layout; vtime.h declares the same.
const (
	offMagic    = 0
	offVersion  = 8
	offState    = 12
	offOwner    = 16
	offSeq      = 20
	offNow      = 24
	offMonoOff  = 32
	offNProcs   = 40
	offNSlots   = 44
	offProcsOff = 48
	offSlotsOff = 52
	offFire     = 56

	pageVersion = 2
	nProcs      = 1024
	procSize    = 64
	procsOff    = 4096
	nSlots      = 1024
	slotSize    = 16
	slotsOff    = procsOff + nProcs*procSize
	pageSize    = slotsOff + nSlots*slotSize

	// In a process entry.
	procPid   = 0
	procFlags = 4
	procDev   = 8
	procIno   = 16
	procAlarm = 24 // ITIMER_REAL's due instant, kept across exec: virtual Unix ns, 0 = off

	// In a slot.
	slotTid      = 0
	slotState    = 4
	slotDeadline = 8

	deadlineNone = math.MaxInt64
	flagBypass   = 1 // a Go binary: it reads time through the vDSO, not libc

	futexWake      = 1
	clockMonotonic = 1
	clockBoottime  = 7
)

// Page is one run's virtual clock: a file, mapped shared by its owner and by every process
// that loaded the library with VTIME_PAGE naming it.
type Page struct {
	path   string
	f      *os.File     // holds an exclusive flock while the page is open: the library's sign of a live owner
	mu     sync.RWMutex // Close takes it exclusively; every other use of mem shares it
	mem    []byte
	closed bool
}

// NewPage creates the page file in dir ("" means /dev/shm) with virtual now = start. The
// virtual monotonic clock starts at the real monotonic clock's current reading.
func NewPage(dir string, start time.Time) (*Page, error) {
	if dir == "" {
		dir = "/dev/shm"
	}
	f, err := os.CreateTemp(dir, "vtime-*.page")
	if err != nil {
		return nil, fmt.Errorf("vtime/preload: create the clock page: %w (pass a writable directory to NewPage)", err)
	}
	fail := func(err error) (*Page, error) {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("vtime/preload: set up the clock page %s: %w", f.Name(), err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fail(err)
	}
	if err := f.Truncate(pageSize); err != nil {
		return fail(err)
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, pageSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return fail(err)
	}
	p := &Page{path: f.Name(), f: f, mem: mem}
	*p.u32(offVersion) = pageVersion
	*p.i32(offOwner) = int32(os.Getpid())
	*p.i64(offNow) = start.UnixNano()
	*p.i64(offFire) = start.UnixNano()
	*p.i64(offMonoOff) = int64(vtime.Uptime) - start.UnixNano()
	*p.u32(offNProcs) = nProcs
	*p.u32(offNSlots) = nSlots
	*p.u32(offProcsOff) = procsOff
	*p.u32(offSlotsOff) = slotsOff
	copy(mem[offMagic:], "VTIMEPG1")
	return p, nil
}

// Path is the page file's path.
func (p *Page) Path() string { return p.path }

// Env is what a process needs to run on this page: LD_PRELOAD with lib first (before the
// current process's LD_PRELOAD, if any) and VTIME_PAGE. Append it to the command's
// environment; later entries win.
func (p *Page) Env(lib string) []string {
	pre := lib
	if old := os.Getenv("LD_PRELOAD"); old != "" {
		pre += ":" + old
	}
	return []string{"LD_PRELOAD=" + pre, "VTIME_PAGE=" + p.path}
}

// Now is the virtual wall time.
func (p *Page) Now() time.Time {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return time.Time{}
	}
	return time.Unix(0, atomic.LoadInt64(p.i64(offNow)))
}

// Show makes now the virtual wall time that time reads return (virtual monotonic moves by
// the same amount) without ending any wait: a process woken at that instant by something
// else (the server's answer) reads the instant it was woken at. Virtual time never goes
// back: a now before Now is ignored.
func (p *Page) Show(now time.Time) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed || now.UnixNano() <= atomic.LoadInt64(p.i64(offNow)) {
		return
	}
	atomic.StoreInt64(p.i64(offNow), now.UnixNano())
}

// Set shows now (see Show) and ends every wait due by then, waking the waiters.
func (p *Page) Set(now time.Time) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	ns := now.UnixNano()
	if p.closed || ns <= atomic.LoadInt64(p.i64(offFire)) {
		return
	}
	if ns > atomic.LoadInt64(p.i64(offNow)) {
		atomic.StoreInt64(p.i64(offNow), ns)
	}
	atomic.StoreInt64(p.i64(offFire), ns)
	p.wake()
}

func (p *Page) wake() {
	seq := p.u32(offSeq)
	atomic.AddUint32(seq, 1)
	syscall.Syscall6(syscall.SYS_FUTEX, uintptr(unsafe.Pointer(seq)), futexWake, math.MaxInt32, 0, 0, 0)
}

// Close marks the page closed (processes still on it keep running, their clocks now free
// at the real rate from the last virtual time), unmaps it and removes the file. It is
// idempotent.
func (p *Page) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	p.closed = true
	atomic.StoreUint32(p.u32(offState), 1)
	p.wake()
	err := errors.Join(syscall.Munmap(p.mem), p.f.Close())
	p.mem = nil
	if rerr := os.Remove(p.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("vtime/preload: close the clock page %s: %w", filepath.Base(p.path), err)
	}
	return nil
}

func (p *Page) i64(off int) *int64  { return (*int64)(unsafe.Pointer(&p.mem[off])) }
func (p *Page) i32(off int) *int32  { return (*int32)(unsafe.Pointer(&p.mem[off])) }
func (p *Page) u32(off int) *uint32 { return (*uint32)(unsafe.Pointer(&p.mem[off])) }
func (p *Page) u64(off int) *uint64 { return (*uint64)(unsafe.Pointer(&p.mem[off])) }
func slotAt(i int) int              { return slotsOff + i*slotSize }
func procAt(i int) int              { return procsOff + i*procSize }

// clockNs reads a real clock (CLOCK_MONOTONIC, CLOCK_BOOTTIME), which package time does not
// expose as a number.
func clockNs(clock int) int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, uintptr(clock), uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}
