package fileio

import (
	"errors"
	"os"
	"syscall"
)

// fallocate reserves the blocks of a file we are about to map, so that a
// full disk is an ENOSPC error now instead of a SIGBUS later.
func fallocate(f *os.File, off, size int64) error {
	if size == 0 {
		return nil
	}
	err := syscall.Fallocate(int(f.Fd()), 0, off, size)
	if errors.Is(err, syscall.EOPNOTSUPP) || errors.Is(err, syscall.ENOSYS) {
		return nil // the filesystem cannot reserve; the kernel copes
	}
	return err
}
