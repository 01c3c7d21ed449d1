package tar

import (
	"archive/tar"
	"bytes"
	"io"
	"sync/atomic"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// shardWriter writes a tar shard the way archive/tar's Writer does —
// each member's header blocks (encoded by archive/tar), its bytes, zeros
// to the next 512-byte block, two zero blocks at the end — but the bytes
// are placed straight into a staging buffer (an operator's kernel writes
// there itself), and full buffers are written by a goroutine of their
// own: writing one overlaps the work on the next members. Two buffers
// circulate, so memory stays two buffers (or two members, when a member
// is larger than a buffer).
type shardWriter struct {
	buf   []byte      // being filled
	full  chan []byte // to write, in order
	spare chan []byte // written, to fill again
	done  chan struct{}
	err   atomic.Pointer[error] // the first write error
	hdr   bytes.Buffer
	live  bool
	// pooled are the two buffers from fileio's pool, handed back by stop.
	pooled [2][]byte
}

// shardBuffer is the size of each staging buffer: large writes, few
// hand-offs between the goroutines.
const shardBuffer = 512 << 10

func newShardWriter(w io.Writer) *shardWriter {
	s := &shardWriter{
		full:   make(chan []byte, 2),
		spare:  make(chan []byte, 2),
		done:   make(chan struct{}),
		live:   true,
		pooled: [2][]byte{fileio.GetBuffer(shardBuffer), fileio.GetBuffer(shardBuffer)},
	}
	// The pool may hand back larger buffers than asked for: cut to
	// shardBuffer, so that writing starts as soon as one is full (a
	// failing output is then found while the first members are copied).
	s.buf = s.pooled[0][:0:shardBuffer]
	s.spare <- s.pooled[1][:0:shardBuffer]
	go func() {
		defer close(s.done)
		for b := range s.full {
			if s.err.Load() == nil {
				if _, err := w.Write(b); err != nil {
					s.err.Store(&err)
				}
			}
			s.spare <- b[:0]
		}
	}()
	return s
}

// failed is the first error writing the output, if any.
func (s *shardWriter) failed() error {
	if e := s.err.Load(); e != nil {
		return *e
	}
	return nil
}

// flush hands the filled buffer to the writing goroutine and takes the
// other one (waiting until it is written).
func (s *shardWriter) flush() {
	if len(s.buf) == 0 {
		return
	}
	s.full <- s.buf
	s.buf = <-s.spare
}

// reserve appends n bytes to the output and returns them to be filled
// (their content is stale until then).
func (s *shardWriter) reserve(n int) []byte {
	if len(s.buf)+n > cap(s.buf) {
		s.flush()
		if n > cap(s.buf) {
			// A member larger than the buffers: this one grows, and
			// circulates from now on.
			s.buf = make([]byte, 0, n)
		}
	}
	at := len(s.buf)
	s.buf = s.buf[:at+n]
	return s.buf[at:]
}

// header writes a member's header blocks: raw, the input's, when given,
// else as archive/tar encodes h.
func (s *shardWriter) header(h *tar.Header, raw []byte) error {
	if raw != nil {
		copy(s.reserve(len(raw)), raw)
		return nil
	}
	s.hdr.Reset()
	if err := tar.NewWriter(&s.hdr).WriteHeader(h); err != nil {
		return err
	}
	copy(s.reserve(s.hdr.Len()), s.hdr.Bytes())
	return nil
}

// pad ends a member of n bytes with zeros to the next block.
func (s *shardWriter) pad(n int) {
	if r := n % 512; r != 0 {
		clear(s.reserve(512 - r))
	}
}

// write appends a member's bytes and its padding.
func (s *shardWriter) write(p []byte) error {
	for rest := p; len(rest) > 0; {
		n := min(len(rest), shardBuffer)
		copy(s.reserve(n), rest[:n])
		rest = rest[n:]
	}
	s.pad(len(p))
	return s.failed()
}

// copyFrom appends a member of size bytes read from r, and its padding.
// A failure to write the output is a *tarWriteError.
func (s *shardWriter) copyFrom(r io.Reader, size int64) error {
	for rest := size; rest > 0; {
		n := int(min(rest, shardBuffer))
		b := s.reserve(n)
		if _, err := io.ReadFull(r, b); err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		rest -= int64(n)
	}
	s.pad(int(size % 512))
	if err := s.failed(); err != nil {
		return &tarWriteError{err}
	}
	return nil
}

// tarWriteError is a failure writing the output, told apart from one
// reading the input where either can happen (copyFrom).
type tarWriteError struct{ err error }

func (e *tarWriteError) Error() string { return e.err.Error() }
func (e *tarWriteError) Unwrap() error { return e.err }

// close ends the archive (two zero blocks, as archive/tar's Close) and
// waits for every byte to be written.
func (s *shardWriter) close() error {
	clear(s.reserve(1024))
	s.flush()
	s.stop()
	return s.failed()
}

// stop ends the writing goroutine (after the buffers already handed to
// it) and returns the buffers; the output is then as far as it got.
func (s *shardWriter) stop() {
	if !s.live {
		return
	}
	s.live = false
	close(s.full)
	<-s.done
	s.buf = nil
	for _, b := range s.pooled {
		fileio.PutBuffer(b)
	}
}
