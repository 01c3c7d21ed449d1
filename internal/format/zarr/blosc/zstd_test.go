package blosc

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// rleFrame is a zstd frame of n RLE blocks of 128 KiB each (n × 128 KiB
// of the byte 7 from a few bytes per block), its header giving the
// content size claim when claim >= 0 and no size when claim < 0.
func rleFrame(n int, claim int64) []byte {
	b := []byte{0x28, 0xb5, 0x2f, 0xfd}
	if claim >= 0 {
		b = append(b, 0xe0) // 8-byte content size, single segment
		b = binary.LittleEndian.AppendUint64(b, uint64(claim))
	} else {
		b = append(b, 0x00, 0x50) // no content size; a 1 MiB window
	}
	for i := range n {
		h := uint32(1)<<1 | uint32(128<<10)<<3 // RLE, 128 KiB
		if i == n-1 {
			h |= 1
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 7)
	}
	return b
}

// allocated is the bytes the heap gave out while f ran.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestZstdIntoBounded: a frame that says, or turns out, to hold more than
// the chunk is refused without an allocation of its size; the right
// size decodes into dst itself.
func TestZstdIntoBounded(t *testing.T) {
	dst := make([]byte, 256<<10)
	// The decoder is made once for the process: before the counting.
	if err := ZstdInto(dst, rleFrame(2, 256<<10)); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		frame []byte
		want  string
	}{
		"claims 1 TiB":          {rleFrame(2, 1<<40), "says it holds 1099511627776 bytes, more than the 262144 wanted"},
		"1 GiB without a claim": {rleFrame(8192, -1), "holds more than the 262144 bytes wanted"},
		"claims less":           {rleFrame(1, 128<<10), "holds fewer than the 262144 bytes wanted"},
		"not zstd":              {[]byte("not a zstd frame at all"), "magic"},
	} {
		var err error
		n := allocated(func() { err = ZstdInto(dst, c.frame) })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
		if n > 8<<20 {
			t.Errorf("%s: %d bytes allocated for a 256 KiB chunk", name, n)
		}
	}
	if err := ZstdInto(dst, rleFrame(2, 256<<10)); err != nil || !bytes.Equal(dst, bytes.Repeat([]byte{7}, len(dst))) {
		t.Fatalf("two RLE blocks: error %v, or not 256 KiB of 7", err)
	}
	// Two frames back to back, as a stream may hold: both land in dst.
	e, _ := zstd.NewWriter(nil)
	want := make([]byte, 100)
	for i := range want {
		want[i] = byte(i)
	}
	two := e.EncodeAll(want[60:], e.EncodeAll(want[:60], nil))
	got := make([]byte, 100)
	if err := ZstdInto(got, two); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("two frames: error %v, got %v", err, got[:8])
	}
}
