//go:build linux

package source

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// workerAttr starts a worker in a process group of its own, killed with the
// agent should the agent die first.
func workerAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// residentBytes is the resident memory of process pid, or 0 when it cannot be
// read (the process is gone).
func residentBytes(pid int) int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(data))
	if len(fields) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
