package zarr

import (
	"slices"

	"github.com/depthspace/depthspace/internal/format"
)

// A job whose output chunks are each a function of a few input chunks
// (an operator of whole blocks from a chunked array into a chunked
// array) runs chunk to chunk: the pipeline decodes the input's chunks
// and hands the output's whole chunks over, with no copy of the whole
// array on the way. These are the two ends of that.

// ChunkShape is the shape one ReadChunk decodes: a chunk, or the inner
// chunk of a shard.
func (r *reader) ChunkShape() []int { return slices.Clone(rank0(r.a.Inner)) }

// ReadChunk decodes chunk idx of the ChunkShape grid into dst, the C-order
// bytes of a whole chunk (an edge chunk is stored whole too): the fill
// value where the store lacks it. Safe from several goroutines.
func (r *reader) ReadChunk(dst []byte, idx []int) error {
	r.shardsOnce.Do(func() { r.shards = &shardCache{chunks: r.a.Chunks} })
	return r.chunk(dst, idx, r.shards)
}

// ChunksOf is the shape and chunk shape of the input array name, as an
// output of the same format would keep them; nil when it has none.
func (m *Meta) ChunksOf(name string) (shape, chunks []int) {
	if m == nil || m.Chunks == nil {
		return nil, nil
	}
	return m.Shapes[name], m.Chunks[name]
}

// WithChunks is m with array name of the given shape chunked as chunks:
// what an output keeps for an array an operator changed, whose chunks
// the operator carries over (the input's chunk shape through the same
// operator).
func (m *Meta) WithChunks(name string, shape, chunks []int) any {
	n := &Meta{Version: m.Version, Chunks: map[string][]int{}, Shapes: map[string][]int{}}
	for k, v := range m.Chunks {
		n.Chunks[k] = v
	}
	for k, v := range m.Shapes {
		n.Shapes[k] = v
	}
	n.Chunks[name], n.Shapes[name] = slices.Clone(chunks), slices.Clone(shape)
	return n
}

// OutputChunks is the chunk shape the next array will be written in when
// it is written a whole chunk at a time (one chunk per key), or nil when
// it takes its bytes in order only (sharded: a shard's inner chunks are
// written together).
func (sw *storeWriter) OutputChunks(name string) []int {
	if sw.next >= len(sw.arrays) || sw.arrays[sw.next].name != name {
		return nil
	}
	a := sw.arrays[sw.next]
	if a.shards != nil || len(a.h.Shape) == 0 {
		return nil
	}
	return slices.Clone(a.chunks)
}

// ChunkWriter starts the next array (as Member does) for a writer of
// whole chunks: put encodes and stores the chunk at grid index idx from
// its C-order bytes (a whole chunk, an edge chunk padded with the fill
// value). put is safe from several goroutines.
func (sw *storeWriter) ChunkWriter(name string, h format.Header) (put func(idx []int, chunk []byte) error, err error) {
	if sw.OutputChunks(name) == nil {
		return nil, nil
	}
	a := sw.arrays[sw.next]
	sw.next++
	s := &slabWriter{sw: sw, a: a} // for its key
	return func(idx []int, chunk []byte) error {
		enc, err := sw.encodeChunk(chunk, a.h.DType.Size)
		if err != nil {
			return err
		}
		return sw.w.Put(a.prefix+s.key(idx), enc)
	}, nil
}
