//go:build !linux

package fileio

import (
	"errors"
	"os"
)

func fallocate(f *os.File, off, size int64) error { return nil }

func fallocateKeepSize(f *os.File, size int64) error { return nil }

// PunchHole: elsewhere the bytes stay until the file is closed.
func PunchHole(*os.File, int64, int64) error { return errors.ErrUnsupported }
