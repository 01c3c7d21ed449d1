//go:build unix

package objstore

import (
	"errors"
	"os"
	"syscall"
)

// running says whether the process pid is alive (signal 0: it exists,
// whether or not this user may signal it).
func running(pid int) bool {
	if pid <= 0 {
		return false
	}
	if pid == os.Getpid() {
		return true
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
