//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// reusePort is Linux's alone here.
func reusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("--reuse-port needs Linux (SO_REUSEPORT spreading connections over the listeners)")
}
