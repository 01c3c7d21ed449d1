//go:build unix

package fileio

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

func mapReadOnly(f *os.File, size int64) ([]byte, func() error, error) {
	if int64(int(size)) != size {
		return nil, nil, syscall.EFBIG
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	// The kernels read the input front to back; let the kernel read ahead.
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return b, func() error { return syscall.Munmap(b) }, nil
}

// dropPages takes b's pages (of a read-only file mapping) out of this
// process's memory; reading them again maps them again.
func dropPages(b []byte) { _ = unix.Madvise(b, unix.MADV_DONTNEED) }

// mapReadWrite maps size bytes of a file from off, for writing a result
// in place. A mapping starts on a page: the bytes before off in that page
// are mapped too and left out of the slice.
func mapReadWrite(f *os.File, off, size int64) ([]byte, func() error, error) {
	lead := off % int64(os.Getpagesize())
	if int64(int(size+lead)) != size+lead {
		return nil, nil, syscall.EFBIG
	}
	b, err := syscall.Mmap(int(f.Fd()), off-lead, int(size+lead), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b[lead:], func() error { return syscall.Munmap(b) }, nil
}

func umask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
