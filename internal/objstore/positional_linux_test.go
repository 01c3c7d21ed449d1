package objstore

import (
	"bytes"
	"context"
	"syscall"
	"testing"
)

// Parts inside OnceIn's range are freed from the scratch file once
// stored (their blocks punched out), the object is still every byte
// written, and a write or read of a freed part is refused, not sent as
// zeros. Parts outside the range (a header) are kept.
func TestPartWriterOnceInDropsStoredParts(t *testing.T) {
	defer func(p int64) { partSize = p }(partSize)
	partSize = 1 << 20
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	size := 4<<20 + 5
	data := pattern(size)
	w := s.NewPartWriter(context.Background(), URL{"bkt", "once"}, scratch(t))
	const header = 128
	w.OnceIn(header, int64(size))
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	w.flight.Wait()
	w.mu.Lock()
	dropped := len(w.dropped)
	_, first := w.dropped[0]
	w.mu.Unlock()
	// Parts 1-3 are complete, inside the range and stored; part 0 holds
	// the header, part 4 is the last (sent at Commit).
	if dropped != 3 || first {
		t.Fatalf("dropped parts %v, want 1, 2 and 3", w.dropped)
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(int(w.f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if held := st.Blocks * 512; held > int64(size)-3<<20+64<<10 {
		t.Errorf("the scratch file holds %d bytes of blocks, want the 3 stored parts freed", held)
	}
	if _, err := w.WriteAt(data[2<<20:2<<20+1], 2<<20); err != errDropped {
		t.Errorf("a write into a freed part: %v, want %v", err, errDropped)
	}
	if _, err := w.ReadAt(make([]byte, 10), 3<<20); err != errDropped {
		t.Errorf("a read of a freed part: %v, want %v", err, errDropped)
	}
	data[5] ^= 0xff // the header patched: its part is kept and sent again
	if _, err := w.WriteAt(data[5:6], 5); err != nil {
		t.Fatal(err)
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := f.objects["bkt/once"]; !bytes.Equal(got, data) {
		t.Errorf("the object has %d bytes, differing from what was written", len(got))
	}
}
