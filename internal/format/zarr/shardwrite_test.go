package zarr

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"hash/crc32"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// wholeObjects is a store that takes whole objects only, as a prefix of
// a place does: no Stream.
type wholeObjects struct{ d *fileio.DirOutput }

func (w wholeObjects) Put(key string, data []byte) error { return w.d.Put(key, data) }
func (w wholeObjects) Commit() error                     { return w.d.Commit() }
func (w wholeObjects) Abort()                            { w.d.Abort() }

// innerChunks cuts a C-order array into the C-order bytes of each chunk
// of shape chunk (edge chunks whole, zeros past the array), by index.
func innerChunks(data []byte, shape, chunk []int, size int) map[string][]byte {
	grid := make([]int, len(shape))
	for i := range shape {
		grid[i] = (shape[i] + chunk[i] - 1) / chunk[i]
	}
	out := map[string][]byte{}
	for g := range prod(grid) {
		idx := unravel(g, grid)
		b := make([]byte, prod(chunk)*size)
		for e := range prod(chunk) {
			pos := unravel(e, chunk)
			in := true
			for i := range pos {
				pos[i] += idx[i] * chunk[i]
				in = in && pos[i] < shape[i]
			}
			if in {
				o := ravel(pos, shape) * size
				copy(b[e*size:], data[o:o+size])
			}
		}
		out[joinIndex(idx, ",")] = b
	}
	return out
}

// TestShardAssemblerHoldsIndexesOnly: a sharded array written a whole
// inner chunk at a time, the inner chunks in a random order from several
// goroutines, holds the open shards' indexes (16 bytes an inner chunk)
// and no shard's body: its peak is far below one shard's bytes, in a
// store that takes objects a piece at a time (a local directory) and in
// one that takes whole objects only (as a prefix of a place), where a
// shard is spooled to a scratch file until its index is written.
// Both stores read back as the array, by depthspace and by the spec
// (each shard's index at its end, its crc32c, the inner chunks where it
// says, absent past the array).
func TestShardAssemblerHoldsIndexesOnly(t *testing.T) {
	x := mkTensor(t, "", "float32", 2, 8, 44, 40)
	inner, shards := []int{1, 2, 8, 8}, []int{1, 8, 32, 32}
	chunks := innerChunks(x.data, x.h.Shape, inner, 4)
	innerBytes := prod(inner) * 4
	perShard := prod(shards) / prod(inner) // 64 inner chunks, 16 KiB each
	nShards := 2 * 1 * 2 * 2
	for _, streamed := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "a.zarr")
		out, err := fileio.CreateDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		var st format.StoreWriter = out
		if !streamed {
			st = wholeObjects{out}
		}
		mw, err := creator(3)(st, []format.MemberSpec{{Header: x.h}}, nil, format.WriteOptions{Codec: "none", Chunks: inner, Shards: shards})
		if err != nil {
			t.Fatal(err)
		}
		sw := mw.(*storeWriter)
		if got := sw.OutputShards(""); !slicesEqual(got, shards) {
			t.Fatalf("OutputShards %v, want %v", got, shards)
		}
		put, roomBytes, err := sw.ChunkWriter("", x.h)
		if err != nil || put == nil {
			t.Fatalf("ChunkWriter: %v", err)
		}
		keys := make([]string, 0, len(chunks))
		for k := range chunks {
			keys = append(keys, k)
		}
		rand.New(rand.NewSource(34)).Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		todo := make(chan string, len(keys))
		for _, k := range keys {
			todo <- k
		}
		close(todo)
		errs := make(chan error, 3)
		for range 3 {
			go func() {
				room := make([]byte, roomBytes)
				for k := range todo {
					if err := put(parseIndex(k), chunks[k], room); err != nil {
						errs <- err
						return
					}
				}
				errs <- nil
			}()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		peak := sw.assemblers[0].peak
		indexes := int64(nShards * (16*perShard + 4))
		if peak > indexes || peak <= 0 {
			t.Errorf("streamed %v: %d bytes held at the peak, not within the %d of every shard's index (a shard is %d bytes)", streamed, peak, indexes, perShard*innerBytes)
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := out.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := readStore(t, dir)[""]; !bytes.Equal(got.Data, x.data) {
			t.Errorf("streamed %v: depthspace reads back other values", streamed)
		}
		checkShardsBySpec(t, dir, x, inner, shards)
	}
}

// parseIndex is the index innerChunks keys a chunk by.
func parseIndex(k string) []int {
	var idx []int
	for _, s := range strings.Split(k, ",") {
		v, _ := strconv.Atoi(s)
		idx = append(idx, v)
	}
	return idx
}

func slicesEqual(a, b []int) bool { return format.ShapeString(a) == format.ShapeString(b) }

// checkShardsBySpec reads a store of codec "none" written with shards of
// inner chunks as the sharding_indexed codec says: the index at the
// shard's end, little-endian (offset, length) pairs then its crc32c; an
// inner chunk past the array absent (all ones), every other one present
// and holding its C-order bytes.
func checkShardsBySpec(t *testing.T, dir string, x tensor, inner, shards []int) {
	t.Helper()
	size := x.h.DType.Size
	want := innerChunks(x.data, x.h.Shape, inner, size)
	per := make([]int, len(shards))
	sgrid := make([]int, len(shards))
	for i := range shards {
		per[i] = shards[i] / inner[i]
		sgrid[i] = (x.h.Shape[i] + shards[i] - 1) / shards[i]
	}
	n := prod(per)
	for s := range prod(sgrid) {
		sidx := unravel(s, sgrid)
		b, err := os.ReadFile(filepath.Join(dir, "c", joinIndex(sidx, "/")))
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 16*n+4 {
			t.Fatalf("shard %v: %d bytes, no room for its index", sidx, len(b))
		}
		index := b[len(b)-16*n-4 : len(b)-4]
		if crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
			t.Fatalf("shard %v: the index's crc32c is wrong", sidx)
		}
		for q := range n {
			qidx := unravel(q, per)
			in := true
			for i := range qidx {
				qidx[i] += sidx[i] * per[i]
				in = in && qidx[i]*inner[i] < x.h.Shape[i]
			}
			off, ln := binary.LittleEndian.Uint64(index[16*q:]), binary.LittleEndian.Uint64(index[16*q+8:])
			if !in {
				if off != ^uint64(0) || ln != ^uint64(0) {
					t.Errorf("shard %v: inner chunk %v lies past the array but is not empty", sidx, qidx)
				}
				continue
			}
			if off+ln > uint64(len(b)-16*n-4) || !bytes.Equal(b[off:off+ln], want[joinIndex(qidx, ",")]) {
				t.Errorf("shard %v: inner chunk %v at %d+%d is not its bytes", sidx, qidx, off, ln)
			}
		}
	}
}

// TestChunkWriterShardsReadByZarrita: zarrita reads a sharded store
// written a whole inner chunk at a time, with the default codec.
func TestChunkWriterShardsReadByZarrita(t *testing.T) {
	zdir := zarritaDir(t)
	x := mkTensor(t, "", "float32", 1, 4, 20, 12)
	dir := filepath.Join(t.TempDir(), "a.zarr")
	out, err := fileio.CreateDir(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner := []int{1, 2, 4, 4}
	mw, err := creator(3)(out, []format.MemberSpec{{Header: x.h}}, nil, format.WriteOptions{Chunks: inner, Shards: []int{1, 4, 8, 8}})
	if err != nil {
		t.Fatal(err)
	}
	put, roomBytes, err := mw.(*storeWriter).ChunkWriter("", x.h)
	if err != nil || put == nil {
		t.Fatalf("ChunkWriter: %v", err)
	}
	room := make([]byte, roomBytes)
	for k, c := range innerChunks(x.data, x.h.Shape, inner, 4) {
		if err := put(parseIndex(k), c, room); err != nil {
			t.Fatal(err)
		}
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := out.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := exec.Command("node", filepath.Join(zdir, "read.mjs"), dir, "/").CombinedOutput()
	if err != nil {
		t.Fatalf("zarrita: %v\n%s", err, got)
	}
	var arr struct {
		Shape []int
		Hex   string
	}
	if err := json.Unmarshal(got, &arr); err != nil {
		t.Fatalf("zarrita: %v\n%s", err, got)
	}
	if format.ShapeString(arr.Shape) != format.ShapeString(x.h.Shape) || arr.Hex != hex.EncodeToString(x.data) {
		t.Errorf("zarrita reads shape %v and other values", arr.Shape)
	}
}

// TestChunkWriterBloscNeedsNoRoom: with a Blosc codec, ChunkWriter asks
// for no room (each chunk's frame is encoded over the chunk's bytes),
// and the chunks put without one, plain and sharded, read back as the
// array.
func TestChunkWriterBloscNeedsNoRoom(t *testing.T) {
	x := mkTensor(t, "", "float32", 2, 8, 44, 40)
	inner := []int{1, 2, 8, 8}
	for _, c := range []struct {
		version int
		codec   string
		shards  []int
	}{{2, "blosc-lz4-shuffle", nil}, {2, "blosc-lz4", nil}, {3, "blosc-lz4-shuffle", []int{1, 8, 32, 32}}} {
		dir := filepath.Join(t.TempDir(), "a.zarr")
		out, err := fileio.CreateDir(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		mw, err := creator(c.version)(out, []format.MemberSpec{{Header: x.h}}, nil, format.WriteOptions{Codec: c.codec, Chunks: inner, Shards: c.shards})
		if err != nil {
			t.Fatal(err)
		}
		put, roomBytes, err := mw.(*storeWriter).ChunkWriter("", x.h)
		if err != nil || put == nil {
			t.Fatalf("ChunkWriter: %v", err)
		}
		if roomBytes != 0 {
			t.Errorf("v%d %s: a room of %d bytes asked for", c.version, c.codec, roomBytes)
		}
		for k, chunk := range innerChunks(x.data, x.h.Shape, inner, 4) {
			if err := put(parseIndex(k), chunk, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := mw.Close(); err != nil {
			t.Fatal(err)
		}
		if err := out.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := readStore(t, dir)[""]; !bytes.Equal(got.Data, x.data) {
			t.Errorf("v%d %s: depthspace reads back other values", c.version, c.codec)
		}
	}
}
