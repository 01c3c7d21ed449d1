//go:build unix

package fileio

import (
	"errors"
	"os"
	"strconv"
	"syscall"
)

// Files are opened with open(2) and wrapped with os.NewFile rather than
// os.Open and os.CreateTemp: os.Open tries to register every file with
// the network poller, which a regular file refuses, at the cost of four
// fcntl and an epoll_ctl per file, and CreateTemp's file needed a chmod.
// For a batch of thousands of small files those were a third of the
// system calls.

// openRead opens name read-only.
func openRead(name string) (*os.File, error) {
	for {
		fd, err := syscall.Open(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
		return os.NewFile(uintptr(fd), name), nil
	}
}

// createTemp creates a new file in dir named by pattern (its "*" replaced
// by a random number), with the mode a new file gets (0666 less umask).
func createTemp(dir, pattern string) (*os.File, error) {
	prefix, suffix := pattern, ""
	for i := len(pattern) - 1; i >= 0; i-- {
		if pattern[i] == '*' {
			prefix, suffix = pattern[:i], pattern[i+1:]
			break
		}
	}
	for try := 0; ; try++ {
		name := dir + string(os.PathSeparator) + prefix + strconv.FormatUint(uint64(randomName()), 10) + suffix
		fd, err := syscall.Open(name, syscall.O_RDWR|syscall.O_CREAT|syscall.O_EXCL|syscall.O_CLOEXEC, 0o666)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), name), nil
		case err == syscall.EINTR, errors.Is(err, syscall.EEXIST) && try < 10000:
			continue
		default:
			return nil, &os.PathError{Op: "open", Path: name, Err: err}
		}
	}
}

// rename is rename(2): os.Rename first looks at the target with lstat,
// to refuse a directory, which Create has already done.
func rename(from, to string) error {
	for {
		err := syscall.Rename(from, to)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
		}
		return nil
	}
}

// Scratch is a new file for a run's own use, in the directory for
// temporary files: unlinked from the start where the system allows
// (O_TMPFILE), so nothing is left behind whatever happens to the process.
func Scratch() (*os.File, error) {
	dir := os.TempDir()
	for {
		fd, err := syscall.Open(dir, syscall.O_RDWR|syscall.O_CLOEXEC|oTmpfile, 0o600)
		if err == syscall.EINTR {
			continue
		}
		if err == nil {
			return os.NewFile(uintptr(fd), dir+"/(scratch)"), nil
		}
		break
	}
	f, err := createTemp(dir, ".depthspace-scratch-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name())
	return f, nil
}
