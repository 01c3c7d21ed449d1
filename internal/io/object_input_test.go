package fileio

import (
	"bytes"
	"context"
	"errors"
	"iter"
	"os"
	"strings"
	"testing"
)

// slowPlace serves one object, "slow://b/k", whose download is held at
// the byte held until release is closed, then fails at fail (if not
// negative) with errGone.
type slowPlace struct {
	data    []byte
	held    int64
	fail    int64
	release chan struct{}
	stopped chan struct{} // closed when Download returns
}

var errGone = errors.New("the connection broke off")

func (p *slowPlace) Parse(string) (bool, error) { return false, nil }
func (p *slowPlace) Ready() error               { return nil }
func (p *slowPlace) ReadFirst(_ string, b []byte) (int, int64, error) {
	return copy(b, p.data), int64(len(p.data)), nil
}

func (p *slowPlace) Download(ctx context.Context, _ string, f *os.File, from, size int64, arrived func(off, n int64)) error {
	defer close(p.stopped)
	const piece = 256 << 10
	for off := from; off < size; off += piece {
		if off == p.held {
			select {
			case <-p.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if off == p.fail {
			return errGone
		}
		n := min(piece, size-off)
		if _, err := f.WriteAt(p.data[off:off+n], off); err != nil {
			return err
		}
		arrived(off, n)
	}
	return nil
}

func (p *slowPlace) Writer(string, func() (*os.File, error)) ObjectWriter { return nil }
func (p *slowPlace) AbortAll()                                            {}
func (p *slowPlace) Exists(string) (bool, error)                          { return true, nil }
func (p *slowPlace) IsDir(string) bool                                    { return false }
func (p *slowPlace) List(string) iter.Seq2[Entry, error]                  { return nil }

var slow = &slowPlace{}

func init() { Register("slow://", slow) }

// setSlow makes slow serve a new object of size bytes.
func setSlow(size, held, fail int64) []byte {
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*5/3 + i>>18)
	}
	*slow = slowPlace{data: data, held: held, fail: fail, release: make(chan struct{}), stopped: make(chan struct{})}
	return data
}

// OpenArriving hands a large object over while it is still being
// downloaded: the bytes that are in are read at once, a read of later
// ones waits for them, and Close stops the download.
func TestObjectInputArriving(t *testing.T) {
	const mib = 1 << 20
	data := setSlow(12*mib, 10*mib, -1)
	in, err := OpenArriving("slow://b/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := in.Arriving()
	if r == nil {
		t.Fatal("no arriving reader: the object was downloaded whole first")
	}
	got := make([]byte, mib)
	if _, err := r.ReadAt(got, 9*mib); err != nil || !bytes.Equal(got, data[9*mib:10*mib]) {
		t.Fatalf("bytes already in: %v", err)
	}
	later := make(chan error, 1)
	go func() {
		_, err := r.ReadAt(got, 11*mib)
		later <- err
	}()
	select {
	case err := <-later:
		t.Fatalf("a read of bytes not in yet returned (%v)", err)
	default:
	}
	close(slow.release)
	if err := <-later; err != nil || !bytes.Equal(got, data[11*mib:]) {
		t.Fatalf("bytes that came later: %v", err)
	}
	if err := in.Wait(); err != nil || !bytes.Equal(in.Data, data) {
		t.Errorf("Wait: %v; Data is the object: %v", err, bytes.Equal(in.Data, data))
	}
	in.Close()

	// Closed while the download is held: it is stopped and waited for.
	setSlow(12*mib, 10*mib, -1)
	in, err = OpenArriving("slow://b/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	in.Close()
	select {
	case <-slow.stopped:
	default:
		t.Error("Close returned with the download still going on")
	}
}

// A range that fails after others arrived: the bytes before it are read,
// a read of it returns the download's error, and so do Wait and Open.
func TestObjectInputFails(t *testing.T) {
	const mib = 1 << 20
	data := setSlow(12*mib, -1, 11*mib)
	close(slow.release)
	in, err := OpenArriving("slow://b/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	got := make([]byte, mib)
	if _, err := in.Arriving().ReadAt(got, 10*mib); err != nil || !bytes.Equal(got, data[10*mib:11*mib]) {
		t.Fatalf("bytes before the failure: %v", err)
	}
	if _, err := in.Arriving().ReadAt(got[:10], 11*mib+5); !errors.Is(err, errGone) {
		t.Errorf("a read of the failed range: %v, want %v", err, errGone)
	}
	if err := in.Wait(); !errors.Is(err, errGone) {
		t.Errorf("Wait: %v", err)
	}

	setSlow(12*mib, -1, 11*mib)
	close(slow.release)
	if in, err := Open("slow://b/k", nil); err == nil || !strings.Contains(err.Error(), errGone.Error()) {
		if in != nil {
			in.Close()
		}
		t.Errorf("Open of an object whose download fails: %v", err)
	}
}
