package fileio

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

const oTmpfile = unix.O_TMPFILE

// createAnon makes an unnamed file in dir (O_TMPFILE), with the mode a new
// file gets. A new output is written there and given its name when
// complete (linkAnon): no temporary name is made, renamed or, if the
// process is interrupted, left behind, so it needs no signal handler.
func createAnon(dir string) (*os.File, error) {
	if anonRefused.Load() {
		return nil, errNoAnon
	}
	for {
		fd, err := unix.Open(dir, unix.O_RDWR|unix.O_CLOEXEC|unix.O_TMPFILE, 0o666)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		return os.NewFile(uintptr(fd), dir+"/(new)"), nil
	}
}

// linkAnon gives the unnamed file f the name name; it fails with EEXIST
// if name exists.
func linkAnon(f *os.File, name string) error {
	fd := int(f.Fd())
	if !procLink.Load() {
		err := retryEINTR(func() error { return unix.Linkat(fd, "", unix.AT_FDCWD, name, unix.AT_EMPTY_PATH) })
		if err != unix.ENOENT && err != unix.EPERM && err != unix.EINVAL {
			return err
		}
		procLink.Store(true)
	}
	return retryEINTR(func() error {
		return unix.Linkat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(fd), unix.AT_FDCWD, name, unix.AT_SYMLINK_FOLLOW)
	})
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}
