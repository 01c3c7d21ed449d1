package pipeline

import (
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// DefaultChunkBytes is the size of one chunk of a streamed run. Each worker
// holds an input and an output buffer of this size. Measured end to end
// (1 GiB float32, block 2, paired medians of 12 whole runs, outputs removed
// between runs) against 2 MiB: s2d CRD 0.82x the time, d2s 0.91x, s2d
// NHWC, W3 and W5 within 2-6%; 8 MiB was no better than 4. Longer writes
// into the page cache (1 MiB ranges for block 2) are what pays.
const DefaultChunkBytes = 4 << 20

// Chunks with many ranges (block 4x4: 16 output ranges a chunk) grow so
// that each range is at least minSegmentBytes, up to maxChunkBytes.
// Measured on W3 (uint8, block 4;
// paired medians of 11 whole runs): 2 MiB chunks of 128 KiB writes took
// 0.089 s, 4 MiB chunks 0.074 s, 512 KiB chunks 0.133 s.
const (
	minSegmentBytes = 256 << 10
	maxChunkBytes   = 8 << 20
)

// chunkOutput takes a chunk's output ranges: at their offsets (IsFile),
// or one after the other.
type chunkOutput interface {
	IsFile() bool
	WriteAt(p []byte, off int64) (int, error)
	Write(p []byte) (int, error)
}

// chunkInput reads a chunk's input ranges.
type chunkInput interface {
	ReadAt(p []byte, off int64) (int, error)
}

// sequential adapts a stream to positioned reads that must come in order.
type sequential struct {
	r   io.Reader
	pos int64
	sz  int64
}

func (s *sequential) ReadAt(p []byte, off int64) (int, error) {
	if off != s.pos {
		return 0, fmt.Errorf("internal error: stream read at %d, position %d", off, s.pos)
	}
	n, err := io.ReadFull(s.r, p)
	s.pos += int64(n)
	if err != nil {
		return n, fmt.Errorf("truncated: the header describes %d data bytes but the input ended after %d", s.sz, s.pos)
	}
	return n, nil
}

// offsetReader reads from a file at a fixed offset (the npy data start).
type offsetReader struct {
	r    io.ReaderAt
	base int64
}

func (o offsetReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.r.ReadAt(p, o.base+off)
	if err == io.EOF && n == len(p) {
		err = nil
	}
	if err != nil {
		// The file shrank since its size was checked.
		return n, fmt.Errorf("input could not be read (was the file truncated while in use?): %w", err)
	}
	return n, nil
}

// arriving is the reader of an input still being downloaded (each read
// waits for its bytes), nil for any other.
func (t *Tensor) arriving() io.ReaderAt {
	if t.input == nil || t.lazy != nil || t.Stream != nil || !t.inFile {
		return nil
	}
	return t.input.Arriving()
}

// arrivingReader reads an arriving input at a fixed offset (the npy
// data start); its errors are the download's, which name the object. A
// streamed run reads each byte of the data once (its chunks' input
// ranges are disjoint), so what it has read is freed (Consumed), when in
// is set: the tensor is the input's only one.
type arrivingReader struct {
	r    io.ReaderAt
	in   *fileio.Input
	base int64
}

func (a arrivingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := a.r.ReadAt(p, a.base+off)
	if err == nil && a.in != nil {
		a.in.Consumed(a.base+off, int64(n))
	}
	return n, err
}

// memReader serves decoded or mapped bytes.
type memReader []byte

func (m memReader) ReadAt(p []byte, off int64) (int, error) {
	return copy(p, m[off:]), nil
}

// streamRun computes plan chunk by chunk from t into out, whose data starts
// at base. File outputs are written at offsets by several workers at once;
// stream outputs chunk after chunk in order.
func streamRun(plan *ops.Plan, t *Tensor, out sink, base int64, threads, chunkBytes int, progress func(int64)) error {
	if progress == nil {
		progress = func(int64) {}
	}
	adapt := chunkBytes <= 0 // the caller left the size to us
	if adapt {
		chunkBytes = DefaultChunkBytes
	}
	j := &streamJob{plan: plan, t: t, in: streamInput(plan, t), dest: out, base: base, progress: progress,
		seqIn: t.Stream != nil, seqOut: !out.IsFile(), arriving: t.arriving() != nil}
	defer j.close()
	if sf := out.StreamFile(); sf != nil {
		growPipe(sf)
	}
	if err := j.chunk(out, chunkBytes, adapt); err != nil {
		return err
	}
	if j.seqIn || j.seqOut {
		return j.runInOrder(threads)
	}
	if o, ok := j.dest.(interface{ OnceIn(from, to int64) }); ok {
		// Each chunk's output ranges are disjoint and written once.
		o.OnceIn(j.base, j.base+int64(plan.Bytes()))
	}
	return j.runParallel(threads)
}

// streamJob is one streamed run: where its chunks come from and go, and
// the spools standing in for streams that cannot be worked on in order.
type streamJob struct {
	plan     *ops.Plan
	t        *Tensor
	ck       *ops.Chunker
	in       chunkInput
	dest     chunkOutput
	base     int64 // where the output's data start in dest
	progress func(int64)
	// seqIn and seqOut: the input is read, or the output written, in
	// order (a stream that is not spooled).
	seqIn, seqOut bool
	// arriving: the input is an object still coming in front to back
	// (Source.Arriving): chunks are cut in input order where that keeps
	// them small, so that the first starts once its bytes are in and
	// each worker's next one is likely in by then; they are still read
	// by position, several at once.
	arriving bool
	sp       *spool    // the piped input spooled, nil once finished
	so       *outSpool // the piped output spooled
}

// streamInput reads t's data by position: a stream in order, a file with
// positioned reads, or bytes in memory.
func streamInput(plan *ops.Plan, t *Tensor) chunkInput {
	f, off := t.file()
	switch {
	case t.arriving() != nil && f != nil:
		r := arrivingReader{r: t.arriving(), base: off}
		if t.shared == nil {
			// The input's only tensor: its bytes are read once. Members
			// of a container may share bytes (two npz entries pointing
			// at one stored member), so theirs are kept.
			r.in = t.input
		}
		return r
	case t.Stream != nil:
		return &sequential{r: t.Stream, sz: int64(plan.InBytes())}
	case f != nil:
		return offsetReader{f, off}
	case t.readsInPlace():
		return t.lazy.(io.ReaderAt) // a Polygraphy array, decoded where read
	}
	return memReader(t.Data)
}

// close releases the spools on every return: an input spool not finished
// is abandoned.
func (j *streamJob) close() {
	if j.sp != nil {
		j.sp.abandon()
	}
	if j.so != nil {
		j.so.close()
	}
}

// chunk cuts the plan into the chunks the run takes, spooling the streams
// that need it first since that changes which chunks are possible.
func (j *streamJob) chunk(out sink, chunkBytes int, adapt bool) error {
	var err error
	if j.ck, err = j.chunker(chunkBytes); err != nil {
		return err
	}
	if err := j.spoolStreams(out, chunkBytes); err != nil {
		return err
	}
	if adapt && j.ck.Len() > 1 {
		if err := j.growChunks(chunkBytes); err != nil {
			return err
		}
	}
	if j.so != nil {
		// Chunks go into the spool by position, from 0.
		j.dest, j.base = j.so, 0
		j.so.plan(j.ck)
	}
	return nil
}

// chunker cuts the plan into chunks of about chunkBytes, as the streams
// require; an arriving input's in input order unless that makes them
// bigger than spoolAbove (then in any order: its reads wait all the
// same, the work starts later).
func (j *streamJob) chunker(chunkBytes int) (*ops.Chunker, error) {
	if j.arriving && !j.seqIn {
		ck, err := j.plan.Chunker(chunkBytes, true, j.seqOut)
		if err != nil || ck.MaxBytes() <= spoolAbove {
			return ck, err
		}
	}
	return j.plan.Chunker(chunkBytes, j.seqIn, j.seqOut)
}

// spoolStreams: in order, a job may have to hold a whole batch item in
// memory (an s2d of NCHW writes its first byte after one has come in):
// then the streams are spooled (spool.go). A piped output goes first: the
// chunks are then those of reading the input in order, usually small, and
// only if they are not is a piped input spooled too.
func (j *streamJob) spoolStreams(out sink, chunkBytes int) error {
	if j.seqOut && j.ck.MaxBytes() > spoolAbove {
		so, err := newOutSpool(out, int64(j.plan.Bytes()))
		if err != nil {
			return err
		}
		j.so, j.seqOut = so, false
		if j.ck, err = j.chunker(chunkBytes); err != nil {
			return err
		}
	}
	if j.seqIn && j.ck.MaxBytes() > spoolAbove {
		sp, err := newSpool(j.t.Stream, int64(j.plan.InBytes()))
		if err != nil {
			return err
		}
		j.sp = sp
		j.in, j.seqIn = sp, false
		if j.ck, err = j.chunker(chunkBytes); err != nil {
			return err
		}
	}
	return nil
}

// growChunks: a chunk is up to B ranges on each side (B: the block's
// product); with many, each write is short and its fixed cost shows.
// Chunks grow until ranges reach minSegmentBytes.
func (j *streamJob) growChunks(chunkBytes int) error {
	ch := j.ck.Chunk(0)
	segs := max(len(ch.In), len(ch.Out))
	if want := min(segs*minSegmentBytes, maxChunkBytes); want > chunkBytes {
		ck, err := j.chunker(want)
		if err != nil {
			return err
		}
		j.ck = ck
	}
	return nil
}

// chunkDone tells the output spool that chunk i is in it.
func (j *streamJob) chunkDone(i int) {
	if j.so != nil {
		j.so.chunkDone(i)
	}
}

// runInOrder runs the chunks in order, one at a time, the kernel on every
// thread. A stream is read ahead by a goroutine of its own: reading chunk
// i+1 overlaps the kernel and the writing of chunk i.
func (j *streamJob) runInOrder(threads int) error {
	ck, n := j.ck, j.ck.Len()
	dst := fileio.GetBuffer(ck.MaxBytes())
	defer fileio.PutBuffer(dst)
	var err error
	if j.seqIn && n > 1 {
		err = readAhead(ck, j.in, func(i int, ch ops.Chunk, src []byte) error {
			if err := runChunk(ck, ch, j.dest, j.base, src, dst, threads, j.progress); err != nil {
				return err
			}
			j.chunkDone(i)
			return nil
		})
	} else {
		src := fileio.GetBuffer(ck.MaxBytes())
		defer fileio.PutBuffer(src)
		for i := 0; i < n && err == nil; i++ {
			if err = doChunk(ck, i, j.in, j.dest, j.base, src, dst, threads, j.progress); err == nil {
				j.chunkDone(i)
			}
		}
	}
	if err != nil {
		return err
	}
	// A spooled input is checked for its end by its spool.
	spooledIn := j.sp != nil
	if err := j.finish(); err != nil || spooledIn {
		return err
	}
	if j.t.Stream != nil {
		if extra, _ := io.Copy(io.Discard, io.LimitReader(j.t.Stream, 1<<20)); extra > 0 {
			return fmt.Errorf("bytes beyond the %d data bytes the header describes", j.plan.InBytes())
		}
	}
	return nil
}

// runParallel: workers take chunks from a counter; each has its own
// buffers. With fewer chunks than threads the kernel shares the rest
// inside a chunk.
func (j *streamJob) runParallel(threads int) error {
	ck, n := j.ck, j.ck.Len()
	workers := max(1, min(threads, n))
	inner := max(1, threads/workers)
	var next atomic.Int64
	// The first error is the one reported: the others are usually the
	// same cause met by every worker (a spool whose stream has gone).
	var failed atomic.Bool
	var firstErr error
	var errOnce sync.Once
	worker := func() {
		src, dst := fileio.GetBuffer(ck.MaxBytes()), fileio.GetBuffer(ck.MaxBytes())
		defer fileio.PutBuffer(src)
		defer fileio.PutBuffer(dst)
		for !failed.Load() {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			if err := doChunk(ck, i, j.in, j.dest, j.base, src, dst, inner, j.progress); err != nil {
				errOnce.Do(func() { firstErr = err })
				failed.Store(true)
				return
			}
			j.chunkDone(i)
		}
	}
	if workers == 1 {
		// One chunk (every small file) or -j 1: no goroutine to start.
		worker()
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Add(1)
			go func() { defer wg.Done(); worker() }()
		}
		wg.Wait()
	}
	if firstErr != nil {
		return firstErr
	}
	return j.finish()
}

// finish completes the spools once every chunk is done: it waits until
// the output spool has sent everything and the input spool has read the
// whole stream and found nothing wrong with it (bytes beyond the data).
func (j *streamJob) finish() error {
	if j.so != nil {
		if err := j.so.finish(); err != nil {
			return err
		}
	}
	if j.sp != nil {
		err := j.sp.finish()
		j.sp = nil
		return err
	}
	return nil
}

// readAhead reads the chunks of ck in order on a goroutine of its own,
// into two buffers by turns, and calls do with each as its input has come
// in; it stops at the first error of either side.
func readAhead(ck *ops.Chunker, in chunkInput, do func(i int, ch ops.Chunk, src []byte) error) error {
	type read struct {
		ch  ops.Chunk
		src []byte
		err error
	}
	full := make(chan read, 1)
	free := make(chan []byte, 2)
	stop := make(chan struct{})
	bufs := [2][]byte{fileio.GetBuffer(ck.MaxBytes()), fileio.GetBuffer(ck.MaxBytes())}
	free <- bufs[0]
	free <- bufs[1]
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(full)
		for i := 0; i < ck.Len(); i++ {
			var src []byte
			select {
			case src = <-free:
			case <-stop:
				return
			}
			ch := ck.Chunk(i)
			err := readChunk(ch, in, src)
			select {
			case full <- read{ch, src, err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	var err error
	i := 0
	for r := range full {
		if err = r.err; err == nil {
			err = do(i, r.ch, r.src)
		}
		if err != nil {
			break
		}
		free <- r.src
		i++
	}
	close(stop)
	if err != nil {
		// The reader may be blocked on a stream that sends nothing more:
		// not waited for, and its buffers left to the collector.
		return err
	}
	<-done
	fileio.PutBuffer(bufs[0])
	fileio.PutBuffer(bufs[1])
	return nil
}

// doChunk reads, computes and writes chunk i, then reports its bytes done.
func doChunk(ck *ops.Chunker, i int, in chunkInput, out chunkOutput, base int64, src, dst []byte, threads int, progress func(int64)) error {
	ch := ck.Chunk(i)
	if err := readChunk(ch, in, src); err != nil {
		return err
	}
	return runChunk(ck, ch, out, base, src, dst, threads, progress)
}

// readChunk reads a chunk's input ranges into src.
func readChunk(ch ops.Chunk, in chunkInput, src []byte) error {
	b := src[:ch.Bytes]
	for _, s := range ch.In {
		if _, err := in.ReadAt(b[:s.Len], s.Off); err != nil {
			return err
		}
		b = b[s.Len:]
	}
	return nil
}

// runChunk computes a chunk whose input is in src and writes its output.
func runChunk(ck *ops.Chunker, ch ops.Chunk, out chunkOutput, base int64, src, dst []byte, threads int, progress func(int64)) error {
	src, dst = src[:ch.Bytes], dst[:ch.Bytes]
	if err := ck.Run(ch, dst, src, threads); err != nil {
		return err
	}
	b := dst
	for _, s := range ch.Out {
		var err error
		if out.IsFile() {
			_, err = out.WriteAt(b[:s.Len], base+s.Off)
		} else {
			_, err = out.Write(b[:s.Len])
		}
		if err != nil {
			return &writeError{err}
		}
		b = b[s.Len:]
	}
	progress(int64(ch.Bytes))
	return nil
}

// writeError is a failure to write the output (a full disk), told from
// the input's errors so that the message names the output.
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }
