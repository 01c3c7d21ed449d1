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

// Scratch is a new file for a run's own use, removed at once.
func Scratch() (*os.File, error) {
	f, err := os.CreateTemp("", ".depthspace-scratch-*")
	if err != nil {
		return nil, err
	}
	_ = os.Remove(f.Name())
	return f, nil
}
