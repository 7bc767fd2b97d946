package controlplane

import "syscall"

// sysProcAttr asks the kernel to kill a component when the program that started it
// dies (a panic, a `go test -timeout`), so no apiserver outlives its tests. The
// signal is tied to the thread that started the child; the Go runtime does not end
// threads while the program runs unless a goroutine locked to one exits, which
// nothing here does.
//
// Each component also runs in a process group of its own, so a Ctrl-C at the
// terminal reaches only the program that started it, which then stops the
// components in order (make demo), instead of every component at once, each
// reported as having exited before it was stopped.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
