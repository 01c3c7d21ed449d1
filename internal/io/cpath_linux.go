package fileio

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cpath is a path as the kernel takes it, NUL-terminated, held on the
// caller's stack. Go's system-call wrappers allocate that copy of every
// path they pass; a batch of tiny files passes three a file (open the
// input, make the unnamed output, link it), each an allocation.
type cpath [512]byte

// set puts s into p and reports whether it fitted. A longer path, or one
// holding a NUL, is left to the standard wrappers (which say what is
// wrong with the latter).
func (p *cpath) set(s string) bool {
	if len(s) >= len(p) || strings.IndexByte(s, 0) >= 0 {
		return false
	}
	copy(p[:], s)
	p[len(s)] = 0
	return true
}

// errnoErr is errno as an error, nil for 0. An Errno under 256 in an
// interface is not allocated (the runtime keeps those values).
func errnoErr(errno unix.Errno) error {
	if errno == 0 {
		return nil
	}
	return errno
}

// openPath is unix.Open(name, flags, mode), the path copied on the stack.
func openPath(name string, flags int, mode uint32) (int, error) {
	var p cpath
	if !p.set(name) {
		return unix.Open(name, flags, mode)
	}
	cwd := unix.AT_FDCWD
	// The conversion of &p[0] inside the call is the form unsafe.Pointer's
	// rules allow for a system call: p is kept alive, and in place, until
	// it returns.
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(cwd), uintptr(unsafe.Pointer(&p[0])), uintptr(flags|unix.O_LARGEFILE), uintptr(mode), 0, 0)
	if errno != 0 {
		return -1, errnoErr(errno)
	}
	return int(fd), nil
}

// emptyPath is "" as the kernel takes it.
var emptyPath = [1]byte{}

// linkEmptyPath is unix.Linkat(fd, "", unix.AT_FDCWD, name,
// unix.AT_EMPTY_PATH), the path copied on the stack.
func linkEmptyPath(fd int, name string) error {
	var p cpath
	if !p.set(name) {
		return unix.Linkat(fd, "", unix.AT_FDCWD, name, unix.AT_EMPTY_PATH)
	}
	cwd := unix.AT_FDCWD
	_, _, errno := unix.Syscall6(unix.SYS_LINKAT, uintptr(fd), uintptr(unsafe.Pointer(&emptyPath[0])), uintptr(cwd), uintptr(unsafe.Pointer(&p[0])), unix.AT_EMPTY_PATH, 0)
	return errnoErr(errno)
}
