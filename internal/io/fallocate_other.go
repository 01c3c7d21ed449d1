//go:build !linux

package fileio

import "os"

func fallocate(f *os.File, off, size int64) error { return nil }

func fallocateKeepSize(f *os.File, size int64) error { return nil }
