//go:build !linux

package fileio

import "os"

// createAnon: no unnamed files here (O_TMPFILE is Linux's); outputs are
// written to named temporary files.
func createAnon(dir string) (*os.File, error) { return nil, errNoAnon }

func linkAnon(f *os.File, name string) error { return errNoAnon }
