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

// fallocateKeepSize reserves size bytes of blocks from the start of f
// without changing its size (FALLOC_FL_KEEP_SIZE).
func fallocateKeepSize(f *os.File, size int64) error {
	return syscall.Fallocate(int(f.Fd()), 1, 0, size)
}
