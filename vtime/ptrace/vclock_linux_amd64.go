//go:build linux && amd64

package ptrace

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Time reads without stops. A Go program reads the clock dozens of times per wake-up (its
// scheduler and timers call nanotime), and each read trapped by the filter is a ptrace
// round trip. So at each exec the tracer overwrites the tracee's vDSO clock_gettime with
// vclockCode, which answers clock_gettime, gettimeofday and time from a few data words in
// the same block, and points gettimeofday and time there. The tracer rewrites the words
// through /proc/PID/mem whenever the virtual time it shows moves (publish). The vDSO is
// the kernel's, mapped private: the writes stay in the tracee's copy. A program whose vDSO
// is not the one this tracer knows has it hidden instead (hideVDSO), and its reads stop.

// vclockCode is testdata/vclock.s assembled (as, then objcopy -O binary -j .text); the test
// TestVClockCodeMatchesSource checks it against the source.
var vclockCode = [...]byte{
	0x48, 0x85, 0xf6, 0x74, 0x7a, 0x83, 0xff, 0x0b, 0x74, 0x22, 0x83, 0xff, 0x09, 0x77, 0x70, 0xb8,
	0x21, 0x01, 0x00, 0x00, 0x0f, 0xa3, 0xf8, 0x72, 0x1c, 0xb8, 0xd2, 0x02, 0x00, 0x00, 0x0f, 0xa3,
	0xf8, 0x73, 0x5c, 0x4c, 0x8b, 0x0d, 0x26, 0x01, 0x00, 0x00, 0xeb, 0x0c, 0x4c, 0x8b, 0x0d, 0x25,
	0x01, 0x00, 0x00, 0xeb, 0x03, 0x45, 0x31, 0xc9, 0x41, 0xb8, 0xa0, 0x86, 0x01, 0x00, 0x41, 0xff,
	0xc8, 0x74, 0x3c, 0x44, 0x0f, 0xb6, 0x15, 0xf5, 0x00, 0x00, 0x00, 0x41, 0xf7, 0xc2, 0x01, 0x00,
	0x00, 0x00, 0x75, 0xea, 0x48, 0x8b, 0x05, 0xed, 0x00, 0x00, 0x00, 0x44, 0x0f, 0xb6, 0x1d, 0xdd,
	0x00, 0x00, 0x00, 0x45, 0x39, 0xda, 0x75, 0xd6, 0x4c, 0x01, 0xc8, 0x31, 0xd2, 0xb9, 0x00, 0xca,
	0x9a, 0x3b, 0x48, 0xf7, 0xf1, 0x48, 0x89, 0x06, 0x48, 0x89, 0x56, 0x08, 0x31, 0xc0, 0xc3, 0xb8,
	0xe4, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3, 0x48, 0x85, 0xf6, 0x75, 0x56, 0x48, 0x85, 0xff, 0x74,
	0x4e, 0x41, 0xb8, 0xa0, 0x86, 0x01, 0x00, 0x41, 0xff, 0xc8, 0x74, 0x46, 0x44, 0x0f, 0xb6, 0x15,
	0x9c, 0x00, 0x00, 0x00, 0x41, 0xf7, 0xc2, 0x01, 0x00, 0x00, 0x00, 0x75, 0xea, 0x48, 0x8b, 0x05,
	0x94, 0x00, 0x00, 0x00, 0x44, 0x0f, 0xb6, 0x1d, 0x84, 0x00, 0x00, 0x00, 0x45, 0x39, 0xda, 0x75,
	0xd6, 0x31, 0xd2, 0xb9, 0x00, 0xca, 0x9a, 0x3b, 0x48, 0xf7, 0xf1, 0x48, 0x89, 0x07, 0x48, 0x89,
	0xd0, 0x31, 0xd2, 0xb9, 0xe8, 0x03, 0x00, 0x00, 0x48, 0xf7, 0xf1, 0x48, 0x89, 0x47, 0x08, 0x31,
	0xc0, 0xc3, 0xb8, 0x60, 0x00, 0x00, 0x00, 0x0f, 0x05, 0xc3, 0x41, 0xb8, 0xa0, 0x86, 0x01, 0x00,
	0x41, 0xff, 0xc8, 0x74, 0x38, 0x44, 0x0f, 0xb6, 0x15, 0x43, 0x00, 0x00, 0x00, 0x41, 0xf7, 0xc2,
	0x01, 0x00, 0x00, 0x00, 0x75, 0xea, 0x48, 0x8b, 0x05, 0x3b, 0x00, 0x00, 0x00, 0x44, 0x0f, 0xb6,
	0x1d, 0x2b, 0x00, 0x00, 0x00, 0x45, 0x39, 0xda, 0x75, 0xd6, 0x31, 0xd2, 0xb9, 0x00, 0xca, 0x9a,
	0x3b, 0x48, 0xf7, 0xf1, 0x48, 0x85, 0xff, 0x74, 0x03, 0x48, 0x89, 0x07, 0xc3, 0xb8, 0xc9, 0x00,
	0x00, 0x00, 0x0f, 0x05, 0xc3, 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x0f, 0x1f, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
}

// Offsets in vclockCode of its entries and data words (the labels of testdata/vclock.s).
const (
	vcGettimeofday = 0x87
	vcTime         = 0xea
	vcGen          = 0x140 // one byte
	vcPub          = 0x148
	vcMono         = 0x150
	vcTai          = 0x158
)

// vdsoImage is this process's vDSO. The kernel maps one image into every 64-bit process, so
// its symbols' offsets are a tracee's too; patch checks the tracee's bytes against it.
type vdsoImage struct {
	image                         []byte
	clockGettime, gtod, time, end uint64 // offsets of the entries; end: clock_gettime's end
}

var ownVDSO = sync.OnceValues(readOwnVDSO)

// hideClock makes every exec hide the vDSO instead: the benchmarks' baseline.
var hideClock bool

func readOwnVDSO() (*vdsoImage, error) {
	base, err := auxvValue("self", atSysinfoEhdr)
	if err != nil || base == 0 {
		return nil, fmt.Errorf("no vDSO: %v", err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	var size uint64
	for _, l := range strings.Split(string(maps), "\n") {
		if !strings.HasSuffix(l, "[vdso]") {
			continue
		}
		lo, hi, _ := strings.Cut(strings.Fields(l)[0], "-")
		a, _ := strconv.ParseUint(lo, 16, 64)
		b, _ := strconv.ParseUint(hi, 16, 64)
		if a == base {
			size = b - a
		}
	}
	if size == 0 {
		return nil, errors.New("the vDSO is not in /proc/self/maps")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		return nil, err
	}
	defer mem.Close()
	v := &vdsoImage{image: make([]byte, size)}
	if _, err := mem.ReadAt(v.image, int64(base)); err != nil {
		return nil, err
	}
	f, err := elf.NewFile(bytes.NewReader(v.image))
	if err != nil {
		return nil, err
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, err
	}
	for _, s := range syms {
		switch s.Name {
		case "__vdso_clock_gettime":
			v.clockGettime, v.end = s.Value, s.Value+s.Size
		case "__vdso_gettimeofday":
			v.gtod = s.Value
		case "__vdso_time":
			v.time = s.Value
		}
	}
	switch {
	case v.clockGettime == 0 || v.gtod == 0 || v.time == 0:
		return nil, errors.New("the vDSO lacks a clock entry")
	case v.end-v.clockGettime < uint64(len(vclockCode)), v.clockGettime%16 != 0, v.end > size:
		return nil, fmt.Errorf("the vDSO's clock_gettime (%d bytes at %#x) cannot hold the virtual clock", v.end-v.clockGettime, v.clockGettime)
	}
	return v, nil
}

// vclock is a process whose vDSO reads the virtual time: mem is its /proc/PID/mem, gen the
// address of its data block's generation byte.
type vclock struct {
	mem  *os.File
	gen  uintptr
	g    byte  // the generation last written
	last int64 // the time last written
}

// patchVDSO gives the process that has just exec'd (stopped at its exec) the virtual clock
// block, or hides its vDSO where it cannot; t.mu is held.
func (t *Tracee) patchVDSO(pid int) error {
	if c := t.clocks[pid]; c != nil { // its image before the exec
		c.mem.Close()
		delete(t.clocks, pid)
	}
	if err := t.installVClock(pid); err != nil {
		return hideVDSO(pid)
	}
	return nil
}

func (t *Tracee) installVClock(pid int) error {
	if t.closed || hideClock {
		return errors.New("closed, or the clock block is off")
	}
	own, err := ownVDSO()
	if err != nil {
		return err
	}
	base, err := auxvValue(strconv.Itoa(pid), atSysinfoEhdr)
	if err != nil || base == 0 {
		return errors.New("no vDSO")
	}
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(pid)+"/mem", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	theirs := make([]byte, len(own.image))
	if _, err := mem.ReadAt(theirs, int64(base)); err != nil || !bytes.Equal(theirs, own.image) {
		mem.Close()
		return errors.New("the tracee's vDSO is not this kernel's 64-bit image")
	}
	block := vclockCode
	binary.LittleEndian.PutUint64(block[vcPub:], uint64(t.pub))
	binary.LittleEndian.PutUint64(block[vcMono:], uint64(t.monoOff))
	binary.LittleEndian.PutUint64(block[vcTai:], uint64(t.taiOff))
	at := base + own.clockGettime
	err = writeAt(mem, block[:], at)
	if err == nil {
		err = writeAt(mem, jmp(base+own.gtod, at+vcGettimeofday), base+own.gtod)
	}
	if err == nil {
		err = writeAt(mem, jmp(base+own.time, at+vcTime), base+own.time)
	}
	if err != nil {
		mem.Close()
		return err
	}
	t.clocks[pid] = &vclock{mem: mem, gen: uintptr(at + vcGen), last: t.pub}
	return nil
}

// jmp is a jmp rel32 at from to to.
func jmp(from, to uint64) []byte {
	b := []byte{0xe9, 0, 0, 0, 0}
	binary.LittleEndian.PutUint32(b[1:], uint32(int32(int64(to)-int64(from+5))))
	return b
}

func writeAt(f *os.File, b []byte, addr uint64) error {
	_, err := f.WriteAt(b, int64(addr))
	return err
}

// forked registers a new process made by a patched one: it has a copy of its creator's
// memory, vDSO block included, taken at an instant the tracer may have been writing to it.
// t.mu is held.
func (t *Tracee) forked(parent, child int) {
	p := t.clocks[parent]
	if p == nil || t.clocks[child] != nil {
		return
	}
	mem, err := os.OpenFile("/proc/"+strconv.Itoa(child)+"/mem", os.O_RDWR, 0)
	if err != nil {
		return // its reads stay frozen at the fork: they fall back to the system call only mid-update
	}
	c := &vclock{mem: mem, gen: p.gen, g: p.g}
	if c.write(t.pub) != nil {
		mem.Close()
		return
	}
	t.clocks[child] = c
}

// publish shows the processes t.pub; t.mu is held. A process that cannot be written to has
// exited or exec'd (its exec stop registers it again).
func (t *Tracee) publish() {
	for pid, c := range t.clocks {
		if c.last == t.pub {
			continue
		}
		if c.write(t.pub) != nil {
			c.mem.Close()
			delete(t.clocks, pid)
		}
	}
}

// write stores pub between two steps of the generation byte: odd while the time word may be
// half written. Each step is a system call of its own, so the reader sees them in order.
func (c *vclock) write(pub int64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(pub))
	c.g |= 1
	if err := writeAt(c.mem, []byte{c.g}, uint64(c.gen)); err != nil {
		return err
	}
	if err := writeAt(c.mem, b[:], uint64(c.gen+vcPub-vcGen)); err != nil {
		return err
	}
	c.g++
	c.last = pub
	return writeAt(c.mem, []byte{c.g}, uint64(c.gen))
}

// dropClock forgets a process's clock (it exited or left the trace); t.mu is held.
func (t *Tracee) dropClock(pid int) {
	if c := t.clocks[pid]; c != nil {
		c.mem.Close()
		delete(t.clocks, pid)
	}
}

// auxvValue reads an entry of /proc/PID/auxv (PID may be "self").
func auxvValue(pid string, typ uint64) (uint64, error) {
	b, err := os.ReadFile("/proc/" + pid + "/auxv")
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(b); i += 16 {
		switch binary.LittleEndian.Uint64(b[i:]) {
		case typ:
			return binary.LittleEndian.Uint64(b[i+8:]), nil
		case atNull:
			return 0, nil
		}
	}
	return 0, nil
}

const (
	cloneVM     = 0x100   // CLONE_VM
	cloneThread = 0x10000 // CLONE_THREAD
	sysClone3   = 435
)

// cloneFlags reads the flags of the clone that thread tid is stopped at the end of.
func cloneFlags(tid int) (uint64, bool) {
	var r syscall.PtraceRegs
	if syscall.PtraceGetRegs(tid, &r) != nil {
		return 0, false
	}
	if r.Orig_rax != sysClone3 {
		return r.Rdi, true
	}
	var b [8]byte // struct clone_args, flags first
	if _, err := syscall.PtracePeekData(tid, uintptr(r.Rdi), b[:]); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint64(b[:]), true
}
