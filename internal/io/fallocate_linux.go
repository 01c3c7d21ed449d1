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

// PunchHole frees bytes [off, off+n) of f, keeping its size
// (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE): their pages leave the
// page cache, dirty or not, and read as zeros.
func PunchHole(f *os.File, off, n int64) error {
	const punchHoleKeepSize = 0x02 | 0x01
	return syscall.Fallocate(int(f.Fd()), punchHoleKeepSize, off, n)
}
