package vtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"unsafe"
)

// Netlink sock_diag constants (linux/sock_diag.h, linux/inet_diag.h).
const (
	netlinkSockDiag        = 4
	sockDiagByFamily       = 20
	inetDiagReqBytecode    = 1
	inetDiagBCJmp          = 1
	inetDiagBCSEq          = 11
	inetDiagBCDEq          = 12
	tcpTimeWait            = 6
	inetDiagReqV2Len       = 56 // family, protocol, ext, pad, states, sockid(48)
	inetDiagMsgLen         = 72 // family..retrans(4), sockid(48), expires, rqueue, wqueue, uid, inode
	inetDiagMsgRqueueOff   = 56
	inetDiagMsgWqueueOff   = 60
	inetDiagMsgStateOff    = 1
	nlmsgAlignTo           = 4
	sockDiagAllButTimeWait = 0xFFF &^ (1 << tcpTimeWait)
)

// diagBusy asks the kernel (sock_diag) for the TCP sockets with source or destination port,
// TIME_WAIT excluded, and reports whether one has work pending (see busySocket). Filtering in
// the kernel keeps the cost to the handful of sockets of one run, where /proc/net/tcp lists
// every socket of the host, thousands of TIME_WAIT probes included.
func diagBusy(port int) (bool, error) {
	p := NewTCPPort(port)
	defer p.Close()
	return p.diag()
}

// diag asks on p's socket, opening it on first use; p.mu must be held.
func (p *TCPPort) diag() (bool, error) {
	if p.fd < 0 {
		fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, netlinkSockDiag)
		if err != nil {
			return false, err
		}
		p.fd = fd
	}
	fd := p.fd
	if err := syscall.Sendto(fd, diagRequest(p.port), 0, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return false, err
	}
	buf := make([]byte, 32<<10)
	busy := false
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return false, err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return false, err
		}
		for _, m := range msgs {
			switch m.Header.Type {
			case syscall.NLMSG_DONE:
				return busy, nil
			case syscall.NLMSG_ERROR:
				if len(m.Data) >= 4 {
					if e := -int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
						return false, fmt.Errorf("vtime: sock_diag refused the request: %w", syscall.Errno(e))
					}
				}
				return false, errors.New("vtime: sock_diag refused the request")
			}
			if len(m.Data) < inetDiagMsgLen {
				continue
			}
			st := m.Data[inetDiagMsgStateOff]
			rq := binary.NativeEndian.Uint32(m.Data[inetDiagMsgRqueueOff:])
			wq := binary.NativeEndian.Uint32(m.Data[inetDiagMsgWqueueOff:])
			if pending(uint64(st), uint64(wq), uint64(rq)) {
				busy = true
			}
		}
	}
}

// diagRequest is a SOCK_DIAG_BY_FAMILY dump of AF_INET TCP sockets whose source or
// destination port is port. The filter is `ss`'s bytecode for "sport = P or dport = P": a
// jump lands at an offset, running off the end accepts, past the end rejects, and the kernel
// checks every jump target is reachable along the "yes" chain.
func diagRequest(port int) []byte {
	bc := make([]byte, 20)
	op := func(off int, code, yes byte, no uint16) {
		bc[off], bc[off+1] = code, yes
		binary.NativeEndian.PutUint16(bc[off+2:], no)
	}
	op(0, inetDiagBCSEq, 8, 12) // sport = P: on to the jump (accept); else to the dport test
	op(4, 0, 0, uint16(port))
	op(8, inetDiagBCJmp, 4, 12)  // jump to the end: accept
	op(12, inetDiagBCDEq, 8, 12) // dport = P: end (accept); else past the end (reject)
	op(16, 0, 0, uint16(port))

	attrLen := 4 + len(bc)
	total := syscall.NLMSG_HDRLEN + inetDiagReqV2Len + attrLen
	b := make([]byte, total)
	h := (*syscall.NlMsghdr)(unsafe.Pointer(&b[0]))
	h.Len = uint32(total)
	h.Type = sockDiagByFamily
	h.Flags = syscall.NLM_F_REQUEST | syscall.NLM_F_DUMP
	h.Seq = 1
	req := b[syscall.NLMSG_HDRLEN:]
	req[0], req[1] = syscall.AF_INET, syscall.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[4:], sockDiagAllButTimeWait)
	attr := req[inetDiagReqV2Len:]
	binary.NativeEndian.PutUint16(attr[0:], uint16(attrLen))
	binary.NativeEndian.PutUint16(attr[2:], inetDiagReqBytecode)
	copy(attr[4:], bc)
	return b
}
