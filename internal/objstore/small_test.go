package objstore

import (
	"bytes"
	"context"
	"testing"
)

// TestGetIntoCallersBuffer: GetRangeInto and GetBoundedInto read the body
// into the buffer alloc gives, asked for the body's length, and a range
// past the end is still an error.
func TestGetIntoCallersBuffer(t *testing.T) {
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	ctx := context.Background()
	data := make([]byte, 100_000)
	for i := range data {
		data[i] = byte(i * 13)
	}
	u := URL{"bkt", "z/c/0"}
	if err := s.PutBytes(ctx, u, data); err != nil {
		t.Fatal(err)
	}
	room := make([]byte, 200_000)
	var asked []int
	alloc := func(n int) []byte { asked = append(asked, n); return room[:0:n] }
	got, err := s.GetRangeInto(ctx, u, 1000, 5000, alloc)
	if err != nil || !bytes.Equal(got, data[1000:6000]) || &got[0] != &room[0] {
		t.Fatalf("GetRangeInto: %v; bytes right %v, in the given buffer %v", err, bytes.Equal(got, data[1000:6000]), len(got) > 0 && &got[0] == &room[0])
	}
	got, err = s.GetRangeInto(ctx, u, 99_700, 300, alloc)
	if err != nil || !bytes.Equal(got, data[len(data)-300:]) || &got[0] != &room[0] {
		t.Fatalf("GetRangeInto, the last bytes: %v", err)
	}
	got, err = s.GetBoundedInto(ctx, u, 1<<20, alloc)
	if err != nil || !bytes.Equal(got, data) || &got[0] != &room[0] {
		t.Fatalf("GetBoundedInto: %v", err)
	}
	if want := []int{5000, 300, len(data)}; len(asked) != 3 || asked[0] != want[0] || asked[1] != want[1] || asked[2] != want[2] {
		t.Fatalf("alloc asked for %v, want %v", asked, want)
	}
	if _, err := s.GetRangeInto(ctx, u, 99_000, 5000, alloc); err == nil {
		t.Fatal("GetRangeInto past the end: no error")
	}
	if _, err := s.GetBoundedInto(ctx, u, 1000, alloc); err == nil {
		t.Fatal("GetBoundedInto over its limit: no error")
	}
}

// A ranged GET answered without a Content-Length (chunked) is read to its
// end, not taken for an empty body.
func TestGetIntoWithoutLength(t *testing.T) {
	f := newFake(t)
	s := fakeStore(t, f, f.creds)
	ctx := context.Background()
	data := bytes.Repeat([]byte("chunked "), 1000)
	u := URL{"bkt", "z/c/1"}
	if err := s.PutBytes(ctx, u, data); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.noLength = true
	f.mu.Unlock()
	alloc := func(n int) []byte { return make([]byte, n) }
	if got, err := s.GetBoundedInto(ctx, u, 1<<20, alloc); err != nil || !bytes.Equal(got, data) {
		t.Errorf("GetBoundedInto without a length: %d bytes, %v; want %d", len(got), err, len(data))
	}
	if got, err := s.GetRangeInto(ctx, u, 8, 16, alloc); err != nil || !bytes.Equal(got, data[8:24]) {
		t.Errorf("GetRangeInto without a length: %q, %v", got, err)
	}
}
