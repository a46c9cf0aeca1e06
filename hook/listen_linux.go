package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort lets several hooks on this host listen on one address
// (SO_REUSEPORT): the kernel spreads new connections over them.
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
