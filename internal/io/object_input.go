package fileio

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
)

// An arrival is an object input still being downloaded into its scratch
// file: which bytes are in, and how the download ended. Readers of bytes
// not in yet wait for them (ReaderAt), so work on the front of an object
// starts while its back is still on the way.
type arrival struct {
	mu   sync.Mutex
	cond sync.Cond
	in   Extents
	done bool
	err  error // the download's failure, once done
	// cancel stops the download; finished is closed when it has
	// returned (nothing writes into the scratch file after that).
	cancel   context.CancelFunc
	finished chan struct{}
}

func newArrival(cancel context.CancelFunc) *arrival {
	a := &arrival{cancel: cancel, finished: make(chan struct{})}
	a.cond.L = &a.mu
	return a
}

// arrived records bytes [off, off+n) as written into the scratch file.
func (a *arrival) arrived(off, n int64) {
	a.mu.Lock()
	a.in.Add(off, n)
	a.mu.Unlock()
	a.cond.Broadcast()
}

// end records the download's end: every byte in, or err.
func (a *arrival) end(err error) {
	a.mu.Lock()
	a.done, a.err = true, err
	a.mu.Unlock()
	a.cond.Broadcast()
	close(a.finished)
}

// waitFor waits until bytes [off, off+n) are in, or the download has
// failed (its error: a later range's failure is the reader's too, as any
// failure of the object's download would be).
func (a *arrival) waitFor(off, n int64) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for !a.in.Covers(off, n) {
		if a.done {
			if a.err != nil {
				return a.err
			}
			return io.ErrUnexpectedEOF // past the object's end: the caller's mistake
		}
		a.cond.Wait()
	}
	return nil
}

// whole waits for the download's end.
func (a *arrival) whole() error {
	<-a.finished
	return a.err
}

// stop ends the download and waits until nothing more is written.
func (a *arrival) stop() {
	a.cancel()
	<-a.finished
}

// OpenArriving is Open for a reader that reads an object input by
// position as it arrives: for an object larger than its first GET,
// Open's Input is returned while the rest is still being downloaded, and
// only bytes read through Arriving, or Data after Wait, are its bytes;
// Data before Wait may still be zeros. Anything else is Open.
func OpenArriving(name string, stdin io.Reader) (*Input, error) {
	if p := PlaceOf(name); p != nil {
		return openObject(p, name, false)
	}
	return Open(name, stdin)
}

// Arriving reads the input's file by position, each read waiting for its
// bytes to arrive: nil unless the input is an object still being
// downloaded (OpenArriving).
func (in *Input) Arriving() io.ReaderAt {
	if in.arrival == nil {
		return nil
	}
	return arrivingReader{in.File, in.arrival}
}

// Wait waits until the whole input is there: Data is then its bytes. An
// object's failed download is its error.
func (in *Input) Wait() error {
	if in.arrival == nil {
		return nil
	}
	return downloadErr(in.arrival.whole())
}

// Consumed says that bytes [off, off+n) of an arriving input have been
// read for the last time: the whole pages among them are freed from its
// scratch file, so that an object worked on while it arrives is not all
// dirty page cache in TMPDIR by its end (on ext4, writeback and dirty
// throttling then slow the run). Nothing for any other input.
func (in *Input) Consumed(off, n int64) {
	if in.arrival == nil || in.File == nil {
		return
	}
	const page = 4096
	from, to := (off+page-1)/page*page, (off+n)/page*page
	if from < to {
		PunchHole(in.File, from, to-from)
	}
}

// stopArrival ends a download still going on before the input is closed.
func (in *Input) stopArrival() {
	if in.arrival != nil {
		in.arrival.stop()
	}
}

type arrivingReader struct {
	f *os.File
	a *arrival
}

func (r arrivingReader) ReadAt(p []byte, off int64) (int, error) {
	if err := r.a.waitFor(off, int64(len(p))); err != nil {
		return 0, downloadErr(err)
	}
	return r.f.ReadAt(p, off)
}

// downloadErr is a download's failure as the input's error.
func downloadErr(err error) error {
	var se *ScratchError
	if errors.As(err, &se) {
		return se
	}
	return unwrapPath(err)
}
