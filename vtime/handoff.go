package vtime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
)

// handoffByte marks the message that carries a listener, ahead of the clock's own.
const handoffByte = 'L'

// SendListener passes ln's socket to the follower at the other end of conn (SCM_RIGHTS),
// before Lead speaks on conn. A follower that must own a socket clients may already be
// connecting to (a port holder that was there before the server started) gets it listening,
// with its queue intact.
func SendListener(conn *net.UnixConn, ln *net.TCPListener) error {
	f, err := ln.File()
	if err != nil {
		return err
	}
	defer f.Close()
	_, _, err = conn.WriteMsgUnix([]byte{handoffByte}, syscall.UnixRights(int(f.Fd())), nil)
	return err
}

// ReceiveListener takes the listener SendListener passed over conn; call it before Follow.
func ReceiveListener(conn *net.UnixConn) (net.Listener, error) {
	var b [1]byte
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, _, _, err := conn.ReadMsgUnix(b[:], oob)
	if err != nil {
		return nil, err
	}
	var fds []int
	if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
		for i := range msgs {
			if got, err := syscall.ParseUnixRights(&msgs[i]); err == nil {
				fds = append(fds, got...)
			}
		}
	}
	if n != 1 || b[0] != handoffByte || len(fds) != 1 {
		for _, fd := range fds {
			syscall.Close(fd)
		}
		return nil, errors.New("the clock's leader passed no listener: start this process from the harness that expects it")
	}
	f := os.NewFile(uintptr(fds[0]), "handed-over listener")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		return nil, fmt.Errorf("the handed-over listener: %w", err)
	}
	return ln, nil
}
