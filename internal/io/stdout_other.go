//go:build !linux

package fileio

import (
	"io"
	"os"
)

// stdoutFile exists on Linux only (stdout_linux.go): elsewhere standard
// output is always written as a stream.
type stdoutFile struct {
	base, pos  int64
	unreadable bool
}

func openStdoutFile(io.Writer) (*Output, error) { return nil, nil }

func (*stdoutFile) wrote(int64) {}

func (*stdoutFile) commit(f interface{ Close() error }, err error) error { return err }

func (*stdoutFile) abort(f interface{ Close() error }) {}

func stdinFile(io.Reader) (*os.File, os.FileInfo, int64, bool) { return nil, nil, 0, false }

// StdinIsFile is false where standard input is always read as a stream.
func StdinIsFile(io.Reader) bool { return false }
