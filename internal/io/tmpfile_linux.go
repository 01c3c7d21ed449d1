package fileio

import (
	"io"
	"strconv"

	"golang.org/x/sys/unix"
)

const oTmpfile = unix.O_TMPFILE

// createAnon makes an unnamed file in dir (O_TMPFILE), with the mode a new
// file gets, and returns its descriptor. A new output is written there
// and given its name when complete (linkAnon): no temporary name is made,
// renamed or, if the process is interrupted, left behind, so it needs no
// signal handler.
func createAnon(dir string) (int, error) {
	if anonRefused.Load() {
		return -1, errNoAnon
	}
	for {
		fd, err := openPath(dir, unix.O_RDWR|unix.O_CLOEXEC|unix.O_TMPFILE, 0o666)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, err
		}
		return fd, nil
	}
}

// linkAnon gives the unnamed file open as fd the name name; it fails
// with EEXIST if name exists.
func linkAnon(fd int, name string) error {
	if !procLink.Load() {
		err := retryEINTR(func() error { return linkEmptyPath(fd, name) })
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

// pwrite writes all of p at off of the descriptor fd, as os.File.WriteAt
// does.
func pwrite(fd int, p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) {
		m, err := unix.Pwrite(fd, p[n:], off+int64(n))
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m == 0 {
			return n, io.ErrShortWrite
		}
		n += m
	}
	return n, nil
}

func closeFD(fd int) error { return unix.Close(fd) }
