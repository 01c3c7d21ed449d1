//go:build linux

// Command tinyfloor is the least a tool that reads every file of a tree
// into memory and writes it out again can ask of the kernel: for each
// file the system calls a depthspace batch makes (the walk's stat; open,
// fstat, one read, close; an unnamed output (O_TMPFILE), one pwrite,
// linkat, close), with nothing between the read and the write: no
// format, no permutation, no pipeline. bench/tiny.py --floor runs it
// beside `cp -r` and depthspace, so that what the kernel costs and what
// depthspace adds to it are told apart (docs/performance.md, many tiny
// files).
//
//	tinyfloor [-j N] [-dirs] read|write|copy SRC DST
//
// read does the input's calls only; write the output's, of a buffer as
// large as the file (and the input's open, fstat and close, not its
// read); copy both. With -j N, N goroutines take the files in the walk's
// order, each the next one not taken, as a batch's workers do; with
// -dirs, each the next directory's files, so that no two write into
// one directory at once.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

func main() {
	jobs := flag.Int("j", 1, "goroutines")
	dirs := flag.Bool("dirs", false, "deal whole directories, not files")
	flag.Parse()
	if flag.NArg() != 3 {
		fmt.Fprintln(os.Stderr, "usage: tinyfloor [-j N] read|write|copy SRC DST")
		os.Exit(2)
	}
	mode, src, dst := flag.Arg(0), flag.Arg(1), flag.Arg(2)
	if mode != "read" && mode != "write" && mode != "copy" {
		fmt.Fprintln(os.Stderr, "tinyfloor: mode is read, write or copy")
		os.Exit(2)
	}
	var files []string // relative paths, in the walk's order
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		switch {
		case d.IsDir() && mode != "read":
			return os.MkdirAll(filepath.Join(dst, rel), 0o777)
		case d.Type().IsRegular():
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		fail(err)
	}
	sort.Strings(files)
	// Each goroutine takes the next share: a file, or with -dirs the
	// files of a directory.
	var shares [][]string
	for i, f := range files {
		if *dirs && i > 0 && filepath.Dir(f) == filepath.Dir(files[i-1]) {
			shares[len(shares)-1] = append(shares[len(shares)-1], f)
		} else {
			shares = append(shares, []string{f})
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range max(1, *jobs) {
		wg.Go(func() { work(mode, src, dst, shares, &next) })
	}
	wg.Wait()
}

// work copies the shares not yet taken, one at a time, in order.
func work(mode, src, dst string, shares [][]string, next *atomic.Int64) {
	buf := make([]byte, 1<<20)
	for i := next.Add(1) - 1; i < int64(len(shares)); i = next.Add(1) - 1 {
		for _, f := range shares[i] {
			if err := one(mode, filepath.Join(src, f), filepath.Join(dst, f), &buf); err != nil {
				fail(err)
			}
		}
	}
}

// one reads the file at in and writes its bytes as out.
func one(mode, in, out string, buf *[]byte) error {
	var st unix.Stat_t
	if err := unix.Stat(in, &st); err != nil { // the walk's
		return err
	}
	fd, err := unix.Open(in, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Size)+1 > len(*buf) {
		*buf = make([]byte, st.Size+1)
	}
	n := int(st.Size)
	if mode != "write" {
		// One byte more than the size: the end of the file is seen by
		// the same read, as depthspace reads a small file.
		if n, err = unix.Read(fd, (*buf)[:st.Size+1]); err != nil {
			return err
		}
	}
	unix.Close(fd)
	if mode == "read" {
		return nil
	}
	tmp, err := unix.Open(filepath.Dir(out), unix.O_RDWR|unix.O_CLOEXEC|unix.O_TMPFILE, 0o666)
	if err != nil {
		return err
	}
	if w, err := unix.Pwrite(tmp, (*buf)[:n], 0); err != nil || w != n {
		return fmt.Errorf("%s: wrote %d of %d bytes: %v", out, w, n, err)
	}
	if err := unix.Linkat(tmp, "", unix.AT_FDCWD, out, unix.AT_EMPTY_PATH); err != nil {
		return fmt.Errorf("%s: %w (linkat AT_EMPTY_PATH needs CAP_DAC_READ_SEARCH on many kernels)", out, err)
	}
	return unix.Close(tmp)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "tinyfloor:", err)
	os.Exit(1)
}
