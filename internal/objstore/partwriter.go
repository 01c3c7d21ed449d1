package objstore

import (
	"bytes"
	"context"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// A PartWriter makes an object from bytes written to it by position
// (WriteAt, from several goroutines) or in order (Write), while they are
// still being produced. The object is cut into parts, fixed byte ranges
// of partSizeFor its size, and a part is sent as soon as every byte of
// it has been written and some byte after it has (so that it is not the
// last one, which Commit sends), in whatever order parts complete, up to
// streams in flight (a write that completes one more waits for a free
// slot): the upload overlaps the work that produces the object instead
// of following it, even when that work fills the object in several
// places at once (an s2d of NCHW read front to back writes four
// quarters). The bytes are held in memory up to inMemory (an object that
// small is sent from there, with no file); past that they go through a
// scratch file of the caller's (page cache, not this process's memory),
// from which each part is read by position when it is sent, so memory
// does not grow with the object. A byte written again after its part
// was sent makes the part be sent again at Commit (S3 keeps the last
// upload of a part number). Nothing is visible until Commit: an object
// that fits in one part is one PUT then, a larger one a multipart upload
// completed then with its parts in order. Abort, a failed part or
// AbortAll (a signal) cancels the parts in flight, waits for them,
// aborts the upload and checks it is gone, as Upload does.
type PartWriter struct {
	s      *Store
	u      URL
	open   func() (*os.File, error) // the scratch file, made when needed
	ctx    context.Context
	cancel context.CancelFunc

	// wm lets one write in at a time (as a file output's writes, see
	// fileio.Output.wmu) and guards what follows.
	wm      sync.Mutex
	f       *os.File // nil while the bytes are in mem
	mem     []byte   // the object while it is small: len is its end so far
	size    int64    // the furthest byte written, or the size Reserve gave
	pos     int64    // where Write goes on
	written fileio.Extents
	ps      int64 // the part size, fixed when the first part is sent
	// sent: the parts handed to a request (by index from 0).
	sent map[int64]bool
	// unseen: the file is written through a mapping (File): no part is
	// known complete before Commit.
	unseen bool
	up     *upload
	// parts counts the parts in flight, and one more while the writer
	// is open: AbortAll may wait on it at any time, so it never drops
	// to zero and rises again. flight counts the parts in flight alone,
	// for Commit.
	parts, flight sync.WaitGroup
	slots         chan struct{} // a token per part in flight

	mu   sync.Mutex
	done map[int64]types.CompletedPart
	err  error // the first part's failure
	// resend: parts written to again since they were sent. A request
	// of such a part that fails is no failure (its bytes may have
	// changed under its checksum): it is sent again at Commit.
	resend map[int64]bool
	// once: bytes [once.from, once.to) are written once each (OnceIn):
	// a part wholly inside, once stored, is dropped from the scratch
	// file; dropped are those parts.
	once    struct{ from, to int64 }
	dropped map[int64]bool
}

// inMemory: an object up to this size is held in memory, not written to
// a scratch file and read back, while one of memBuffers buffers is free.
// A file for each output of a batch of 1,000 objects of 1 MiB cost 1.2 s
// of the client's 4 s of CPU (creating, writing, reading back and
// freeing it). The buffers are made once, outside the Go heap, and kept:
// with one per writer on the heap, made and dropped, 16 objects in
// flight peaked at 136 MiB RssAnon against 66 with files (measured with
// the collector at GOGC 200), and 8 kept on the heap still at 104-109.
const (
	inMemory   = 2 << 20
	memBuffers = 8
)

var (
	memFree = make(chan []byte, memBuffers)
	memMade atomic.Int32
)

// getMem is a free inMemory buffer, or nil when all memBuffers are in use.
func getMem() []byte {
	select {
	case b := <-memFree:
		return b
	default:
	}
	if memMade.Add(1) <= memBuffers {
		return newMem(inMemory)
	}
	memMade.Add(-1)
	return nil
}

// NewPartWriter starts writing the object u; past inMemory bytes they go
// through the empty scratch file that open makes, which the writer
// closes when it is committed or aborted.
func (s *Store) NewPartWriter(ctx context.Context, u URL, open func() (*os.File, error)) *PartWriter {
	ctx, cancel := context.WithCancel(ctx)
	w := &PartWriter{s: s, u: u, open: open, mem: getMem(), ctx: ctx, cancel: cancel, slots: make(chan struct{}, streams),
		sent: map[int64]bool{}, resend: map[int64]bool{}, dropped: map[int64]bool{}, done: map[int64]types.CompletedPart{}}
	w.parts.Add(1)
	return w
}

// Write appends p after the bytes Write wrote before.
func (w *PartWriter) Write(p []byte) (int, error) {
	w.wm.Lock()
	defer w.wm.Unlock()
	n, err := w.writeAt(p, w.pos)
	w.pos += int64(n)
	return n, err
}

// WriteAt writes p at off, and sends the parts it completes.
func (w *PartWriter) WriteAt(p []byte, off int64) (int, error) {
	w.wm.Lock()
	defer w.wm.Unlock()
	return w.writeAt(p, off)
}

func (w *PartWriter) writeAt(p []byte, off int64) (int, error) {
	if err := w.failed(); err != nil {
		return 0, err
	}
	end := off + int64(len(p))
	var n int
	var err error
	if w.mem != nil && end <= min(inMemory, partSize) {
		if end > int64(len(w.mem)) {
			w.mem = w.mem[:end] // bytes skipped are zeroed when read (zeroGaps)
		}
		n = copy(w.mem[off:], p)
	} else {
		if w.f == nil {
			if err := w.spill(); err != nil {
				return 0, err
			}
		}
		if err := w.rewriting(off, end); err != nil {
			return 0, err
		}
		n, err = w.f.WriteAt(p, off)
	}
	w.size = max(w.size, off+int64(n))
	w.written.Add(off, int64(n))
	if err != nil || w.f == nil || n == 0 {
		return n, err
	}
	return n, w.sendComplete(off, off+int64(n))
}

// sendComplete sends the parts that bytes [from, to), just written,
// complete, and marks those already sent to be sent again.
func (w *PartWriter) sendComplete(from, to int64) error {
	if w.ps == 0 {
		if w.unseen || w.size <= partSize {
			return nil // no part can be sent yet
		}
		w.ps = partSizeFor(w.size)
	}
	for k := w.partOf(from); ; k++ {
		off, n := w.part(k)
		if off >= to {
			return nil
		}
		if w.sent[k] {
			continue // marked to be sent again before the write (rewriting)
		}
		if w.unseen || off+n >= w.size || !w.written.Covers(off, n) {
			continue
		}
		if err := w.send(k, n); err != nil {
			return err
		}
	}
}

// part is part k's range, from 0: parts of ps where the size was known
// to need more than partSize (Reserve, or written that far, before the
// first part went); else, as the object may still grow past what
// 10,000 parts of partSize hold (156 GiB, written in order), partSize
// for the first half of them and 16 times that for the rest, so that an
// object up to 1.3 TiB fits while parts stay 16 MiB for every object up
// to 78 GiB.
func (w *PartWriter) part(k int64) (off, n int64) {
	const half = maxParts / 2
	if w.ps > partSize || k < half {
		return k * w.ps, w.ps
	}
	return half*partSize + (k-half)*16*partSize, 16 * partSize
}

// partOf is the part that holds byte off.
func (w *PartWriter) partOf(off int64) int64 {
	const half = maxParts / 2
	if w.ps > partSize || off < half*partSize {
		return off / w.ps
	}
	return half + (off-half*partSize)/(16*partSize)
}

// ReadAt reads back what was written at off.
func (w *PartWriter) ReadAt(p []byte, off int64) (int, error) {
	w.wm.Lock()
	defer w.wm.Unlock()
	if w.f != nil {
		if err := w.droppedIn(off, off+int64(len(p))); err != nil {
			return 0, err
		}
		return w.f.ReadAt(p, off)
	}
	w.zeroGaps()
	if off >= int64(len(w.mem)) {
		return 0, io.EOF
	}
	n := copy(p, w.mem[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Reserve sizes the object: bytes not written read as zeros. One too big
// for memory goes to its scratch file at once.
func (w *PartWriter) Reserve(size int64) error {
	w.wm.Lock()
	defer w.wm.Unlock()
	if size <= w.size {
		return nil
	}
	if w.mem != nil && size <= min(inMemory, partSize) {
		// Not cleared: a layout writes every byte it reserves, and
		// clearing 1 MiB per object was a tenth of a 1 MiB batch's
		// CPU. What is read before it is written is zeroed then.
		w.mem = w.mem[:size]
	} else {
		if w.f == nil {
			if err := w.spill(); err != nil {
				return err
			}
		}
		if err := w.f.Truncate(size); err != nil {
			return err
		}
	}
	w.size = size
	return nil
}

// File is the scratch file, sized to size, for a writer that writes it
// through a mapping: those writes are not seen, so from then on every
// part is sent at Commit (those sent already again).
func (w *PartWriter) File(size int64) (*os.File, error) {
	w.wm.Lock()
	defer w.wm.Unlock()
	if w.f == nil {
		if err := w.spill(); err != nil {
			return nil, err
		}
	}
	if err := w.f.Truncate(max(size, w.size)); err != nil {
		return nil, err
	}
	w.size = max(size, w.size)
	w.unseen = true
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.dropped) > 0 {
		return nil, errDropped
	}
	w.once.to = 0 // written through the mapping, maybe again
	for k := range w.sent {
		w.resend[k] = true
	}
	return w.f, nil
}

// Size is the object's size so far: its furthest byte written, or the
// size given to Reserve or File.
func (w *PartWriter) Size() int64 {
	w.wm.Lock()
	defer w.wm.Unlock()
	return w.size
}

// zeroGaps clears the bytes of the memory buffer that were not written:
// it is reused, and they must read as zeros.
func (w *PartWriter) zeroGaps() {
	w.written.Gaps(int64(len(w.mem)), func(off, n int64) { clear(w.mem[off : off+n]) })
}

// spill moves the bytes held in memory into the scratch file, which
// takes the rest.
func (w *PartWriter) spill() error {
	f, err := w.open()
	if err != nil {
		return err
	}
	w.zeroGaps()
	w.f = f
	_, err = f.WriteAt(w.mem, 0)
	w.release()
	return err
}

// release gives the memory buffer back.
func (w *PartWriter) release() {
	if w.mem != nil {
		memFree <- w.mem[:0] // never waits: there are at most memBuffers
		w.mem = nil
	}
}

// close closes the scratch file, or gives the memory back.
func (w *PartWriter) close() {
	if w.f != nil {
		w.f.Close()
	}
	w.release()
}

// failed is the first part's failure, or the context's end (AbortAll).
func (w *PartWriter) failed() error {
	w.mu.Lock()
	err := w.err
	w.mu.Unlock()
	if err == nil {
		err = w.ctx.Err()
	}
	return err
}

// send sends part k, bytes [k*ps, k*ps+n), waiting for a free slot, and
// starts the multipart upload with the first part.
func (w *PartWriter) send(k, n int64) error {
	if w.up == nil {
		w.s.abortLeftBehind(w.ctx, w.u) // journal.go: uploads of runs that are over
		up, err := w.s.begin(w.ctx, w.u, w.cancel, &w.parts)
		if err != nil {
			return err
		}
		w.up = up
	}
	if k >= maxParts {
		return &Error{Msg: "the object is larger than S3's 10,000 parts can hold"}
	}
	select {
	case w.slots <- struct{}{}:
	case <-w.ctx.Done():
		return w.failed()
	}
	w.sent[k] = true
	w.mu.Lock()
	delete(w.resend, k)
	w.mu.Unlock()
	w.parts.Add(1)
	w.flight.Add(1)
	go func() {
		defer w.parts.Done()
		defer w.flight.Done()
		defer func() { <-w.slots }()
		off, _ := w.part(k)
		p, err := w.s.putPart(w.ctx, w.u, w.up.id, int32(k)+1, w.f, off, n)
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			if w.err == nil && !w.resend[k] {
				w.err = err
				w.cancel()
			}
			return
		}
		w.done[k] = p
		w.drop(k, off, n)
	}()
	return nil
}

// OnceIn says that the caller writes each byte of [from, to) once (a
// chunked run writing an array's data by position): a part wholly
// inside that range is freed from the scratch file once the server has
// stored it (drop). Bytes outside it (a header patched at the end) are
// kept as before.
func (w *PartWriter) OnceIn(from, to int64) {
	w.mu.Lock()
	w.once.from, w.once.to = from, to
	w.mu.Unlock()
}

// errDropped: bytes of a part that was stored and then freed from the
// scratch file were to be written or read again, which OnceIn's caller
// said it would not do; sent again they would be zeros.
var errDropped = &Error{Msg: "internal error: an output part already uploaded and freed was written or read again"}

// rewriting marks the parts already sent that bytes [from, to) fall in
// to be sent again at Commit, before the bytes are written, so that drop
// never frees bytes written after their part went; or refuses, if such
// a part was dropped. Called under wm.
func (w *PartWriter) rewriting(from, to int64) error {
	return w.touch(from, to, true)
}

// droppedIn refuses a read of bytes [from, to) that a dropped part held.
func (w *PartWriter) droppedIn(from, to int64) error {
	return w.touch(from, to, false)
}

// touch refuses bytes [from, to) if a dropped part held any; else, when
// they are to be written (rewrite), marks the sent parts among theirs to
// be sent again.
func (w *PartWriter) touch(from, to int64, rewrite bool) error {
	if w.ps == 0 || from >= to {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for k := w.partOf(from); ; k++ {
		if off, _ := w.part(k); off >= to {
			return nil
		}
		if w.dropped[k] {
			return errDropped
		}
		if rewrite && w.sent[k] {
			w.resend[k] = true
		}
	}
}

// drop frees part k, bytes [off, off+n), from the scratch file once the
// server has stored it, if it lies inside OnceIn's range and was not
// written since it went, by punching a hole: its pages leave the page
// cache, dirty or not. Without it a 1 GiB output stayed 1 GiB of dirty
// pages in TMPDIR beside the input's scratch file and the server's own
// writes; on ext4 writeback and dirty throttling then held the run back
// (10.5 s with TMPDIR on ext4 against 5.7 s on tmpfs, 1 GiB through a
// 20 ms proxy). Where holes cannot be punched the bytes stay. Called
// under mu.
func (w *PartWriter) drop(k, off, n int64) {
	if w.resend[k] || off < w.once.from || off+n > w.once.to || w.f == nil {
		return
	}
	if fileio.PunchHole(w.f, off, n) == nil {
		w.dropped[k] = true
	}
}

// Written is how many bytes the object has.
func (w *PartWriter) Written() int64 { return w.Size() }

// Commit makes the object from every byte written: one PUT if they fit
// in a part, else the parts not sent yet (or written since they were),
// then, once every part is stored, the multipart upload completed with
// its parts in order. On a failure nothing is left.
func (w *PartWriter) Commit() error {
	w.wm.Lock()
	defer w.wm.Unlock()
	defer w.close()
	defer w.cancel()
	if w.up == nil && w.size <= partSize {
		w.parts.Done()
		if err := w.failed(); err != nil {
			return err
		}
		w.s.abortLeftBehind(w.ctx, w.u)
		if w.f != nil {
			return w.s.put(w.ctx, w.u, w.f, w.size)
		}
		// From memory, its checksum taken where the bytes are: through
		// put's reader, each object of a 1,000-object batch cost a
		// 256 KiB buffer and a copy.
		w.zeroGaps()
		sum := crcHeader(crc32.Checksum(w.mem, castagnoli()))
		return w.s.putSum(w.ctx, w.u, bytes.NewReader(w.mem), w.size, sum)
	}
	if w.ps == 0 {
		w.ps = partSizeFor(w.size)
	}
	err := w.sendRest()
	w.parts.Done()
	// Every part has returned before anything else: no part request is
	// still in flight when the upload is completed or aborted.
	w.parts.Wait()
	if err == nil {
		err = w.failed()
	}
	if err == nil {
		n := w.partOf(w.size-1) + 1
		done := make([]types.CompletedPart, n)
		for k := range n {
			done[k] = w.done[k]
		}
		err = w.s.complete(w.ctx, w.u, w.up.id, done)
	}
	if err != nil {
		w.stop()
		return err
	}
	w.up.finish()
	return nil
}

// sendRest sends every part not sent, or written since it was sent (once
// its first request has returned: two requests for one part number could
// be stored in either order).
func (w *PartWriter) sendRest() error {
	n := w.partOf(w.size-1) + 1
	if n > maxParts {
		return &Error{Msg: fmt.Sprintf("the object (%d bytes) is larger than S3's 10,000 parts can hold", w.size)}
	}
	w.mu.Lock()
	again := len(w.resend) > 0
	w.mu.Unlock()
	if again {
		w.flight.Wait() // their failures are told from others by resend
	}
	w.mu.Lock()
	resend := w.resend
	w.resend = map[int64]bool{}
	w.mu.Unlock()
	for k := range n {
		if w.sent[k] && !resend[k] {
			continue
		}
		off, size := w.part(k)
		if err := w.send(k, min(size, w.size-off)); err != nil {
			return err
		}
	}
	return nil
}

// Cancel ends the writer's requests, from any goroutine: a Commit under
// way fails (its upload aborted), as after a failed part. It is for a
// caller that has given up waiting for the Commit; Abort is for a writer
// never committed.
func (w *PartWriter) Cancel() { w.cancel() }

// Abort leaves nothing of the object: the parts in flight are cancelled
// and waited for, then the upload is aborted and checked gone.
func (w *PartWriter) Abort() {
	w.cancel()
	w.wm.Lock()
	defer w.wm.Unlock()
	defer w.close()
	w.parts.Done()
	w.parts.Wait()
	if w.up != nil {
		w.stop()
	}
}

// stop aborts the multipart upload after a failure; under AbortAll (a
// signal) that is its work, and the process ends with the signal's
// status once it is done, so this goroutine waits for that.
func (w *PartWriter) stop() {
	if interrupted.Load() {
		select {}
	}
	w.up.abort()
}
