package harness

import (
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
)

// Memory is what the kernel says of a process's resident memory, in bytes:
// its peak (VmHWM, the only peak it keeps), and now its anonymous and
// file-backed parts (RssAnon, RssFile).
type Memory struct {
	Peak, Anon, File int64
}

// MemoryOf reads process pid's memory from /proc/PID/status; pid 0 is this
// process.
func MemoryOf(pid int) (Memory, error) {
	path := "/proc/self/status"
	if pid != 0 {
		path = fmt.Sprintf("/proc/%d/status", pid)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*int64{"VmHWM:": &m.Peak, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	for line := range strings.SplitSeq(string(data), "\n") {
		key, value, ok := strings.Cut(line, "\t")
		if p := fields[key]; ok && p != nil {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
			if err != nil {
				return Memory{}, fmt.Errorf("%s %s %q: %w", path, key, value, err)
			}
			*p = kb << 10
		}
	}
	if m.Peak == 0 {
		return Memory{}, fmt.Errorf("no VmHWM in %s", path)
	}
	return m, nil
}

// PeakHeap is the heap Go's runtime has mapped in this process, released pages
// included: it only grows, so it is the peak heap so far. Under the race
// detector, whose shadow memory swells the resident set, it stands in for the
// peak resident memory.
func PeakHeap() int64 {
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/unused:bytes"},
		{Name: "/memory/classes/heap/free:bytes"},
		{Name: "/memory/classes/heap/released:bytes"},
	}
	metrics.Read(samples)
	var total int64
	for _, s := range samples {
		total += int64(s.Value.Uint64())
	}
	return total
}
