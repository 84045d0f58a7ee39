//go:build linux && amd64

package ptrace

import (
	"os"
	"testing"
	"time"

	"github.com/incident-replay/incident-replay/vtime"
)

// BenchmarkScanAndSleep traces a Go program that reads 20 /proc files every 50 ms of virtual
// time for 10 s (200 rounds), with the seccomp filter and with every call stopped: the ratio
// is what the filter saves a launcher that scans its process tree.
func BenchmarkScanAndSleep(b *testing.B) {
	bin := build(b, "scanner")
	for _, every := range []bool{false, true} {
		b.Run(map[bool]string{false: "filtered", true: "every-call"}[every], func(b *testing.B) {
			benchTrace(b, Options{Argv: []string{bin, "200", "20", "50ms"}, EveryCall: every})
		})
	}
}

// BenchmarkClockReads traces a Go program that reads the clock 20000 times and sleeps 10 s of
// virtual time, with the clock block in its vDSO and with the vDSO hidden (every read a stop).
func BenchmarkClockReads(b *testing.B) {
	bin := build(b, "sleeper")
	defer func() { hideClock = false }()
	for _, hide := range []bool{false, true} {
		b.Run(map[bool]string{false: "vdso-block", true: "syscall-stops"}[hide], func(b *testing.B) {
			hideClock = hide
			benchTrace(b, Options{Argv: []string{bin, "1", "10s", "20000"}})
		})
	}
}

// benchTrace runs o to its end b.N times, each on a fresh clock.
func benchTrace(b *testing.B, o Options) {
	o.Env = os.Environ()
	for i := 0; i < b.N; i++ {
		c := vtime.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), vtime.Options{})
		tr, err := Start(c, o)
		if err != nil {
			b.Fatal(err)
		}
		<-tr.Done()
		tr.Recorded()
		if code := tr.ExitCode(); code != 0 {
			b.Fatalf("exit %d", code)
		}
		tr.Close()
		c.Close()
	}
}
