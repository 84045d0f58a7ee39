//go:build linux && amd64

package ptrace

import (
	"net/netip"
	"syscall"
	"testing"
	"unsafe"
)

func TestLoopbackSockaddr(t *testing.T) {
	in4 := func(a string) []byte {
		sa := syscall.RawSockaddrInet4{Family: syscall.AF_INET, Addr: netip.MustParseAddr(a).As4()}
		return (*[syscall.SizeofSockaddrInet4]byte)(unsafe.Pointer(&sa))[:]
	}
	in6 := func(a string) []byte {
		sa := syscall.RawSockaddrInet6{Family: syscall.AF_INET6, Addr: netip.MustParseAddr(a).As16()}
		return (*[syscall.SizeofSockaddrInet6]byte)(unsafe.Pointer(&sa))[:]
	}
	for _, c := range []struct {
		name string
		sa   []byte
		want bool
	}{
		{"127.0.0.1", in4("127.0.0.1"), true},
		{"127.0.0.53", in4("127.0.0.53"), true},
		{"10.0.0.1", in4("10.0.0.1"), false},
		{"::1", in6("::1"), true},
		{"::ffff:127.0.0.1", in6("::ffff:127.0.0.1"), true},
		{"::ffff:10.0.0.1", in6("::ffff:10.0.0.1"), false},
		{"2001:db8::1", in6("2001:db8::1"), false},
		{"IPv6 cut short", in6("::1")[:20], false},
		{"unix", []byte{syscall.AF_UNIX, 0, '/', 't', 'm', 'p', '/', 's'}, false},
		{"too short", []byte{syscall.AF_INET, 0, 0, 0}, false},
	} {
		if got := loopbackSockaddr(c.sa); got != c.want {
			t.Errorf("%s: loopbackSockaddr = %v, want %v", c.name, got, c.want)
		}
	}
}
