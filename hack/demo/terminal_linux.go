package main

import (
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// takeTerminal makes the demo's process group the terminal's foreground group, as a
// shell does for a job, and returns what gives it back. A Ctrl-C then reaches the
// demo alone: not make, whose interrupted wait would end `make demo` with an error,
// not `tee` in `make demo | tee log`, whose death would cut the demo's output in the
// middle of its cleanup, and not the components it started (each in a group of its
// own). Without a terminal (CI, a script) it does nothing.
func takeTerminal() (restore func()) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return func() {}
	}
	var foreground int32
	if err := ioctl(tty, syscall.TIOCGPGRP, &foreground); err != nil {
		_ = tty.Close()
		return func() {}
	}
	// A background group that sets the foreground is sent SIGTTOU, which would stop it.
	signal.Ignore(syscall.SIGTTOU)
	if err := syscall.Setpgid(0, 0); err != nil {
		_ = tty.Close()
		return func() {}
	}
	own := int32(syscall.Getpgrp())
	if err := ioctl(tty, syscall.TIOCSPGRP, &own); err != nil {
		_ = tty.Close()
		return func() {}
	}
	return func() {
		_ = ioctl(tty, syscall.TIOCSPGRP, &foreground)
		_ = tty.Close()
	}
}

func ioctl(tty *os.File, request uintptr, pgrp *int32) error {
	if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, tty.Fd(), request, uintptr(unsafe.Pointer(pgrp))); errno != 0 {
		return errno
	}
	return nil
}

// agentProcAttr puts the agent in a process group of its own (Ctrl-C reaches the
// demo, which stops the agent with SIGTERM) and kills it if the demo dies.
func agentProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
