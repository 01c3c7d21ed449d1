package fileio

import (
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// stdoutFile is a standard output redirected to a regular file
// (`depthspace s2d -b 2 in.npy > out.npy`). It is written by position,
// like a file named by -o, through a second descriptor opened on the same
// file (/proc/self/fd/1): chunks are written by several workers at once
// and nothing is held back in memory. The result starts at the
// descriptor's offset (0 after `>`, the end after `>>`), and when the run
// ends the descriptor's offset is moved past it, as if it had been written
// in order, so that a later write to the same descriptor follows it.
//
// There is no temporary file to rename: the shell already chose the file.
// If the run fails or is interrupted, a file the run only extended is cut
// back to its size before the run (an empty file after `>`, the earlier
// content after `>>`); bytes overwritten inside a longer file (`1<>f`)
// cannot be restored.
type stdoutFile struct {
	fd       *os.File // the standard output itself
	base     int64    // where the result starts
	origSize int64    // the file's size when the run started
	appended bool     // O_APPEND: the kernel appends whatever the offset
	mu       sync.Mutex
	end      int64 // bytes of the result written so far (its extent)
	pos      int64 // the next sequential Write's offset, from base
	// unreadable: the second description could only be opened for
	// writing (ReadAt fails).
	unreadable bool
}

// openStdoutFile returns an Output for a standard output that is a regular
// file, or nil (no error) for anything else: a pipe, a terminal, a
// device, or a writer that is not a file (tests).
func openStdoutFile(stdout io.Writer) (*Output, error) {
	fd, ok := stdout.(*os.File)
	if !ok {
		return nil, nil
	}
	fi, err := fd.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	flags, err := unix.FcntlInt(fd.Fd(), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_ACCMODE == unix.O_RDONLY {
		return nil, nil
	}
	s := &stdoutFile{fd: fd, origSize: fi.Size(), appended: flags&unix.O_APPEND != 0}
	if s.appended {
		s.base = fi.Size()
	} else if s.base, err = fd.Seek(0, io.SeekCurrent); err != nil {
		return nil, nil
	}
	// A second description of the same file, without O_APPEND (which
	// would make every pwrite append) and with its own offset; readable
	// when the file lets us (a stored npz reads its members back for
	// their CRC-32).
	path := "/proc/self/fd/" + strconv.Itoa(int(fd.Fd()))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	s.unreadable = err != nil
	if err != nil {
		if f, err = os.OpenFile(path, os.O_WRONLY, 0); err != nil {
			return nil, nil
		}
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, nil
	}
	HandleSignals()
	trackRestore(s, func() { s.restore(f) })
	return &Output{Name: "-", w: f, f: f, stdout: s}, nil
}

// wrote records that the result reaches end bytes.
func (s *stdoutFile) wrote(end int64) {
	s.mu.Lock()
	s.end = max(s.end, end)
	s.mu.Unlock()
}

// commit closes the second descriptor and moves standard output's offset
// past the result.
func (s *stdoutFile) commit(f *os.File, err error) error {
	untrackRestore(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		s.restore(nil)
		return unwrapPath(err)
	}
	if !s.appended {
		if _, err := s.fd.Seek(s.base+s.end, io.SeekStart); err != nil {
			return unwrapPath(err)
		}
	}
	return nil
}

// abort undoes the run's writes where it can, then closes.
func (s *stdoutFile) abort(f *os.File) {
	untrackRestore(s)
	s.restore(f)
	f.Close()
}

// restore cuts the file back to its size before the run, when the run
// only wrote past that size.
func (s *stdoutFile) restore(f *os.File) {
	if s.base < s.origSize {
		return
	}
	if f == nil {
		f = s.fd
	}
	_ = f.Truncate(s.origSize)
}

// stdinFile opens, for a standard input redirected from a regular file
// (`depthspace s2d -b 2 - < in.npy`), a second descriptor on that file, so
// that it is mapped or read by position like a file named on the command
// line. The input starts at the descriptor's offset; the descriptor is
// left at the end of the file, as a reader that consumed it would leave it.
func stdinFile(stdin io.Reader) (f *os.File, fi os.FileInfo, base int64, ok bool) {
	fd, isFile := stdin.(*os.File)
	if !isFile {
		return nil, nil, 0, false
	}
	fi, err := fd.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil, 0, false
	}
	if base, err = fd.Seek(0, io.SeekCurrent); err != nil {
		return nil, nil, 0, false
	}
	f, err = os.Open("/proc/self/fd/" + strconv.Itoa(int(fd.Fd())))
	if err != nil {
		return nil, nil, 0, false
	}
	if fi2, err := f.Stat(); err != nil || !os.SameFile(fi, fi2) {
		f.Close()
		return nil, nil, 0, false
	}
	_, _ = fd.Seek(0, io.SeekEnd)
	return f, fi, base, true
}

// StdinIsFile says whether standard input is redirected from a regular
// file, which Open then reads by position instead of as a stream.
func StdinIsFile(stdin io.Reader) bool {
	fd, ok := stdin.(*os.File)
	if !ok {
		return false
	}
	fi, err := fd.Stat()
	return err == nil && fi.Mode().IsRegular()
}
