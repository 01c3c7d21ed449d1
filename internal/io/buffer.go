package fileio

import (
	"math/bits"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Work buffers (a chunk's input and output, a small file's bytes) are
// taken with GetBuffer and handed back with PutBuffer, so that a batch of
// thousands of files reuses the same few buffers instead of allocating
// new ones per file: memory then grows with neither the number nor the
// size of the files, and the garbage collector has nothing to collect.
//
// Buffers handed back are kept while their total stays under poolBytes,
// enough for every worker's pair of chunk buffers at the default chunk
// sizes; the rest are released to the system at once (unmapped). Heap
// buffers of 64-512 KiB (a small file's) are kept apart, per processor
// (hot), where the collector may take them back.
const poolBytes = 32 << 20

// minBufferBytes is the smallest buffer made: smaller requests share the
// size class, so a batch of small files of different sizes reuses them.
const minBufferBytes = 64 << 10

// buffersTaken and buffersOut count GetBuffer's buffers, and those not
// handed back yet, once CountBuffers has been called: a reader that takes
// one per chunk shows by them that it hands each back (BufferCounts).
// Uncounted otherwise: every worker of a batch would write both for
// every buffer, and the counters' cache line would move from core to
// core with every small file.
var (
	buffersTaken, buffersOut atomic.Int64
	countBuffers             atomic.Bool
)

// CountBuffers starts the counts BufferCounts reports (tests).
func CountBuffers() { countBuffers.Store(true) }

// BufferCounts is how many buffers GetBuffer has given, and how many of
// them are not handed back.
func BufferCounts() (taken, out int64) { return buffersTaken.Load(), buffersOut.Load() }

var pool struct {
	sync.Mutex
	free []([]byte) // full capacity
	held int        // bytes in free
}

// GetBuffer returns a buffer of n bytes (contents undefined), reused when
// one that is large enough was handed back.
func GetBuffer(n int) []byte {
	if countBuffers.Load() {
		buffersTaken.Add(1)
		buffersOut.Add(1)
	}
	if n >= spareBytes {
		SpareP()
	}
	if c := heapClass(n); c >= 0 {
		if p, _ := hot[c].Get().(*byte); p != nil {
			return unsafe.Slice(p, minBufferBytes<<c)[:n]
		}
	}
	pool.Lock()
	b := takeSmallest(&pool.free, func(c int) bool { return c >= n })
	pool.held -= cap(b)
	pool.Unlock()
	if b != nil {
		return b[:n]
	}
	return newBuffer(n)[:n]
}

// takeSmallest removes from *free the buffer of least capacity among
// those whose capacity fits, and returns it; nil when none fits. The
// caller holds the list's lock.
func takeSmallest(free *[][]byte, fits func(c int) bool) []byte {
	list, best := *free, -1
	for i, b := range list {
		if c := cap(b); fits(c) && (best < 0 || c < cap(list[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b, last := list[best], len(list)-1
	list[best], list[last] = list[last], nil
	*free = list[:last]
	return b
}

// PutBuffer hands b (from GetBuffer) back; b must not be used after.
func PutBuffer(b []byte) {
	if cap(b) == 0 {
		return
	}
	if countBuffers.Load() {
		buffersOut.Add(-1)
	}
	b = b[:cap(b)]
	if c := heapClass(cap(b)); c >= 0 && cap(b) == minBufferBytes<<c {
		hot[c].Put(unsafe.SliceData(b))
		return
	}
	pool.Lock()
	if pool.held+cap(b) <= poolBytes {
		pool.free = append(pool.free, b)
		pool.held += cap(b)
		pool.Unlock()
		return
	}
	pool.Unlock()
	releaseBuffer(b)
}

// hot keeps the heap buffers of each size class handed back, per
// processor (sync.Pool): the next GetBuffer on the same processor takes
// the buffer it last handed back, still in that core's cache, and no
// lock is shared with the other workers. A batch of small files takes
// and hands back two buffers a file; from one shared list they moved
// between the cores' caches with every file.
var hot [heapClasses]sync.Pool

// heapClasses is the number of size classes kept in hot: 64 KiB to
// 512 KiB, all of them heap buffers (newBuffer maps from 1 MiB).
const heapClasses = 4

// heapClass is the class in hot of a buffer of n bytes, -1 for none.
func heapClass(n int) int {
	if n > minBufferBytes<<(heapClasses-1) {
		return -1
	}
	if n <= minBufferBytes {
		return 0
	}
	return bits.Len(uint(n-1)) - bits.Len(uint(minBufferBytes-1))
}

// heapBuffer is a buffer from the Go heap, rounded up to a size class.
func heapBuffer(n int) []byte {
	size := minBufferBytes
	for size < n {
		size *= 2
	}
	return make([]byte, size)
}
