package fileio

import (
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// huge is the size of a transparent huge page.
const huge = 2 << 20

// smallRound is what a mapped buffer's size is rounded up to: buffers of
// nearly the same size then reuse each other.
const smallRound = 64 << 10

// mappings are the anonymous mappings behind buffers, by the address of
// their first byte, for releaseBuffer.
var mappings sync.Map // *byte -> []byte (the whole mapping)

// newBuffer returns memory for a work buffer, backed by transparent huge
// pages where the kernel allows it. On this VM a first touch of a fresh
// 4 KiB page costs 11-14 µs, so a 2 MiB buffer costs ~6 ms of page faults
// with small pages and one fault with a huge page.
func newBuffer(n int) []byte {
	if n < huge/2 {
		// Small buffers: a huge page would cost more to zero than the
		// few small-page faults it saves (start-up on tiny inputs).
		return heapBuffer(n)
	}
	// Rounded to small pages, not to a huge page: a huge page is faulted
	// in whole, so a 1 MiB buffer (a sharded array's inner chunk)
	// rounded up to one would take 2 MiB of RSS, and a zstd chunk of
	// 16 MiB and 393 bytes 18 MiB. Rounded to small pages a buffer takes
	// what it is asked for, and the huge pages wholly inside a large
	// buffer are still huge.
	size := (n + smallRound - 1) / smallRound * smallRound
	// Over-allocate to align the start to a huge page.
	m, err := unix.Mmap(-1, 0, size+huge, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return heapBuffer(n)
	}
	off := 0
	if r := int(uintptr(unsafe.Pointer(unsafe.SliceData(m))) % huge); r != 0 {
		off = huge - r
	}
	b := m[off : off+size : off+size]
	_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	mappings.Store(unsafe.SliceData(b), m)
	return b
}

// releaseBuffer unmaps a buffer's mapping, or leaves a heap buffer to the
// garbage collector.
func releaseBuffer(b []byte) {
	if m, ok := mappings.LoadAndDelete(unsafe.SliceData(b)); ok {
		_ = unix.Munmap(m.([]byte))
	}
}
