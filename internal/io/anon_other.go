//go:build !linux

package fileio

// createAnon: no unnamed files here (O_TMPFILE is Linux's); outputs are
// written to named temporary files.
func createAnon(dir string) (int, error) { return -1, errNoAnon }

func linkAnon(fd int, name string) error { return errNoAnon }

// pwrite and closeFD are for the descriptors createAnon makes: none here.
func pwrite(fd int, p []byte, off int64) (int, error) { return 0, errNoAnon }

func closeFD(fd int) error { return errNoAnon }
