//go:build linux

package main

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// writeProbe: J goroutines write MIB MiB into DST, 4 MiB chunks dealt
// round-robin (chunk i to goroutine i mod J, as the streamed pipeline
// deals them), each from a buffer of its own filled once: it measures
// what one output file takes from several writers, the kernel's work left
// out. DST is made anew (removed first). MODE:
//
//	pwrite          one descriptor shared, pwrite at each chunk's offset
//	pwrite-fds      a descriptor (open file description) per goroutine
//	fallocate       fallocate of the whole size first, then pwrite-fds
//	odirect         fallocate, then O_DIRECT pwrite per goroutine (aligned buffers)
//	mmap            ftruncate, a shared mapping, MADV_POPULATE_WRITE and copy per chunk
//	mmap-fault      the same without MADV_POPULATE_WRITE: a fault per page on first touch
//	vmsplice        a pipe per goroutine: vmsplice the chunk in, splice it to its offset
//	files           the yardstick: the same bytes as J files (DST.0, DST.1, ...)
//
// It prints the seconds from the first write to the last close and the
// GB/s; the file is removed afterwards.
func writeProbe(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("usage: ioprobe write MODE DST MIB J")
	}
	mode, dst := args[0], args[1]
	mib, err1 := strconv.Atoi(args[2])
	jobs, err2 := strconv.Atoi(args[3])
	if err1 != nil || err2 != nil || mib <= 0 || jobs <= 0 || mib%4 != 0 {
		return fmt.Errorf("MIB (a multiple of 4) and J must be positive numbers")
	}
	size := int64(mib) << 20
	names := []string{dst}
	if mode == "files" {
		names = nil
		for j := range jobs {
			names = append(names, dst+"."+strconv.Itoa(j))
		}
	}
	for _, n := range names {
		os.Remove(n)
	}
	defer func() {
		for _, n := range names {
			os.Remove(n)
		}
	}()
	bufs := make([][]byte, jobs)
	for j := range bufs {
		bufs[j] = alignedBuffer(chunk)
		for i := range bufs[j] {
			bufs[j][i] = byte(i*7 + j)
		}
	}
	start := time.Now()
	var err error
	switch mode {
	case "pwrite", "pwrite-fds", "fallocate", "odirect", "vmsplice":
		err = writeRanges(mode, dst, size, bufs)
	case "mmap", "mmap-fault":
		err = writeMapped(dst, size, bufs, mode == "mmap")
	case "files":
		err = writeFiles(names, size, bufs)
	default:
		err = fmt.Errorf("unknown write mode %s", mode)
	}
	if err != nil {
		return err
	}
	el := time.Since(start).Seconds()
	fmt.Printf("%s -j %d: %.3f s, %.2f GB/s\n", mode, jobs, el, float64(size)/el/1e9)
	return nil
}

// alignedBuffer is n bytes at a 4096-byte boundary (O_DIRECT wants it).
func alignedBuffer(n int) []byte {
	b := make([]byte, n+4096)
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 4095)
	return b[off : off+n]
}

// each runs f(j, offsets) on len(bufs) goroutines, goroutine j getting
// the chunks j, j+J, j+2J, ... of size bytes; the first error wins.
func each(size int64, jobs int, f func(j int, offs []int64) error) error {
	var wg sync.WaitGroup
	errs := make([]error, jobs)
	for j := range jobs {
		var offs []int64
		for off := int64(j) * chunk; off < size; off += int64(jobs) * chunk {
			offs = append(offs, off)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[j] = f(j, offs)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func writeRanges(mode, dst string, size int64, bufs [][]byte) error {
	shared, err := unix.Open(dst, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return err
	}
	defer unix.Close(shared)
	if mode == "fallocate" || mode == "odirect" {
		if err := unix.Fallocate(shared, 0, 0, size); err != nil {
			return fmt.Errorf("fallocate: %w", err)
		}
	}
	return each(size, len(bufs), func(j int, offs []int64) error {
		fd := shared
		if mode != "pwrite" {
			flags := unix.O_WRONLY | unix.O_CLOEXEC
			if mode == "odirect" {
				flags |= unix.O_DIRECT
			}
			var err error
			if fd, err = unix.Open(dst, flags, 0); err != nil {
				return fmt.Errorf("open: %w", err)
			}
			defer unix.Close(fd)
		}
		var pipe [2]int
		if mode == "vmsplice" {
			if err := unix.Pipe2(pipe[:], unix.O_CLOEXEC); err != nil {
				return err
			}
			defer unix.Close(pipe[0])
			defer unix.Close(pipe[1])
			// 1 MiB: the most an unprivileged process may ask
			// (/proc/sys/fs/pipe-max-size); splice then moves 1 MiB a call.
			if _, err := unix.FcntlInt(uintptr(pipe[1]), unix.F_SETPIPE_SZ, 1<<20); err != nil {
				return fmt.Errorf("F_SETPIPE_SZ: %w", err)
			}
		}
		for _, off := range offs {
			b := bufs[j][:min(chunk, size-off)]
			if mode == "vmsplice" {
				if err := spliceAt(pipe, fd, b, off); err != nil {
					return err
				}
				continue
			}
			for len(b) > 0 {
				n, err := unix.Pwrite(fd, b, off)
				if err != nil {
					return fmt.Errorf("pwrite: %w", err)
				}
				b, off = b[n:], off+int64(n)
			}
		}
		return nil
	})
}

// spliceAt moves b into the file at off through the pipe: vmsplice maps
// b's pages into the pipe, splice moves them to the file (on tmpfs and
// ext4 the file system copies them into its page cache).
func spliceAt(pipe [2]int, fd int, b []byte, off int64) error {
	for len(b) > 0 {
		iov := []unix.Iovec{{Base: &b[0]}}
		iov[0].SetLen(len(b))
		n, err := unix.Vmsplice(pipe[1], iov, 0)
		if err != nil {
			return fmt.Errorf("vmsplice: %w", err)
		}
		for left := n; left > 0; {
			m, err := unix.Splice(pipe[0], nil, fd, &off, left, unix.SPLICE_F_MOVE)
			if err != nil {
				return fmt.Errorf("splice: %w", err)
			}
			left -= int(m)
		}
		b = b[n:]
	}
	return nil
}

func writeMapped(dst string, size int64, bufs [][]byte, populate bool) error {
	fd, err := unix.Open(dst, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Ftruncate(fd, size); err != nil {
		return err
	}
	m, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return err
	}
	defer unix.Munmap(m)
	return each(size, len(bufs), func(j int, offs []int64) error {
		for _, off := range offs {
			end := min(off+chunk, size)
			// Faulted in as a range, not page by page on first touch.
			if !populate {
			} else if err := unix.Madvise(m[off:end], unix.MADV_POPULATE_WRITE); err != nil {
				return fmt.Errorf("MADV_POPULATE_WRITE: %w", err)
			}
			copy(m[off:end], bufs[j])
		}
		return nil
	})
}

func writeFiles(names []string, size int64, bufs [][]byte) error {
	per := size / int64(len(names))
	return each(int64(len(names))*chunk, len(names), func(j int, _ []int64) error {
		fd, err := unix.Open(names[j], unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o666)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		for off := int64(0); off < per; off += chunk {
			b := bufs[j][:min(chunk, per-off)]
			if _, err := unix.Pwrite(fd, b, off); err != nil {
				return err
			}
		}
		return nil
	})
}
