//go:build unix

package objstore

import "syscall"

// newMem is an empty buffer of capacity n outside the Go heap (anonymous
// memory, kept for the process's life): live buffers on the heap would
// raise the collector's target, and with it the garbage a batch carries.
func newMem(n int) []byte {
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]byte, 0, n)
	}
	return b[:0]
}
