//go:build !linux

package wall

import "syscall"

// workerAttr starts a worker in a process group of its own.
func workerAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// residentBytes is not read outside Linux: the worker's own limits hold it.
func residentBytes(int) int64 { return 0 }

func memoryOf(int) (resident, data int64) { return 0, 0 }
