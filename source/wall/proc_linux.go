//go:build linux

package wall

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
	resident, _ := memoryOf(pid)
	return resident
}

// memoryOf is a process's resident memory and its data (what RLIMIT_DATA
// counts: private writable mappings, used or only reserved), in bytes.
func memoryOf(pid int) (resident, data int64) {
	text, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, 0
	}
	fields := strings.Fields(string(text))
	if len(fields) < 6 {
		return 0, 0
	}
	page := int64(os.Getpagesize())
	r, _ := strconv.ParseInt(fields[1], 10, 64)
	d, _ := strconv.ParseInt(fields[5], 10, 64)
	return r * page, d * page
}
