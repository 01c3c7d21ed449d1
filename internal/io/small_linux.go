package fileio

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// openSmall opens name and, when it is a regular file under smallFile
// bytes, reads it whole and closes it on the spot, with no *os.File: the
// descriptor is used for one fstat, one read and a close. os.NewFile
// asks the descriptor's flags with fcntl and sets a finalizer, for a
// file whose every byte is then in memory; a batch of thousands of small
// files paid that per file. Any other file is handed back open (f) for
// Open to map or read, with in nil.
func openSmall(name string) (in *Input, f *os.File, err error) {
	var fd int
	for {
		fd, err = openPath(name, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	// The input and its FileInfo are one allocation.
	small := &struct {
		in   Input
		info statInfo
	}{info: statInfo{name: filepath.Base(name)}}
	info := &small.info
	st := &info.st
	for {
		if err = syscall.Fstat(fd, st); err != syscall.EINTR {
			break
		}
	}
	if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Size <= 0 || st.Size >= smallFile {
		// Left to Open, which says what is wrong with it.
		return nil, os.NewFile(uintptr(fd), name), nil
	}
	b, err := readSmall(fdReader(fd), int(st.Size))
	syscall.Close(fd)
	if err != nil {
		return nil, nil, err
	}
	small.in = Input{Name: name, Info: info, Data: b, pooled: true}
	return &small.in, nil, nil
}

// fdReader reads an open descriptor with read(2).
type fdReader int

func (fd fdReader) Read(p []byte) (int, error) {
	for {
		n, err := syscall.Read(int(fd), p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, err
		case n == 0 && len(p) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// statInfo is the os.FileInfo of a file known by its fstat alone (the
// small files openSmall reads). SameFile compares it with another.
type statInfo struct {
	name string
	st   syscall.Stat_t
}

func (s *statInfo) Name() string       { return s.name }
func (s *statInfo) Size() int64        { return s.st.Size }
func (s *statInfo) ModTime() time.Time { return time.Unix(s.st.Mtim.Unix()) }
func (s *statInfo) IsDir() bool        { return false }
func (s *statInfo) Sys() any           { return &s.st }

// Mode is a regular file's: its permission bits, set-user-ID,
// set-group-ID and sticky bits as os.Stat gives them.
func (s *statInfo) Mode() fs.FileMode {
	m := fs.FileMode(s.st.Mode & 0o777)
	if s.st.Mode&syscall.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if s.st.Mode&syscall.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if s.st.Mode&syscall.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// SameFile says whether a and b describe the same file, as os.SameFile
// does for its own FileInfos; it also knows an input's statInfo.
func SameFile(a, b os.FileInfo) bool {
	sa, okA := a.Sys().(*syscall.Stat_t)
	sb, okB := b.Sys().(*syscall.Stat_t)
	if okA && okB {
		return sa.Dev == sb.Dev && sa.Ino == sb.Ino
	}
	return os.SameFile(a, b)
}
