//go:build linux

// Command ioprobe measures the I/O primitives depthspace can build on, on
// this machine: reading a file through a mapping (plain, MADV_SEQUENTIAL,
// MAP_POPULATE) or with pread into a reused buffer, writing one through a
// mapping or with pwrite from a reused buffer, and the ways several
// goroutines can write one output file. docs/performance.md quotes it.
//
//	ioprobe read  MODE FILE          MODE: pread | mmap | mmap-seq | mmap-populate
//	ioprobe copy  MODE SRC DST       pread+pwrite | mmap-in+pwrite | mmap-in+mmap-out, -j 2
//	ioprobe write MODE DST MIB J     J goroutines write MIB MiB into DST (write.go)
package main

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"
)

const chunk = 4 << 20

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: ioprobe read|copy|write MODE FILE [DST | MIB J]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "read":
		err = read(os.Args[2], os.Args[3])
	case "copy":
		err = copyFile(os.Args[2], os.Args[3], os.Args[4])
	case "write":
		err = writeProbe(os.Args[2:])
	default:
		err = fmt.Errorf("unknown %s", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// sum touches every 8th word so the pages are really read.
func sum(b []byte) uint64 {
	var s uint64
	w := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
	for i := 0; i < len(w); i += 8 {
		s += w[i]
	}
	return s
}

func mapFile(f *os.File, size int64, mode string) ([]byte, error) {
	flags := syscall.MAP_SHARED
	if mode == "mmap-populate" {
		flags |= syscall.MAP_POPULATE
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, flags)
	if err == nil && mode == "mmap-seq" {
		syscall.Madvise(b, syscall.MADV_SEQUENTIAL)
	}
	return b, err
}

func read(mode, name string) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	fi, _ := f.Stat()
	size := fi.Size()
	var total uint64
	var mu sync.Mutex
	var wg sync.WaitGroup
	if mode == "pread" {
		for t := 0; t < 2; t++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, chunk)
				var s uint64
				for off := int64(t) * chunk; off < size; off += 2 * chunk {
					n, _ := f.ReadAt(buf, off)
					s += sum(buf[:n&^63])
				}
				mu.Lock()
				total += s
				mu.Unlock()
			}()
		}
		wg.Wait()
	} else {
		b, err := mapFile(f, size, mode)
		if err != nil {
			return err
		}
		for t := 0; t < 2; t++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				half := size / 2 &^ 63
				lo, hi := int64(t)*half, half
				if t == 1 {
					hi = size &^ 63
				}
				s := sum(b[lo:hi])
				mu.Lock()
				total += s
				mu.Unlock()
			}()
		}
		wg.Wait()
	}
	fmt.Println(total)
	return nil
}

func copyFile(mode, src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	fi, _ := in.Stat()
	size := fi.Size()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer out.Close()
	var wg sync.WaitGroup
	var inMap, outMap []byte
	if mode != "pread+pwrite" {
		if inMap, err = mapFile(in, size, "mmap-seq"); err != nil {
			return err
		}
	}
	if mode == "mmap-in+mmap-out" {
		out.Truncate(size)
		if outMap, err = syscall.Mmap(int(out.Fd()), 0, int(size), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED); err != nil {
			return err
		}
	}
	for t := 0; t < 2; t++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, chunk)
			for off := int64(t) * chunk; off < size; off += 2 * chunk {
				end := min(off+chunk, size)
				switch mode {
				case "pread+pwrite":
					n, _ := in.ReadAt(buf[:end-off], off)
					out.WriteAt(buf[:n], off)
				case "mmap-in+pwrite":
					copy(buf, inMap[off:end]) // stands in for the kernel
					out.WriteAt(buf[:end-off], off)
				case "mmap-in+mmap-out":
					copy(outMap[off:end], inMap[off:end])
				}
			}
		}()
	}
	wg.Wait()
	return nil
}
