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

// memReader serves decoded or mapped bytes.
type memReader []byte

func (m memReader) ReadAt(p []byte, off int64) (int, error) {
	return copy(p, m[off:]), nil
}

// streamRun computes plan chunk by chunk from t into out, whose data starts
// at base. File outputs are written at offsets by several workers at once;
// stream outputs chunk after chunk in order.
func streamRun(plan *ops.Plan, t *Tensor, out *fileio.Output, base int64, threads, chunkBytes int, progress func(int64)) error {
	if progress == nil {
		progress = func(int64) {}
	}
	adapt := chunkBytes <= 0 // the caller left the size to us
	if adapt {
		chunkBytes = DefaultChunkBytes
	}
	var in chunkInput
	f, off := t.file()
	switch {
	case t.Stream != nil:
		in = &sequential{r: t.Stream, sz: int64(plan.InBytes())}
	case f != nil:
		in = offsetReader{f, off}
	default:
		in = memReader(t.Data)
	}
	seqIn, seqOut := t.Stream != nil, !out.IsFile()
	if sf := out.StreamFile(); sf != nil {
		growPipe(sf)
	}
	ck, err := plan.Chunker(chunkBytes, seqIn, seqOut)
	if err != nil {
		return err
	}
	// In order, a job may have to hold a whole batch item in memory (an
	// s2d of NCHW writes its first byte after one has come in): then the
	// streams are spooled (spool.go). A piped output goes first: the
	// chunks are then those of reading the input in order, usually small,
	// and only if they are not is a piped input spooled too.
	var sp *spool
	var so *outSpool
	if seqOut && ck.MaxBytes() > spoolAbove {
		if so, err = newOutSpool(out, int64(plan.Bytes())); err != nil {
			return err
		}
		defer so.close()
		seqOut = false
		if ck, err = plan.Chunker(chunkBytes, seqIn, seqOut); err != nil {
			return err
		}
	}
	if seqIn && ck.MaxBytes() > spoolAbove {
		if sp, err = newSpool(t.Stream, int64(plan.InBytes())); err != nil {
			return err
		}
		defer func() {
			if sp != nil {
				sp.abandon()
			}
		}()
		in, seqIn = sp, false
		if ck, err = plan.Chunker(chunkBytes, seqIn, seqOut); err != nil {
			return err
		}
	}
	if adapt && ck.Len() > 1 {
		// A chunk is up to B ranges on each side (B: the block's
		// product); with many, each write is short and its fixed cost
		// shows. Chunks grow until ranges reach minSegmentBytes.
		ch := ck.Chunk(0)
		segs := max(len(ch.In), len(ch.Out))
		if want := min(segs*minSegmentBytes, maxChunkBytes); want > chunkBytes {
			if ck, err = plan.Chunker(want, seqIn, seqOut); err != nil {
				return err
			}
		}
	}
	n := ck.Len()
	var dest chunkOutput = out
	if so != nil {
		// Chunks go into the spool by position, from 0.
		dest, base = so, 0
		so.plan(ck)
	}
	if seqIn || seqOut {
		// In order, one chunk at a time, the kernel on every thread. A
		// stream is read ahead by a goroutine of its own: reading chunk
		// i+1 overlaps the kernel and the writing of chunk i.
		dst := fileio.GetBuffer(ck.MaxBytes())
		defer fileio.PutBuffer(dst)
		var err error
		if seqIn && n > 1 {
			err = readAhead(ck, in, func(i int, ch ops.Chunk, src []byte) error {
				if err := runChunk(ck, ch, dest, base, src, dst, threads, progress); err != nil {
					return err
				}
				if so != nil {
					so.chunkDone(i)
				}
				return nil
			})
		} else {
			src := fileio.GetBuffer(ck.MaxBytes())
			defer fileio.PutBuffer(src)
			for i := 0; i < n && err == nil; i++ {
				if err = doChunk(ck, i, in, dest, base, src, dst, threads, progress); err == nil && so != nil {
					so.chunkDone(i)
				}
			}
		}
		if err != nil {
			return err
		}
		if so != nil {
			if err := so.finish(); err != nil {
				return err
			}
		}
		if sp != nil {
			err := sp.finish()
			sp = nil
			return err
		}
		if t.Stream != nil {
			if extra, _ := io.Copy(io.Discard, io.LimitReader(t.Stream, 1<<20)); extra > 0 {
				return fmt.Errorf("bytes beyond the %d data bytes the header describes", plan.InBytes())
			}
		}
		return nil
	}
	// Workers take chunks from a counter; each has its own buffers. With
	// fewer chunks than threads the kernel shares the rest inside a chunk.

	workers := max(1, min(threads, n))
	inner := max(1, threads/workers)
	var next atomic.Int64
	// The first error is the one reported: the others are usually the
	// same cause met by every worker (a spool whose stream has gone).
	var failed atomic.Bool
	var firstErr error
	var errOnce sync.Once
	worker := func(w int) {
		src, dst := fileio.GetBuffer(ck.MaxBytes()), fileio.GetBuffer(ck.MaxBytes())
		defer fileio.PutBuffer(src)
		defer fileio.PutBuffer(dst)
		for !failed.Load() {
			i := int(next.Add(1) - 1)
			if i >= n {
				return
			}
			if err := doChunk(ck, i, in, dest, base, src, dst, inner, progress); err != nil {
				errOnce.Do(func() { firstErr = err })
				failed.Store(true)
				return
			}
			if so != nil {
				so.chunkDone(i)
			}
		}
	}
	if workers == 1 {
		// One chunk (every small file) or -j 1: no goroutine to start.
		worker(0)
	} else {
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() { defer wg.Done(); worker(w) }()
		}
		wg.Wait()
	}
	if firstErr != nil {
		return firstErr
	}
	if so != nil {
		if err := so.finish(); err != nil {
			return err
		}
	}
	if sp != nil {
		err := sp.finish()
		sp = nil
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
