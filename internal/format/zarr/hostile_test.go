package zarr

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/zarr/blosc"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// openErr opens a store and reads every member; it returns the first
// error.
func openErr(dir string) error {
	d, _ := fileio.OpenDir(dir)
	ar, err := open(d, format.OpenOptions{Threads: 2})
	if err != nil {
		return err
	}
	for _, m := range ar.Members {
		if _, err := m.Lazy.InflateData(); err != nil {
			return err
		}
	}
	return nil
}

func put(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for k, v := range files {
		p := filepath.Join(dir, filepath.FromSlash(k))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, v, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const hostileZarray = `{"zarr_format": 2, "shape": [4, 4], "chunks": [2, 4], "dtype": "<u2", "compressor": %s, "fill_value": 0, "order": "C", "filters": null}`

func v2Store(compressor string) []byte {
	return []byte(strings.Replace(hostileZarray, "%s", compressor, 1))
}

// TestHostileStores: each store that lies is an error naming what is
// wrong, never a panic or an allocation its metadata alone asks for.
func TestHostileStores(t *testing.T) {
	good := make([]byte, 16)
	frame, _ := blosc.EncodeLZ4(good, 2, blosc.Shuffle)
	lying := bytes.Clone(frame)
	binary.LittleEndian.PutUint32(lying[4:], 1<<30) // claims 1 GiB
	cases := map[string]struct {
		files map[string][]byte
		want  string
	}{
		"bad json":          {map[string][]byte{".zarray": []byte(`{"zarr_format": 2, "shape": [4,`)}, "not valid JSON"},
		"unknown codec v2":  {map[string][]byte{".zarray": v2Store(`{"id": "bz2", "level": 1}`)}, `compressor "bz2"`},
		"chunk size lies":   {map[string][]byte{".zarray": v2Store("null"), "0.0": make([]byte, 15)}, "chunk 0.0: chunk is 15 bytes, want 16"},
		"chunks huge":       {map[string][]byte{".zarray": []byte(`{"zarr_format": 2, "shape": [4000000000, 4000000000], "chunks": [100000, 100000], "dtype": "<f8", "compressor": null, "fill_value": 0, "order": "C", "filters": null}`)}, "over 2 GiB"},
		"blosc claims more": {map[string][]byte{".zarray": v2Store(`{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`), "0.0": lying}, "1073741824"},
		"blosc truncated":   {map[string][]byte{".zarray": v2Store(`{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1}`), "0.0": frame[:len(frame)-2]}, "blosc header says the frame is"},
		"zstd short":        {map[string][]byte{".zarray": v2Store(`{"id": "zstd", "level": 1}`), "0.0": zstdEncoder.EncodeAll(make([]byte, 10), nil)}, "fewer than the 16 bytes"},
		"zstd claims 1 TiB": {map[string][]byte{".zarray": v2Store(`{"id": "zstd", "level": 1}`), "0.0": zstdClaim(1 << 40)}, "zstd stream says it holds 1099511627776 bytes, more than the 16 wanted"},
		"unknown codec v3":  {map[string][]byte{"zarr.json": []byte(`{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "uint8", "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}}, "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}, {"name": "lzma"}]}`)}, `codec "lzma"`},
		"v3 bad node":       {map[string][]byte{"zarr.json": []byte(`{"zarr_format": 3, "node_type": "tree"}`)}, `node_type "tree"`},
	}
	for name, c := range cases {
		dir := filepath.Join(t.TempDir(), "s.zarr")
		put(t, dir, c.files)
		err := openErr(dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, c.want)
		}
	}
	for name, s := range map[string]*v3Spec{
		"bad crc32c":            {corruptCRC: true},
		"index past its object": {indexPastIt: true},
		"index past, at start":  {indexPastIt: true, indexStart: true},
	} {
		s.shape, s.chunks, s.inner, s.dtype, s.size, s.keys, s.fill = []int{4, 6}, []int{4, 6}, []int{2, 3}, "int32", 4, "default", 0
		dir := filepath.Join(t.TempDir(), "s.zarr")
		s.write(t, dir, make([]byte, 4))
		err := openErr(dir)
		want := map[bool]string{true: "crc32c", false: "lie past the object"}[s.corruptCRC]
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one saying %q", name, err, want)
		}
	}
}

// zstdClaim is a zstd frame header saying the frame holds n bytes, and
// one RLE block of 16.
func zstdClaim(n uint64) []byte {
	b := binary.LittleEndian.AppendUint64([]byte{0x28, 0xb5, 0x2f, 0xfd, 0xe0}, n)
	h := uint32(1) | 1<<1 | 16<<3
	return append(b, byte(h), byte(h>>8), byte(h>>16), 0)
}

// FuzzShardIndex: a shard of any bytes (index at the end, crc32c
// included, or not) is read or refused, never a panic, and what is read
// is the array's size.
func FuzzShardIndex(f *testing.F) {
	s := &v3Spec{shape: []int{4, 6}, chunks: []int{4, 6}, inner: []int{2, 3}, dtype: "uint8", size: 1, keys: "default", fill: 0, emptyInner: func(q int) bool { return q == 3 }}
	dir := f.TempDir()
	s.write(f, dir, []byte{0})
	meta, err := os.ReadFile(filepath.Join(dir, "zarr.json"))
	if err != nil {
		f.Fatal(err)
	}
	shard, err := os.ReadFile(filepath.Join(dir, "c", "0", "0"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(shard)
	f.Add(shard[:len(shard)-3])
	f.Add(make([]byte, 68))
	a, err := parseV3(meta)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		st := memStore{"zarr.json": meta, "c/0/0": b}
		r := &reader{node: node{st: st, a: a}, threads: 2}
		data, err := r.InflateData()
		if err == nil && len(data) != 24 {
			t.Fatalf("read %d bytes of a 24-byte array", len(data))
		}
	})
}

// memStore is a store in memory, for the fuzz target.
type memStore map[string][]byte

func (m memStore) Name() string { return "memory" }
func (m memStore) Read(key string) ([]byte, error) {
	if b, ok := m[key]; ok {
		return b, nil
	}
	return nil, os.ErrNotExist
}
func (m memStore) ReadRange(key string, off, n int64) ([]byte, error) {
	b, err := m.Read(key)
	if err != nil {
		return nil, err
	}
	if off < 0 {
		off, n = int64(len(b))+off, -off
	}
	if off < 0 || n < 0 || off > int64(len(b)) || n > int64(len(b))-off {
		return nil, os.ErrInvalid
	}
	return b[off : off+n], nil
}
func (m memStore) List(string) ([]string, error) { return nil, nil }
func (m memStore) Size(key string) (int64, error) {
	b, err := m.Read(key)
	return int64(len(b)), err
}
