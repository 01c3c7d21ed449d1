package pipeline

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// A piped input whose job cannot go through in small pieces — an s2d of
// NCHW data writes its first output bytes only once a whole batch item
// has come in, 256 MiB for a [4, 64, 1024, 1024] float32 tensor — used to
// be read a batch item at a time into two buffers of that size (memory
// twice the item), with reading, the kernel and writing one after the
// other. Such a stream is now spooled: a goroutine of its own copies it
// into an unlinked scratch file as it arrives, and the run reads its
// chunks from there by position, in output order, each waiting until its
// bytes have arrived. Memory holds chunk buffers only (the scratch file's
// pages belong to the page cache), and reading the pipe overlaps the
// kernel and the writing.

// spoolAbove: a stream whose in-order chunks would be larger than this is
// spooled.
var spoolAbove = 16 << 20

type spool struct {
	f    *os.File
	size int64 // the data bytes the header describes

	mu   sync.Mutex
	cond *sync.Cond
	have int64 // bytes in f so far
	done bool  // the filling goroutine has finished
	err  error // why it finished early, or bytes beyond the data

	stop     atomic.Bool // the run is over: stop reading
	finished chan struct{}
}

func newSpool(r io.Reader, size int64) (*spool, error) {
	f, err := fileio.Scratch()
	if err != nil {
		return nil, fmt.Errorf("cannot make a scratch file to hold the piped input: %w", err)
	}
	s := &spool{f: f, size: size, finished: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.fill(r)
	return s, nil
}

// fill copies the stream into the file, publishing what has arrived.
func (s *spool) fill(r io.Reader) {
	defer close(s.finished)
	buf := fileio.GetBuffer(1 << 20)
	defer fileio.PutBuffer(buf)
	var off int64
	var err error
	for off < s.size && err == nil && !s.stop.Load() {
		var n int
		n, err = io.ReadFull(r, buf[:min(int64(len(buf)), s.size-off)])
		if n > 0 {
			if _, werr := s.f.WriteAt(buf[:n], off); werr != nil {
				s.end(off, fmt.Errorf("writing the scratch file that holds the piped input: %w", werr))
				return
			}
			off += int64(n)
			s.mu.Lock()
			s.have = off
			s.mu.Unlock()
			s.cond.Broadcast()
		}
	}
	switch {
	case off < s.size && err != nil:
		err = fmt.Errorf("truncated: the header describes %d data bytes but the input ended after %d", s.size, off)
	case off == s.size:
		err = nil
		if extra, _ := io.Copy(io.Discard, io.LimitReader(r, 1<<20)); extra > 0 {
			err = fmt.Errorf("bytes beyond the %d data bytes the header describes", s.size)
		}
	}
	s.end(off, err)
}

func (s *spool) end(off int64, err error) {
	s.mu.Lock()
	s.have, s.done, s.err = off, true, err
	s.mu.Unlock()
	s.cond.Broadcast()
}

// ReadAt reads the spooled bytes [off, off+len(p)), waiting for them.
func (s *spool) ReadAt(p []byte, off int64) (int, error) {
	end := off + int64(len(p))
	s.mu.Lock()
	for s.have < end && !s.done {
		s.cond.Wait()
	}
	have, err := s.have, s.err
	s.mu.Unlock()
	if have < end {
		if err == nil {
			err = fmt.Errorf("truncated: the header describes %d data bytes but the input ended after %d", s.size, have)
		}
		return 0, err
	}
	return s.f.ReadAt(p, off)
}

// finish waits for the whole stream (after a run that read all of it)
// and says whether anything was wrong with it, such as bytes beyond the
// data; the scratch file goes.
func (s *spool) finish() error {
	<-s.finished
	s.f.Close()
	return s.err
}

// abandon ends a run that failed: the goroutine stops at its next read,
// and the scratch file is closed once it has.
func (s *spool) abandon() {
	s.stop.Store(true)
	go func() {
		<-s.finished
		s.f.Close()
	}()
}

// outSpool is the output side: standard output a pipe, for a job that
// cannot produce its output in order a little at a time. Chunks are
// written by position into a scratch file, and a goroutine sends what is
// complete of it — the bytes before every chunk still to do — to the
// stream, while the run goes on.
type outSpool struct {
	f      *os.File
	dst    sink
	size   int64
	sufMin []int64    // sufMin[i]: the least output offset of chunks i and later
	wmu    sync.Mutex // one write into f at a time

	mu     sync.Mutex
	cond   *sync.Cond
	done   []bool
	first  int   // the first chunk not done
	ready  int64 // bytes [0, ready) are complete
	closed bool  // no chunk will come: send what is ready and stop
	abort  bool  // the run failed: stop sending at the next piece
	err    error // sending failed
	sent   chan struct{}
}

func newOutSpool(dst sink, size int64) (*outSpool, error) {
	f, err := fileio.Scratch()
	if err != nil {
		return nil, fmt.Errorf("cannot make a scratch file to hold the output: %w", err)
	}
	o := &outSpool{f: f, dst: dst, size: size, sent: make(chan struct{})}
	o.cond = sync.NewCond(&o.mu)
	return o, nil
}

// plan learns where the chunks of ck write, and starts sending.
func (o *outSpool) plan(ck *ops.Chunker) {
	o.learn(ck)
	go o.send()
}

// learn notes the least output offset of each chunk and those after it.
func (o *outSpool) learn(ck *ops.Chunker) {
	n := ck.Len()
	o.sufMin = make([]int64, n+1)
	o.sufMin[n] = o.size
	for i := n - 1; i >= 0; i-- {
		least := o.sufMin[i+1]
		for _, s := range ck.Chunk(i).Out {
			least = min(least, s.Off)
		}
		o.sufMin[i] = least
	}
	o.done = make([]bool, n)
}

func (o *outSpool) IsFile() bool { return true }

func (o *outSpool) WriteAt(p []byte, off int64) (int, error) {
	o.mu.Lock()
	err := o.err
	o.mu.Unlock()
	if err != nil {
		return 0, err // the stream is gone: stop working
	}
	// One write at a time, as fileio.Output does (its wmu says why).
	o.wmu.Lock()
	defer o.wmu.Unlock()
	return o.f.WriteAt(p, off)
}

func (o *outSpool) Write([]byte) (int, error) {
	return 0, errors.New("internal error: the output spool is written by position")
}

// chunkDone marks chunk i written.
func (o *outSpool) chunkDone(i int) {
	o.mu.Lock()
	o.ready = o.markDone(i)
	o.mu.Unlock()
	o.cond.Broadcast()
}

// markDone marks chunk i written and returns how many bytes from the
// start are now complete: those before the least offset any chunk still
// to do writes (the chunks before the first one not done are all done).
func (o *outSpool) markDone(i int) int64 {
	o.done[i] = true
	for o.first < len(o.done) && o.done[o.first] {
		o.first++
	}
	return o.sufMin[o.first]
}

// send copies the complete part of the scratch file to the stream as it
// grows, a piece at a time, so that close can stop it between pieces.
func (o *outSpool) send() {
	defer close(o.sent)
	buf := fileio.GetBuffer(1 << 20)
	defer fileio.PutBuffer(buf)
	sf := o.dst.StreamFile() // nil: not a file sendfile can write to (grown by streamRun)
	var sent, dropped int64
	for {
		o.mu.Lock()
		for o.ready == sent && !o.closed {
			o.cond.Wait()
		}
		ready, closed, abort := o.ready, o.closed, o.abort
		o.mu.Unlock()
		if abort {
			return
		}
		var err error
		if sent < ready && sf != nil {
			// sendfile: from the page cache into the pipe, no copy here.
			want := min(ready-sent, sendPiece)
			var n int64
			n, err = sendRange(sf, o.f, sent, want)
			sent += n
			if err == nil && n < want {
				sf = nil // the kernel cannot send there: copy from now on
			}
		} else if sent < ready {
			n := int(min(int64(len(buf)), ready-sent))
			if _, err = o.f.ReadAt(buf[:n], sent); err == nil {
				if _, err = o.dst.Write(buf[:n]); err != nil {
					err = &writeError{err} // the output's, named so (an object's upload broken off)
				}
			}
			if err == nil {
				sent += int64(n)
			}
		}
		if err != nil {
			o.mu.Lock()
			o.err = err
			o.mu.Unlock()
			return
		}
		dropSent(o.f, &dropped, sent)
		if closed && sent == ready {
			return
		}
	}
}

// sendPiece: the most one sendfile call is asked to move, so that an
// abandoned run stops sending soon.
const sendPiece = 8 << 20

// finish waits until the whole output has been sent.
func (o *outSpool) finish() error {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.cond.Broadcast()
	<-o.sent
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err == nil && o.ready != o.size {
		return fmt.Errorf("internal error: %d of %d output bytes were complete", o.ready, o.size)
	}
	return o.err
}

// close ends a run: after a failed one the sending stops at the next
// piece (the output is cut short; the run reports why). It waits for the
// sender, so that nothing writes to the output once the run has returned,
// then lets the scratch file go.
func (o *outSpool) close() {
	o.mu.Lock()
	o.closed, o.abort = true, true
	planned := o.done != nil
	o.mu.Unlock()
	o.cond.Broadcast()
	if planned {
		<-o.sent
	}
	o.f.Close()
}
