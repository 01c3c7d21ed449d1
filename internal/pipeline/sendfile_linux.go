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

// dropSent frees the pages of the scratch file f before off that have
// been sent (punching a hole, page-aligned: a partial page would be
// zeroed under a pipe that still refers to it), from *dropped on. The
// spool then holds what is in flight, not the whole output: its dirty
// pages were 1 GiB for a 1 GiB result, which the kernel began writing to
// the disk of TMPDIR and throttled the run for. A filesystem that cannot
// punch holes keeps them, as before.
func dropSent(f *os.File, dropped *int64, off int64) {
	end := off &^ (pageSize - 1)
	if end <= *dropped || *dropped < 0 {
		return
	}
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, *dropped, end-*dropped)
	if err != nil {
		*dropped = -1 // not here: stop trying
		return
	}
	*dropped = end
}

var pageSize = int64(os.Getpagesize())
