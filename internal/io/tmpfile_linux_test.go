package fileio

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkNewTinyFile: what the kernel charges for one new small output
// made atomically, two ways: an unnamed file (O_TMPFILE) written and
// linked to its name, as Create does, or a file made under a temporary
// name, written and renamed to its name. Run it on the file system that
// matters (TMPDIR=/dev/shm go test -run XXX -bench NewTinyFile
// ./internal/io/); cpu-ns/file is the process's user and system time a
// file, which the machine's other load moves less than ns/op.
func BenchmarkNewTinyFile(b *testing.B) {
	data := make([]byte, 144)
	for _, way := range []struct {
		name   string
		create func(dir, name string) error
	}{
		{"tmpfile-linkat", func(dir, name string) error {
			fd, err := createAnon(dir)
			if err != nil {
				return err
			}
			defer closeFD(fd)
			if _, err := pwrite(fd, data, 0); err != nil {
				return err
			}
			return linkAnon(fd, filepath.Join(dir, name))
		}},
		{"named-rename", func(dir, name string) error {
			tmp := filepath.Join(dir, "."+name+".tmp")
			fd, err := unix.Open(tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
			if err != nil {
				return err
			}
			_, err = pwrite(fd, data, 0)
			if cerr := closeFD(fd); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			return unix.Rename(tmp, filepath.Join(dir, name))
		}},
	} {
		b.Run(way.name, func(b *testing.B) {
			const perDir = 1000
			var dir string
			var before, after syscall.Rusage
			syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			i := 0
			for b.Loop() {
				if i%perDir == 0 {
					dir = filepath.Join(b.TempDir(), fmt.Sprint(i/perDir))
					if err := syscall.Mkdir(dir, 0o777); err != nil {
						b.Fatal(err)
					}
				}
				if err := way.create(dir, fmt.Sprintf("f%04d.npy", i%perDir)); err != nil {
					b.Fatal(err)
				}
				i++
			}
			syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu := syscall.TimevalToNsec(after.Utime) - syscall.TimevalToNsec(before.Utime) +
				syscall.TimevalToNsec(after.Stime) - syscall.TimevalToNsec(before.Stime)
			b.ReportMetric(float64(cpu)/float64(i), "cpu-ns/file")
		})
	}
}
