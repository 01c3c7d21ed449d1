package zarr

import (
	"bytes"
	"hash/crc32"
	"runtime"
	"testing"

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
