package controlplane

import "syscall"

// sysProcAttr asks the kernel to kill a component when the test binary that started
// it dies (a panic, a `go test -timeout`, a ^C), so no apiserver outlives its tests.
// The signal is tied to the thread that started the child; the Go runtime does not
// end threads while the program runs unless a goroutine locked to one exits, which
// nothing here does.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
