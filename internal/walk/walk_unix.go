//go:build unix

package walk

import (
	"os"

	"golang.org/x/sys/unix"
)

// regularSize is the size of the entry name of the open directory d, and
// whether it is (still) a regular file: fstatat in d resolves one name,
// where lstat of the whole path resolved every directory above it, and
// makes no FileInfo.
func regularSize(d *os.File, name string) (size int64, ok bool, err error) {
	sc, err := d.SyscallConn()
	if err != nil {
		return 0, false, err
	}
	var st unix.Stat_t
	cerr := sc.Control(func(fd uintptr) {
		for {
			err = unix.Fstatat(int(fd), name, &st, unix.AT_SYMLINK_NOFOLLOW)
			if err != unix.EINTR {
				return
			}
		}
	})
	if cerr != nil {
		return 0, false, cerr
	}
	if err != nil {
		return 0, false, err
	}
	return st.Size, st.Mode&unix.S_IFMT == unix.S_IFREG, nil
}
