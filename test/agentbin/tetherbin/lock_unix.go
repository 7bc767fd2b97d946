//go:build unix

package tetherbin

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lockBuilds takes the lock that serializes the builds of the tether binary across
// the test binaries of one user, and returns its release. The kernel releases the
// lock if the process dies holding it.
func lockBuilds() (unlock func(), err error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("tether-agentbin-%d.lock", os.Getuid()))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the build lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("the build lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}
