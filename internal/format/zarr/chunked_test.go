package zarr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/zarr/blosc"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/testpeer"
)

// openReader opens the array store at dir for its chunk reads.
func openReader(t *testing.T, dir string) *reader {
	t.Helper()
	d, _ := fileio.OpenDir(dir)
	ar, err := open(d, format.OpenOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return ar.Members[0].Lazy.(*reader)
}

// TestReadChunkRangeZarrPython: parts of the chunks zarr-python writes
// (Blosc lz4 with byte shuffle and with none, its threads storing blocks
// in the order they finish; edge chunks; a chunk the store lacks) read
// from the blocks that hold them are those parts of the chunks decoded
// whole.
func TestReadChunkRangeZarrPython(t *testing.T) {
	py := testpeer.Python(t, "zarr")
	dir := t.TempDir()
	script := `
import sys, os, numpy as np, zarr
from numcodecs import Blosc
out = sys.argv[1]
rng = np.random.default_rng(5)
for name, shuffle in [("shuffle", Blosc.SHUFFLE), ("noshuffle", Blosc.NOSHUFFLE)]:
    z = zarr.open(os.path.join(out, name + ".zarr"), mode="w", shape=(2, 3, 300, 250), chunks=(1, 2, 128, 250),
                  dtype="<f4", compressor=Blosc(cname="lz4", clevel=5, shuffle=shuffle), fill_value=1.5)
    z[:] = np.cumsum(rng.standard_normal((2, 3, 300, 250)), axis=3).astype("<f4")
os.remove(os.path.join(out, "shuffle.zarr", "0.1.1.0"))
`
	if out, err := exec.Command(py, "-c", script, dir).CombinedOutput(); err != nil {
		t.Fatalf("zarr-python: %v\n%s", err, out)
	}
	r := rand.New(rand.NewSource(3))
	for _, name := range []string{"shuffle", "noshuffle"} {
		rd := openReader(t, filepath.Join(dir, name+".zarr"))
		if !rd.Ranged() {
			t.Fatalf("%s: a v2 Blosc array is not read in ranges", name)
		}
		n := chunkBytes(rd.a)
		whole := make([]byte, n)
		for _, idx := range [][]int{{0, 0, 0, 0}, {1, 1, 2, 0}, {0, 1, 1, 0}, {1, 0, 1, 0}} {
			if err := rd.ReadChunk(whole, idx); err != nil {
				t.Fatal(err)
			}
			for range 20 {
				off := r.Intn(n/4) * 4
				ln := r.Intn((n-off)/4+1) * 4
				got := make([]byte, ln)
				if err := rd.ReadChunkRange(got, idx, off); err != nil {
					t.Fatalf("%s chunk %v bytes %d+%d: %v", name, idx, off, ln, err)
				}
				if !bytes.Equal(got, whole[off:off+ln]) {
					t.Fatalf("%s chunk %v bytes %d+%d differ from the chunk decoded whole", name, idx, off, ln)
				}
			}
		}
	}
}

// TestReadChunkRangeHostile: a chunk whose Blosc head lies (about the
// frame's size, the chunk's, where a block is, or what a stream holds)
// is an error naming the chunk, never a panic.
func TestReadChunkRangeHostile(t *testing.T) {
	src := make([]byte, 4*64*1024)
	for i := range src {
		src[i] = byte(i * 7 / 5)
	}
	frame, err := blosc.EncodeLZ4(src, 4, blosc.Shuffle)
	if err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 2, "shape": [64, 1024], "chunks": [64, 1024], "dtype": "<f4", "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}, "fill_value": 0, "order": "C", "filters": null}`
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(frame)) }
	cases := map[string][]byte{
		"size":   edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], uint32(len(b)+9)); return b }),
		"nbytes": edit(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[4:], uint32(len(src)/2)); return b }),
		"block past": edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[blosc.HeaderSize:], uint32(len(b)+100))
			return b
		}),
		"stream long": edit(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[binary.LittleEndian.Uint32(b[blosc.HeaderSize:]):], 1<<30)
			return b
		}),
		"truncated":   frame[:len(frame)-10],
		"header only": frame[:10],
	}
	for name, chunk := range cases {
		dir := t.TempDir()
		put(t, dir, map[string][]byte{".zarray": []byte(meta), "0.0": chunk})
		rd := openReader(t, dir)
		dst := make([]byte, 1000)
		err := rd.ReadChunkRange(dst, []int{0, 0}, 4000)
		if err == nil {
			t.Fatalf("%s: read without an error", name)
		}
		if !bytes.Contains([]byte(err.Error()), []byte("chunk 0.0")) {
			t.Fatalf("%s: %v does not name the chunk", name, err)
		}
	}
}

// TestReadChunkRangeBlockSizeOverChunk: a frame whose header claims a
// block far larger than its chunk (one short block, as a whole read
// takes it) is read in ranges as whole, with scratch of the chunk's size,
// not of three claimed blocks.
func TestReadChunkRangeBlockSizeOverChunk(t *testing.T) {
	src := bytes.Repeat([]byte("depthspace"), 8)[:72]
	frame, err := blosc.EncodeLZ4(src, 1, blosc.NoShuffle)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(frame[8:], 700_000_000)
	meta := `{"zarr_format": 2, "shape": [72], "chunks": [72], "dtype": "|u1", "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}, "fill_value": 0, "order": "C", "filters": null}`
	dir := t.TempDir()
	put(t, dir, map[string][]byte{".zarray": []byte(meta), "0": frame})
	rd := openReader(t, dir)
	whole := make([]byte, 72)
	if err := rd.ReadChunk(whole, []int{0}); err != nil || !bytes.Equal(whole, src) {
		t.Fatalf("read whole: %v", err)
	}
	var before, after runtime.MemStats
	got := make([]byte, 30)
	runtime.ReadMemStats(&before)
	err = rd.ReadChunkRange(got, []int{0}, 20)
	runtime.ReadMemStats(&after)
	if err != nil || !bytes.Equal(got, src[20:50]) {
		t.Fatalf("the part differs from the chunk read whole: %v", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("reading 30 bytes of a 72-byte chunk allocated %d bytes", n)
	}
}

// TestBlockCacheBounded: the decoded blocks ReadChunkRange keeps are the
// last blockCacheSize, in an array of that many: an evicted block is not
// held on behind the slice's start.
func TestBlockCacheBounded(t *testing.T) {
	src := make([]byte, 1<<20)
	for i := range src {
		src[i] = byte(i * 7 / 5)
	}
	frame, err := blosc.EncodeLZ4(src, 1, blosc.NoShuffle)
	if err != nil {
		t.Fatal(err)
	}
	meta := `{"zarr_format": 2, "shape": [10485760], "chunks": [1048576], "dtype": "|u1", "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}, "fill_value": 0, "order": "C", "filters": null}`
	dir := t.TempDir()
	files := map[string][]byte{".zarray": []byte(meta)}
	for c := range 10 {
		files[fmt.Sprint(c)] = frame
	}
	put(t, dir, files)
	rd := openReader(t, dir)
	read := 0
	for c := range 10 {
		key := fmt.Sprint(c)
		f := rd.frameOf(key)
		if f.err != nil {
			t.Fatal(f.err)
		}
		for b := 0; b*f.ix.BlockSize < f.ix.NBytes; b++ {
			blk, err := rd.block(key, f.ix, b)
			if err != nil || !bytes.Equal(blk, src[b*f.ix.BlockSize:min((b+1)*f.ix.BlockSize, len(src))]) {
				t.Fatalf("chunk %s block %d: %v", key, b, err)
			}
			read++
		}
	}
	if read <= 2*blockCacheSize {
		t.Fatalf("%d blocks read: the test needs more than %d", read, 2*blockCacheSize)
	}
	if len(rd.blocks) != blockCacheSize || cap(rd.blocks) != blockCacheSize {
		t.Errorf("after %d blocks the cache holds %d in an array of %d, want %d", read, len(rd.blocks), cap(rd.blocks), blockCacheSize)
	}
}

// smallBlockFrame is a Blosc frame of data in blocks of bs bytes, each
// stored as it is (a stream as long as its block), from the header an
// encoder gives data.
func smallBlockFrame(t *testing.T, data []byte, bs int) []byte {
	t.Helper()
	enc, err := blosc.EncodeLZ4(data, 1, blosc.NoShuffle)
	if err != nil {
		t.Fatal(err)
	}
	n := (len(data) + bs - 1) / bs
	frame := append([]byte{}, enc[:blosc.HeaderSize]...)
	frame = append(frame, make([]byte, 4*n)...)
	for b := range n {
		block := data[b*bs : min((b+1)*bs, len(data))]
		binary.LittleEndian.PutUint32(frame[blosc.HeaderSize+4*b:], uint32(len(frame)))
		frame = binary.LittleEndian.AppendUint32(frame, uint32(len(block)))
		frame = append(frame, block...)
	}
	binary.LittleEndian.PutUint32(frame[8:], uint32(bs))
	binary.LittleEndian.PutUint32(frame[12:], uint32(len(frame)))
	return frame
}

// TestFrameCacheBoundedByBlocks: the chunk heads ReadChunkRange keeps
// are bounded by the blocks they index, not by their number: chunks of
// many small blocks are let go past the bound, and read again right.
func TestFrameCacheBoundedByBlocks(t *testing.T) {
	defer func(n int) { maxFrameBlocks = n }(maxFrameBlocks)
	maxFrameBlocks = 1200
	src := make([]byte, 1<<16)
	for i := range src {
		src[i] = byte(i * 7 / 5)
	}
	frame := smallBlockFrame(t, src, 128) // 512 blocks
	meta := `{"zarr_format": 2, "shape": [655360], "chunks": [65536], "dtype": "|u1", "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}, "fill_value": 0, "order": "C", "filters": null}`
	files := map[string][]byte{".zarray": []byte(meta)}
	for c := range 10 {
		files[fmt.Sprint(c)] = frame
	}
	dir := t.TempDir()
	put(t, dir, files)
	rd := openReader(t, dir)
	got := make([]byte, 1000)
	for round := range 2 {
		for c := range 10 {
			if err := rd.ReadChunkRange(got, []int{c}, 300); err != nil || !bytes.Equal(got, src[300:1300]) {
				t.Fatalf("round %d chunk %d: %v", round, c, err)
			}
			held := 0
			for _, f := range rd.frames {
				if f.ix != nil {
					held += f.ix.Blocks()
				}
			}
			if held > maxFrameBlocks+512 {
				t.Fatalf("round %d chunk %d: the heads kept index %d blocks, over %d and one chunk's", round, c, held, maxFrameBlocks)
			}
		}
	}
}

// TestDoneWithChunkDropsFrame: once told a chunk is done with, the
// reader holds neither its frame's head nor its decoded blocks, and its
// count of blocks held is the other chunks'; the chunk still reads right
// if asked again.
func TestDoneWithChunkDropsFrame(t *testing.T) {
	src := make([]byte, 1<<16)
	for i := range src {
		src[i] = byte(i * 7 / 5)
	}
	frame := smallBlockFrame(t, src, 128) // 512 blocks
	meta := `{"zarr_format": 2, "shape": [131072], "chunks": [65536], "dtype": "|u1", "compressor": {"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}, "fill_value": 0, "order": "C", "filters": null}`
	dir := t.TempDir()
	put(t, dir, map[string][]byte{".zarray": []byte(meta), "0": frame, "1": frame})
	rd := openReader(t, dir)
	got := make([]byte, 1000)
	for c := range 2 {
		// From the middle of a block: that block is decoded whole into
		// the block cache.
		if err := rd.ReadChunkRange(got, []int{c}, 300); err != nil || !bytes.Equal(got, src[300:1300]) {
			t.Fatalf("chunk %d: %v", c, err)
		}
	}
	rd.DoneWithChunk([]int{0})
	if _, ok := rd.frames["0"]; ok {
		t.Error("the head of chunk 0 is kept after it was done with")
	}
	if _, ok := rd.frames["1"]; !ok {
		t.Error("the head of chunk 1 was let go with chunk 0's")
	}
	if rd.frameBlocks != 1+512 {
		t.Errorf("the heads kept count %d blocks, want chunk 1's 513", rd.frameBlocks)
	}
	for _, b := range rd.blocks {
		if b.key == "0" {
			t.Errorf("block %d of chunk 0 is kept after it was done with", b.b)
		}
	}
	if err := rd.ReadChunkRange(got, []int{0}, 300); err != nil || !bytes.Equal(got, src[300:1300]) {
		t.Fatalf("chunk 0 read again: %v", err)
	}
}

// TestStoredBytesPooled: a local store's chunks are read into fileio's
// pooled buffers, one taken per chunk (plain, inner chunk of a shard, a
// span of a Blosc chunk read in ranges), and every one is handed back
// once decoded, a chunk the store lacks and a chunk that fails to decode
// included: the count of buffers out is where it was.
func TestStoredBytesPooled(t *testing.T) {
	fileio.CountBuffers()
	x := mkTensor(t, "", "float32", 2, 4, 40, 48)
	cases := []struct {
		name    string
		version int
		opt     format.WriteOptions
		ranged  bool
	}{
		{"v2 zstd", 2, format.WriteOptions{Codec: "zstd", Chunks: []int{1, 2, 16, 48}}, false},
		{"v2 blosc", 2, format.WriteOptions{Codec: "blosc-lz4-shuffle", Chunks: []int{1, 2, 16, 48}}, true},
		{"v3 sharded", 3, format.WriteOptions{Codec: "zstd", Chunks: []int{1, 2, 8, 16}, Shards: []int{1, 4, 16, 48}}, false},
	}
	for _, c := range cases {
		dir := filepath.Join(t.TempDir(), "a.zarr")
		writeStore(t, dir, c.version, []tensor{x}, c.opt)
		rd := openReader(t, dir)
		if rd.Ranged() != c.ranged {
			t.Fatalf("%s: Ranged %v", c.name, rd.Ranged())
		}
		shape := rd.ChunkShape()
		n := chunkBytes(rd.a)
		grid := make([]int, len(shape))
		for i := range shape {
			grid[i] = (x.h.Shape[i] + shape[i] - 1) / shape[i]
		}
		takenBefore, outBefore := fileio.BufferCounts()
		chunks := 0
		dst := make([]byte, n)
		for id := 0; ; id++ {
			idx, rest := make([]int, len(grid)), id
			for i := len(grid) - 1; i >= 0; i-- {
				idx[i], rest = rest%grid[i], rest/grid[i]
			}
			if rest > 0 {
				break
			}
			var err error
			if c.ranged {
				err = rd.ReadChunkRange(dst[:n/2], idx, n/4)
			} else {
				err = rd.ReadChunk(dst, idx)
			}
			if err != nil {
				t.Fatalf("%s chunk %v: %v", c.name, idx, err)
			}
			chunks++
		}
		if c.version == 2 {
			// A chunk that fails to decode, and one the store lacks.
			if err := os.WriteFile(filepath.Join(dir, "0.0.0.0"), []byte("not a chunk at all"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(dir, "0.0.1.0")); err != nil {
				t.Fatal(err)
			}
			rd = openReader(t, dir)
			if err := rd.ReadChunk(dst, []int{0, 0, 0, 0}); err == nil {
				t.Fatalf("%s: a chunk of garbage decoded", c.name)
			}
			if err := rd.ReadChunk(dst, []int{0, 0, 1, 0}); err != nil {
				t.Fatalf("%s: a missing chunk: %v", c.name, err)
			}
		}
		taken, out := fileio.BufferCounts()
		if taken-takenBefore < int64(chunks) {
			t.Errorf("%s: %d buffers taken for %d chunks: the stored bytes are not pooled", c.name, taken-takenBefore, chunks)
		}
		if out != outBefore {
			t.Errorf("%s: %d buffers out after reading, %d before", c.name, out, outBefore)
		}
	}
}
