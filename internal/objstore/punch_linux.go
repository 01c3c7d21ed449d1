package objstore

import (
	"os"
	"syscall"
)

// punchHole frees bytes [off, off+n) of f, keeping its size
// (FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE).
func punchHole(f *os.File, off, n int64) error {
	const punchHoleKeepSize = 0x02 | 0x01
	return syscall.Fallocate(int(f.Fd()), punchHoleKeepSize, off, n)
}
