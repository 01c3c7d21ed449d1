//go:build !unix

package fileio

import "os"

func openRead(name string) (*os.File, error) { return os.Open(name) }

func createTemp(dir, pattern string) (*os.File, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(filePerm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

func rename(from, to string) error { return os.Rename(from, to) }
