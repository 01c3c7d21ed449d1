package walk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"syscall"
)

// listDir opens the directory p and lists its entries (in no order: read
// sorts them). d stays open for regularSize; it is nil when p could not
// be opened. What could be read of a directory that fails midway is
// listed with the error.
//
// It reads the directory's records (getdents64) into the walk's buffer
// and makes a string for each entry it keeps, where os.File.ReadDir
// made a DirEntry and a name for every entry: in a directory of
// thousands of tiny tensors, a tenth of a file's allocations.
func (w *dirWalk) listDir(p string) (d *os.File, entries []dirEntry, err error) {
	d, err = os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	sc, err := d.SyscallConn()
	if err != nil {
		return d, nil, err
	}
	if w.dirents == nil {
		w.dirents = make([]byte, 16<<10)
	}
	cerr := sc.Control(func(fd uintptr) {
		for {
			n, rerr := syscall.ReadDirent(int(fd), w.dirents)
			switch {
			case rerr == syscall.EINTR:
				continue
			case rerr != nil:
				err = &os.PathError{Op: "readdirent", Path: p, Err: rerr}
				return
			case n <= 0:
				return
			}
			if entries, err = appendDirents(entries, w.dirents[:n]); err != nil {
				err = &os.PathError{Op: "readdirent", Path: p, Err: err}
				return
			}
		}
	})
	if cerr != nil {
		err = cerr
	}
	return d, entries, err
}

// appendDirents appends the entries of b, linux_dirent64 records: inode
// (8 bytes), offset (8), record length (2), type (1), then the name,
// NUL-terminated and padded.
func appendDirents(entries []dirEntry, b []byte) ([]dirEntry, error) {
	const nameAt = 19
	for len(b) > 0 {
		if len(b) < nameAt {
			return entries, errBadDirent
		}
		reclen := int(binary.NativeEndian.Uint16(b[16:18]))
		if reclen < nameAt || reclen > len(b) {
			return entries, errBadDirent
		}
		typ, name := b[18], b[nameAt:reclen]
		b = b[reclen:]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		switch {
		case len(name) == 0 || string(name) == "." || string(name) == "..":
		case typ == syscall.DT_REG:
			if IsTensorName(string(name)) {
				entries = append(entries, dirEntry{name: string(name), regular: true})
			}
		default:
			entries = append(entries, dirEntry{name: string(name)})
		}
	}
	return entries, nil
}

var errBadDirent = errors.New("malformed directory record")
