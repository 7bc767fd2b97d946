package harness

import (
	"os"
	"testing"
)

func TestMemoryOfThisProcessAndAnother(t *testing.T) {
	self, err := MemoryOf(0)
	if err != nil {
		t.Fatal(err)
	}
	byPID, err := MemoryOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if self.Peak <= 0 || byPID.Peak < self.Peak || self.Anon <= 0 {
		t.Errorf("memory of this process: %+v, by its pid: %+v", self, byPID)
	}
	if _, err := MemoryOf(1 << 30); err == nil {
		t.Error("no error for a process that does not exist")
	}
	// An allocation larger than all the heap mapped so far must map more.
	before := PeakHeap()
	keep := make([]byte, before+16<<20)
	keep[len(keep)-1] = 1
	if after := PeakHeap(); after < int64(len(keep)) {
		t.Errorf("the peak heap is %d after an allocation of %d (it was %d)", after, len(keep), before)
	}
	_ = keep[0]
}
