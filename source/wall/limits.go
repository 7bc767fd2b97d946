package wall

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// apply puts the worker under its limits, from inside, before it reads its
// job: the kernel then ends it past them, whatever the job makes it do.
//
//   - RLIMIT_DATA bounds its writable private memory (the Go heap, stacks):
//     an allocation past it fails, and Go ends the process ("out of memory").
//     Builds with the race detector, whose shadow memory it would refuse, leave
//     it to the agent's watch of the worker's resident memory.
//   - RLIMIT_CPU bounds its processor time (SIGXCPU, then SIGKILL).
//   - RLIMIT_NOFILE bounds its open files; RLIMIT_FSIZE at zero forbids it to
//     write any file; RLIMIT_CORE at zero, a core dump.
//   - oom_score_adj at its maximum: should the container's memory run out
//     while a worker runs, the kernel ends the worker, not the agent.
func (l workerLimits) apply() error {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	limits := []struct {
		name     string
		resource int
		value    uint64
	}{
		{"files", syscall.RLIMIT_NOFILE, uint64(l.Files)},
		{"file size", syscall.RLIMIT_FSIZE, 0},
		{"core", syscall.RLIMIT_CORE, 0},
	}
	if !workerRaceBuild {
		limits = append(limits, struct {
			name     string
			resource int
			value    uint64
		}{"memory", syscall.RLIMIT_DATA, uint64(l.Memory)})
	}
	for _, lim := range limits {
		if err := syscall.Setrlimit(lim.resource, &syscall.Rlimit{Cur: lim.value, Max: lim.value}); err != nil {
			return fmt.Errorf("%s limit: %w", lim.name, err)
		}
	}
	l.applyToGo()
	return nil
}

// startJob gives the worker's next job its own processor time: the limit on
// the process's time is moved to what it has used and the job's share.
func (l workerLimits) startJob() error {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return err
	}
	used := time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
	soft := uint64((used + l.CPU + time.Second - 1) / time.Second)
	return syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: soft, Max: ^uint64(0)})
}
