//go:build !unix

package fileio

import (
	"errors"
	"os"
)

var errNoMmap = errors.New("memory mapping is not used on this platform")

func mapReadOnly(f *os.File, size int64) ([]byte, func() error, error) {
	return nil, nil, errNoMmap
}

func mapReadWrite(f *os.File, off, size int64) ([]byte, func() error, error) {
	return nil, nil, errNoMmap
}

func dropPages([]byte) {}

func umask() os.FileMode { return 0o022 }
