package pipeline

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

// readShardedV3 decodes a Zarr v3 array of codec "none" sharded with
// sharding_indexed (index at the end, with its crc32c), as the spec
// says, without the zarr package: its shape, shard and inner chunk
// shapes, and its C-order bytes (little-endian float32).
func readShardedV3(t *testing.T, dir string) (shape, shards, inner []int, data []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "zarr.json"))
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Shape     []int
		ChunkGrid struct {
			Configuration struct {
				ChunkShape []int `json:"chunk_shape"`
			}
		} `json:"chunk_grid"`
		Codecs []struct {
			Name          string
			Configuration struct {
				ChunkShape    []int  `json:"chunk_shape"`
				IndexLocation string `json:"index_location"`
				Codecs        []struct{ Name string }
			}
		}
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	if len(meta.Codecs) != 1 || meta.Codecs[0].Name != "sharding_indexed" {
		t.Fatalf("%s: not sharded: %s", dir, b)
	}
	cfg := meta.Codecs[0].Configuration
	if cfg.IndexLocation != "end" || len(cfg.Codecs) != 1 || cfg.Codecs[0].Name != "bytes" {
		t.Fatalf("%s: not the shards this reader reads: %s", dir, b)
	}
	shape, shards, inner = meta.Shape, meta.ChunkGrid.Configuration.ChunkShape, cfg.ChunkShape
	const size = 4
	r := len(shape)
	n := 1
	per := make([]int, r)
	sgrid := make([]int, r)
	nShards := 1
	for i := range r {
		per[i] = shards[i] / inner[i]
		n *= per[i]
		sgrid[i] = (shape[i] + shards[i] - 1) / shards[i]
		nShards *= sgrid[i]
	}
	elems := 1
	for _, d := range shape {
		elems *= d
	}
	data = make([]byte, elems*size)
	unravel := func(p int, dims []int) []int {
		idx := make([]int, len(dims))
		for i := len(dims) - 1; i >= 0; i-- {
			idx[i] = p % dims[i]
			p /= dims[i]
		}
		return idx
	}
	innerElems := 1
	for _, d := range inner {
		innerElems *= d
	}
	for s := range nShards {
		sidx := unravel(s, sgrid)
		key := "c"
		for _, x := range sidx {
			key += "/" + strconv.Itoa(x)
		}
		obj, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(key)))
		if err != nil {
			t.Fatal(err)
		}
		index := obj[len(obj)-16*n-4 : len(obj)-4]
		if crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli)) != binary.LittleEndian.Uint32(obj[len(obj)-4:]) {
			t.Fatalf("%s: its index's crc32c is wrong", key)
		}
		for q := range n {
			off, ln := binary.LittleEndian.Uint64(index[16*q:]), binary.LittleEndian.Uint64(index[16*q+8:])
			if off == ^uint64(0) {
				continue
			}
			if ln != uint64(innerElems*size) || off+ln > uint64(len(obj)-16*n-4) {
				t.Fatalf("%s: inner chunk %d at %d+%d", key, q, off, ln)
			}
			qidx := unravel(q, per)
			for e := range innerElems {
				pos := unravel(e, inner)
				o, in := 0, true
				for i := range r {
					pos[i] += (sidx[i]*per[i] + qidx[i]) * inner[i]
					in = in && pos[i] < shape[i]
					o = o*shape[i] + pos[i]
				}
				if in {
					copy(data[o*size:(o+1)*size], obj[off+uint64(e*size):])
				}
			}
		}
	}
	return shape, shards, inner, data
}

// TestShardedStoreChunkToChunk: s2d of a sharded v3 store into a v3
// store runs chunk to chunk and keeps the sharding through the operator
// (shards and inner chunks each through s2d); the shards read by the
// spec hold what s2d of the same array as npy gives, and so does the
// same sharded output written from the npy (in order, not chunk to
// chunk).
func TestShardedStoreChunkToChunk(t *testing.T) {
	dir := t.TempDir()
	shape := []int{2, 3, 28, 20}
	data := make([]byte, 2*3*28*20*4)
	rand.New(rand.NewSource(34)).Read(data)
	in := filepath.Join(dir, "in.npy")
	writeNpy(t, in, "<f4", shape, false, data)
	store := filepath.Join(dir, "in.zarr")
	if _, err := Transform(Options{Planner: ops.NewCopy, Source: Source{Path: in}, Output: store, To: "zarr3",
		Store: format.WriteOptions{Chunks: []int{1, 1, 4, 4}, Shards: []int{1, 2, 16, 8}}}); err != nil {
		t.Fatal(err)
	}
	s2d := func(src, out string, store format.WriteOptions) {
		t.Helper()
		to := "zarr3"
		if filepath.Ext(out) == ".npy" {
			to = "npy"
		}
		if _, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: src}, Output: out, To: format.Kind(to), Threads: 2, Store: store}); err != nil {
			t.Fatal(err)
		}
	}
	s2d(in, filepath.Join(dir, "want.npy"), format.WriteOptions{})
	want := readTensorData(t, filepath.Join(dir, "want.npy"))

	before := chunkToChunkJobs.Load()
	s2d(store, filepath.Join(dir, "out.zarr"), format.WriteOptions{Codec: "none"})
	if chunkToChunkJobs.Load() != before+1 {
		t.Error("the sharded store's s2d did not run chunk to chunk")
	}
	gotShape, shards, inner, got := readShardedV3(t, filepath.Join(dir, "out.zarr"))
	if !slices.Equal(gotShape, []int{2, 12, 14, 10}) || !slices.Equal(shards, []int{1, 8, 8, 4}) || !slices.Equal(inner, []int{1, 4, 2, 2}) {
		t.Errorf("shape %v, shards %v of inner chunks %v; want 2,12,14,10, shards 1,8,8,4 of 1,4,2,2", gotShape, shards, inner)
	}
	if !bytes.Equal(got, want) {
		t.Error("the shards hold other values than s2d of the npy")
	}
	if !bytes.Equal(readTensorData(t, filepath.Join(dir, "out.zarr")), want) {
		t.Error("depthspace reads other values than s2d of the npy")
	}

	before = chunkToChunkJobs.Load()
	s2d(in, filepath.Join(dir, "slab.zarr"), format.WriteOptions{Codec: "none", Chunks: inner, Shards: shards})
	if chunkToChunkJobs.Load() != before {
		t.Error("the npy's s2d ran chunk to chunk")
	}
	if _, _, _, slab := readShardedV3(t, filepath.Join(dir, "slab.zarr")); !bytes.Equal(slab, want) {
		t.Error("the npy's sharded s2d holds other values")
	}
}

// TestChunkRunByShard: groups ordered shard by shard come shard after
// shard (each shard's groups together, so one shard is done before the
// next is begun), every group kept once. In the operator's order they
// do not: s2d CRD fills the output a channel chunk at a time, row band
// after row band, and a shard spans two channel chunks.
func TestChunkRunByShard(t *testing.T) {
	p, err := ops.NewPlan(ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}, Order: ops.CRD}, []int{1, 4, 512, 1024}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	inner, shards := []int{1, 4, 32, 512}, []int{1, 8, 64, 512}
	r, ok := newChunkRun(p, []int{1, 1, 64, 1024}, inner)
	if !ok {
		t.Fatal("not run chunk to chunk")
	}
	shardOf := func(g runGroup) int {
		s := 0
		for i, x := range r.out.index(g.outs[0]) {
			per := shards[i] / inner[i]
			s = s*((r.out.n[i]+per-1)/per) + x/per
		}
		return s
	}
	sequence := func() []int {
		var s []int
		for _, g := range r.groups {
			s = append(s, shardOf(g))
		}
		return s
	}
	before := sequence()
	if slices.IsSorted(before) {
		t.Fatalf("the operator's order is shard by shard already (%v): the test needs one that is not", before)
	}
	runs := 0
	for _, g := range r.groups {
		runs += len(g.runs)
	}
	r.byShard(shards)
	after := sequence()
	if !slices.IsSorted(after) {
		t.Errorf("groups by shard: %v", after)
	}
	slices.Sort(before)
	if !slices.Equal(before, after) {
		t.Errorf("groups changed: %v, want %v", after, before)
	}
	n := 0
	for _, g := range r.groups {
		n += len(g.runs)
	}
	if n != runs {
		t.Errorf("%d runs after, %d before", n, runs)
	}
}
