package zarr

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/depthspace/depthspace/internal/format"

	"github.com/klauspost/compress/zstd"
)

// v3ZstdArray is a v3 array of float32 [256, 1024] in one 1 MiB chunk,
// zstd then crc32c (crc32c: true) or zstd alone.
func v3ZstdArray(t *testing.T, crc bool) *Array {
	t.Helper()
	codecs := `[{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1, "checksum": false}}`
	if crc {
		codecs += `, {"name": "crc32c"}`
	}
	meta := `{"zarr_format": 3, "node_type": "array", "shape": [256, 1024], "data_type": "float32",
		"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [256, 1024]}},
		"chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": ` + codecs + `]}`
	a, err := parseV3([]byte(meta))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestV3DecodesIntoTheChunk: a v3 chunk's last codec (zstd, under a
// crc32c or not) decodes straight into the caller's chunk, so decoding
// a 1 MiB chunk allocates nothing near its size, and gives its bytes.
func TestV3DecodesIntoTheChunk(t *testing.T) {
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i*7 + i>>11)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	if err != nil {
		t.Fatal(err)
	}
	stored := enc.EncodeAll(want, nil)
	for _, crc := range []bool{false, true} {
		a := v3ZstdArray(t, crc)
		raw := stored
		if crc {
			raw = appendCRC32C(bytes.Clone(stored))
		}
		dst := make([]byte, len(want))
		if err := a.decode(dst, raw); err != nil { // the decoder's first use allocates its state
			t.Fatal(err)
		}
		if !bytes.Equal(dst, want) {
			t.Fatalf("crc32c %v: decoded bytes differ", crc)
		}
		const runs = 20
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			if err := a.decode(dst, raw); err != nil {
				t.Fatal(err)
			}
		}
		runtime.ReadMemStats(&after)
		if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > uint64(len(want))/8 {
			t.Errorf("crc32c %v: decoding a %d-byte chunk allocated %d bytes", crc, len(want), per)
		}
	}
}

func appendCRC32C(b []byte) []byte {
	c := crc32.Checksum(b, castagnoli)
	return append(b, byte(c), byte(c>>8), byte(c>>16), byte(c>>24))
}

// rangeLog is a store that records the ranges read from it.
type rangeLog struct {
	format.Store
	mu     sync.Mutex
	ranges []string
}

func (l *rangeLog) ReadRange(key string, off, n int64) ([]byte, error) {
	l.mu.Lock()
	if off >= 0 { // not a shard's index, its last bytes
		l.ranges = append(l.ranges, fmt.Sprintf("%s %d+%d", key, off, n))
	}
	l.mu.Unlock()
	return l.Store.ReadRange(key, off, n)
}

// TestReadChunksCoalesces: ReadChunks reads the inner chunks of a shard
// that lie back to back in its file, whatever the order asked, in one
// range a run, and nothing else of the shard: two shards of four inner
// chunks of a row each (32 bytes, stored as they are), the second of
// each empty in the index (the fill value, not stored), so the rows
// asked in order come in one read a shard, and two rows asked backwards
// (as a shard written chunk to chunk may hold them) in one. The bytes
// are ReadChunk's.
func TestReadChunksCoalesces(t *testing.T) {
	s := &v3Spec{shape: []int{8, 8}, chunks: []int{4, 8}, inner: []int{1, 8}, dtype: "int32", size: 4,
		keys: "default", fill: 5, emptyInner: func(q int) bool { return q == 1 }}
	dir := filepath.Join(t.TempDir(), "s.zarr")
	s.write(t, dir, fillOf(t, s))
	r := openReader(t, dir)
	log := &rangeLog{Store: r.st}
	r.st = log
	rows := func(ids ...int) ([][]byte, [][]int) {
		var dsts [][]byte
		var idxs [][]int
		for _, i := range ids {
			dsts = append(dsts, make([]byte, 32))
			idxs = append(idxs, []int{i, 0})
		}
		return dsts, idxs
	}
	for _, c := range []struct {
		ids  []int
		want []string
	}{
		{[]int{0, 1, 2, 3, 4, 5, 6, 7}, []string{"c/0/0 0+96", "c/1/0 0+96"}},
		{[]int{3, 2}, []string{"c/0/0 32+64"}},
		{[]int{6, 7}, []string{"c/1/0 32+64"}},
	} {
		log.ranges = nil
		dsts, idxs := rows(c.ids...)
		if err := r.ReadChunks(dsts, idxs); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(log.ranges) != fmt.Sprint(c.want) {
			t.Errorf("rows %v read %q, want %q", c.ids, log.ranges, c.want)
		}
		for k, idx := range idxs {
			want := make([]byte, 32)
			if err := r.ReadChunk(want, idx); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dsts[k], want) {
				t.Errorf("row %d: ReadChunks gave %x, ReadChunk %x", idx[0], dsts[k], want)
			}
		}
	}
}

// TestReadChunksArriving: ReadChunksArriving decodes into the buffers
// arriving gives, called once for all the requests of the call (here
// four, and two chunks filled), and gives ReadChunks' bytes; an error of
// arriving is the read's.
func TestReadChunksArriving(t *testing.T) {
	s := &v3Spec{shape: []int{8, 8}, chunks: []int{4, 8}, inner: []int{1, 8}, dtype: "int32", size: 4,
		keys: "default", fill: 5, emptyInner: func(q int) bool { return q == 1 }}
	dir := filepath.Join(t.TempDir(), "s.zarr")
	s.write(t, dir, fillOf(t, s))
	r := openReader(t, dir)
	var idxs [][]int
	want := make([][]byte, 8)
	for i := range 8 {
		idxs = append(idxs, []int{i, 0})
		want[i] = make([]byte, 32)
	}
	if err := r.ReadChunks(want, idxs); err != nil {
		t.Fatal(err)
	}
	calls := 0
	got := make([][]byte, 8)
	err := r.ReadChunksArriving(idxs, func() ([][]byte, error) {
		calls++
		for i := range got {
			got[i] = make([]byte, 32)
		}
		return got, nil
	})
	if err != nil || calls != 1 {
		t.Fatalf("ReadChunksArriving: %v, arriving called %d times, want once", err, calls)
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Errorf("row %d: %x, ReadChunks %x", i, got[i], want[i])
		}
	}
	stopped := errors.New("stopped")
	if err := r.ReadChunksArriving(idxs[:1], func() ([][]byte, error) { return nil, stopped }); !errors.Is(err, stopped) {
		t.Errorf("arriving failing: %v, want its error", err)
	}
}
