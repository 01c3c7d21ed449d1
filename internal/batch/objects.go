package batch

import fileio "github.com/depthspace/depthspace/internal/io"

// ioSlots is how many files a batch keeps in flight. For local files it
// is -j: their time is CPU and local I/O. A batch that reads or writes
// objects spends most of each file's time waiting on the network (a
// round trip and a first byte per request, 10-100 ms to a region), so
// it keeps at least --io-jobs files in flight (fileio.ObjectOptions):
// while some are computed, the others are downloading or uploading.
// Each file still runs on at most its share of -j threads (transform),
// and a file of many chunks takes as many slots, up to all of them, as
// it takes threads in a local batch.
func ioSlots(opts Options, threads int) int {
	if !objectBatch(opts) {
		return threads
	}
	return max(threads, fileio.ObjectOptions.Transfers)
}

// objectBatch: an input or the output directory is an object store's.
func objectBatch(opts Options) bool {
	if isObject(opts.OutDir) {
		return true
	}
	for _, in := range opts.Inputs {
		if isObject(in) {
			return true
		}
	}
	return false
}
