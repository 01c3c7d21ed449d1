package pipeline

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// sendRange sends n bytes of src from off to dst with sendfile(2): the
// kernel moves them from the page cache into the pipe, with no copy
// through this process. It returns how many bytes went; fewer than n
// with no error when the kernel cannot send to dst (the caller then
// copies the rest). That includes EAGAIN (a non-blocking standard output:
// the copy loop's writes wait through Go's poller instead of spinning
// here) and EPIPE (the reader has gone: the copy loop's write meets it
// the way every other write does, and a standard output dies of SIGPIPE
// quietly, as a filter should, instead of printing an error).
func sendRange(dst, src *os.File, off, n int64) (int64, error) {
	sent := int64(0)
	for sent < n {
		m, err := unix.Sendfile(int(dst.Fd()), int(src.Fd()), &off, int(min(n-sent, 1<<30)))
		switch {
		case err == syscall.EINTR:
			continue
		case err == syscall.EAGAIN || err == syscall.EPIPE || err == syscall.EINVAL || err == syscall.ENOSYS:
			return sent, nil
		case err != nil:
			return sent, &os.PathError{Op: "write", Path: dst.Name(), Err: err}
		case m == 0:
			return sent, &os.PathError{Op: "write", Path: dst.Name(), Err: syscall.EIO}
		}
		sent += int64(m)
	}
	return sent, nil
}

// growPipe asks for a 1 MiB pipe buffer on a standard input or output
// that is a pipe (16 pages by default): each read, write or sendfile
// then moves up to 1 MiB, with sixteen times fewer wake-ups of the
// process at the other end. Nothing if f is not a pipe or the kernel
// refuses (pipe-max-size).
func growPipe(f *os.File) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, 1<<20) })
	}
}
