package zarr

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/zarr/blosc"
	fileio "github.com/depthspace/depthspace/internal/io"
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

// Overlap is how many chunks a reader of this array should ask for at
// once to hide the store's round trips: the place's --io-jobs for an
// s3:// store, 0 for a local directory (as many as there are threads).
func (r *reader) Overlap() int {
	if s, ok := r.st.(interface{ InFlight() int }); ok {
		return s.InFlight()
	}
	return 0
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
// it is written a whole chunk at a time (one chunk per key, or one inner
// chunk of a shard), or nil when it takes its bytes in order only (an
// array of rank 0).
func (sw *storeWriter) OutputChunks(name string) []int {
	if sw.next >= len(sw.arrays) || sw.arrays[sw.next].name != name {
		return nil
	}
	a := sw.arrays[sw.next]
	if len(a.h.Shape) == 0 {
		return nil
	}
	return slices.Clone(a.chunks)
}

// ChunkWriter starts the next array (as Member does) for a writer of
// whole chunks: put encodes and stores the chunk at grid index idx from
// its C-order bytes (a whole chunk, an edge chunk padded with the fill
// value), encoding into room where the codec needs one: when roomBytes
// is above 0, room has roomBytes of capacity. put is safe from several
// goroutines, each with its own room. In a sharded array a chunk is an
// inner chunk, idx its index in the grid of inner chunks, and it goes to
// its shard's object as soon as it is encoded (shardAssembler).
//
// put may write over chunk: a Blosc frame is encoded over the chunk's
// own bytes (blosc.Encoder.EncodeLZ4InPlace), and needs no room. A room
// of the frame's size for each thread was the largest memory of a run
// chunk to chunk after its output chunks: the encoded frame (12.5 of
// 16 MiB in bench/zarr.sh's job) touched in a room per thread.
//
// The caller's room, reused from one put to the next: the store's Put
// has written the bytes (a directory's file) or copied them by the time
// it returns. Fresh memory for each encoded chunk was most of the heap
// of a run, which the collector lets grow to a multiple of it.
func (sw *storeWriter) ChunkWriter(name string, h format.Header) (put func(idx []int, chunk, room []byte) error, roomBytes int, err error) {
	if sw.OutputChunks(name) == nil {
		return nil, 0, nil
	}
	a := sw.arrays[sw.next]
	sw.next++
	s := &slabWriter{sw: sw, a: a} // for its key
	roomBytes = blosc.FrameBound(prodInts(a.chunks)*a.h.DType.Size, a.h.DType.Size)
	encode := func(chunk, room []byte) ([]byte, error) {
		return sw.encodeChunkInto(room[:0], chunk, a.h.DType.Size)
	}
	if mode, ok := bloscShuffle(sw.codec); ok {
		roomBytes = 0
		encode = func(chunk, _ []byte) ([]byte, error) {
			e := bloscEncoders.Get().(*blosc.Encoder)
			defer bloscEncoders.Put(e)
			return e.EncodeLZ4InPlace(chunk, a.h.DType.Size, mode, func(n int) []byte { return make([]byte, 0, n) })
		}
	}
	if a.shards != nil {
		asm := newShardAssembler(sw, a, func(idx []int) string { return a.prefix + s.key(idx) })
		sw.assemblers = append(sw.assemblers, asm)
		return func(idx []int, chunk, room []byte) error {
			enc, err := encode(chunk, room)
			if err != nil {
				return err
			}
			return asm.add(idx, enc)
		}, roomBytes, nil
	}
	return func(idx []int, chunk, room []byte) error {
		enc, err := encode(chunk, room)
		if err != nil {
			return err
		}
		return sw.w.Put(a.prefix+s.key(idx), enc)
	}, roomBytes, nil
}

// Ranged says that ReadChunkRange reads part of a chunk from part of its
// object: v2 chunks in C order compressed by Blosc, whose block table
// says where each block of the chunk is stored. Not in a store of
// objects (s3://), where each part would be a round trip of its own:
// there a chunk is one GET, read whole.
func (r *reader) Ranged() bool {
	if o, ok := r.st.(interface{ InFlight() int }); ok && o.InFlight() > 0 {
		return false
	}
	return r.a.bloscV2 && !r.a.FOrder && r.a.shard == nil
}

// ReadChunkRange fills dst with the bytes [off, off+len(dst)) of chunk
// idx's C-order bytes (Ranged arrays): the frame's head is read once per
// chunk, then only the blocks that hold the part; the fill value where
// the store lacks the chunk. Safe from several goroutines.
func (r *reader) ReadChunkRange(dst []byte, idx []int, off int) error {
	a := r.a
	key := r.prefix + a.key(keyIndex(a, idx))
	f := r.frameOf(key)
	if f.err != nil {
		return fmt.Errorf("chunk %s: %w", key, f.err)
	}
	if f.missing {
		fill(dst, a.Fill)
		return nil
	}
	ix := f.ix
	bs := ix.BlockSize
	if ix.Memcpyed() || len(dst) == 0 {
		return r.readSpan(key, ix, dst, off)
	}
	// The blocks wholly inside the part are decoded into dst; a block the
	// part cuts into is decoded whole once into the block cache, where
	// the parts of it that other runs read find it (a d2s reads each
	// input block in several parts, one per block offset).
	n := len(dst)
	for b := off / bs; b*bs < off+n; {
		first, size := b*bs, min(bs, ix.NBytes-b*bs)
		if first >= off && first+size <= off+n {
			e := b + 1
			for e*bs < off+n && min((e+1)*bs, ix.NBytes) <= off+n {
				e++
			}
			end := min(e*bs, ix.NBytes)
			if err := r.readSpan(key, ix, dst[first-off:end-off], first); err != nil {
				return err
			}
			b = e
			continue
		}
		blk, err := r.block(key, ix, b)
		if err != nil {
			return err
		}
		lo, hi := max(first, off), min(first+size, off+n)
		copy(dst[lo-off:hi-off], blk[lo-first:hi-first])
		b++
	}
	return nil
}

// readSpan reads and decodes the data bytes [off, off+len(dst)) of chunk
// key, whose frame's index is ix.
func (r *reader) readSpan(key string, ix *blosc.Index, dst []byte, off int) error {
	lo, hi := ix.Span(off, len(dst))
	stored, release, err := r.readRange(key, int64(lo), int64(hi-lo))
	if err != nil {
		return fmt.Errorf("chunk %s: %w", key, err)
	}
	defer release()
	tmp := spanScratch.Get().(*[]byte)
	defer spanScratch.Put(tmp)
	if need := 3 * ix.ScratchBlock(); cap(*tmp) < need {
		*tmp = make([]byte, need)
	}
	if err := ix.DecodeSpan(dst, off, stored, (*tmp)[:cap(*tmp)]); err != nil {
		return fmt.Errorf("chunk %s: %w", key, err)
	}
	return nil
}

// readRange reads n bytes of object key at off, into a buffer of
// fileio's pool that release hands back where the store can (intoStore):
// the spans a run reads are then no garbage for the collector.
func (r *reader) readRange(key string, off, n int64) (b []byte, release func(), err error) {
	return r.readRangeArriving(key, off, n, nil)
}

// readRangeArriving is readRange calling arriving (unless nil) once the
// answer begins to arrive, before a buffer is taken for it
// (fileio.ReadRangeArriving); not at all when the read fails first.
func (r *reader) readRangeArriving(key string, off, n int64, arriving func()) (b []byte, release func(), err error) {
	if into, ok := r.st.(intoStore); ok {
		get := fileio.GetBuffer
		if arriving != nil {
			get = func(n int) []byte {
				arriving()
				return fileio.GetBuffer(n)
			}
		}
		b, err = into.ReadRangeInto(key, off, n, get)
		if !errors.Is(err, errors.ErrUnsupported) {
			if err != nil {
				if b != nil {
					fileio.PutBuffer(b)
				}
				return nil, func() {}, err
			}
			return b, func() { fileio.PutBuffer(b) }, nil
		}
	}
	// A place's object: into the body pool where the place reads into
	// buffers of its own (fileio.ReadRangePooled).
	if arriving != nil {
		b, err = fileio.ReadRangeArriving(r.st, key, off, n, arriving)
	} else {
		b, err = fileio.ReadRangePooled(r.st, key, off, n)
	}
	if err != nil {
		return nil, func() {}, err
	}
	return b, func() { fileio.ReleaseBody(r.st, b) }, nil
}

// cachedBlock is one decoded block of a chunk, decoded once.
type cachedBlock struct {
	key  string
	b    int
	once sync.Once
	data []byte
	err  error
}

// blockCacheSize is how many decoded blocks the reader keeps: the parts
// of a block are read by runs close together, one per block offset of a
// d2s (4 for a block of 2, 9 for 3), on every worker.
const blockCacheSize = 32

// block is block b of chunk key decoded, from the cache or into it (the
// oldest block is let go).
func (r *reader) block(key string, ix *blosc.Index, b int) ([]byte, error) {
	r.framesMu.Lock()
	var c *cachedBlock
	for _, e := range r.blocks {
		if e.key == key && e.b == b {
			c = e
			break
		}
	}
	if c == nil {
		c = &cachedBlock{key: key, b: b}
		switch {
		case r.blocks == nil:
			r.blocks = make([]*cachedBlock, 0, blockCacheSize)
		case len(r.blocks) == blockCacheSize:
			// Shifted down in place: a block let go is not held on
			// behind the slice's start.
			copy(r.blocks, r.blocks[1:])
			r.blocks = r.blocks[:blockCacheSize-1]
		}
		r.blocks = append(r.blocks, c)
	}
	r.framesMu.Unlock()
	c.once.Do(func() {
		first := b * ix.BlockSize
		c.data = make([]byte, min(ix.BlockSize, ix.NBytes-first))
		c.err = r.readSpan(key, ix, c.data, first)
	})
	return c.data, c.err
}

// spanScratch holds DecodeSpan's scratch blocks between calls.
var spanScratch = sync.Pool{New: func() any { return new([]byte) }}

// frame is a chunk's Blosc head, read once: its index, or that the store
// lacks the chunk, or why it cannot be read.
type frame struct {
	once    sync.Once
	ix      *blosc.Index
	missing bool
	err     error
}

// frameOf reads (once) the head of chunk key's frame. The heads kept are
// 8 bytes a block: when a new one is asked for past maxFrameBlocks blocks
// (each head counting one more) and more heads than workers, they are
// all dropped and read again if asked for, so that chunks of many small
// blocks cost no more than their share.
func (r *reader) frameOf(key string) *frame {
	r.framesMu.Lock()
	f := r.frames[key]
	if f == nil {
		// Not while each worker may still read its own chunk's head.
		if r.frames == nil || r.frameBlocks > maxFrameBlocks && len(r.frames) > r.threads {
			r.frames, r.frameBlocks = map[string]*frame{}, 0
		}
		f = &frame{}
		r.frames[key] = f
	}
	r.framesMu.Unlock()
	f.once.Do(func() {
		f.ix, f.missing, f.err = r.readHead(key)
		n := 1
		if f.ix != nil {
			n += f.ix.Blocks()
		}
		r.framesMu.Lock()
		r.frameBlocks += n
		r.framesMu.Unlock()
	})
	return f
}

// DoneWithChunk lets go of what ReadChunkRange keeps of chunk idx (its
// frame's head and its decoded blocks): the caller reads no more of it.
// A chunk's runs are close together, so without this the heads of the
// chunks done with would stay until the bound on their blocks is
// reached, up to 8 MiB of them.
func (r *reader) DoneWithChunk(idx []int) {
	key := r.prefix + r.a.key(keyIndex(r.a, idx))
	r.framesMu.Lock()
	defer r.framesMu.Unlock()
	if f := r.frames[key]; f != nil {
		delete(r.frames, key)
		if f.ix != nil {
			r.frameBlocks -= 1 + f.ix.Blocks()
		} else {
			r.frameBlocks--
		}
	}
	r.blocks = slices.DeleteFunc(r.blocks, func(b *cachedBlock) bool { return b.key == key })
}

// maxFrameBlocks bounds the blocks of the heads kept: 8 MiB of them.
var maxFrameBlocks = 1 << 20 // a var: tests lower it

// readHead reads a chunk's Blosc header and block table, checking the
// object's size as a whole read does (readBounded) and the frame's
// uncompressed size against the chunk's.
func (r *reader) readHead(key string) (*blosc.Index, bool, error) {
	size, err := r.st.Size(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	if limit := maxStoredChunk(r.a); size > limit {
		return nil, false, fmt.Errorf("%s holds %d bytes, more than it can (at most %d): not read", key, size, limit)
	}
	first, err := r.st.ReadRange(key, 0, min(size, blosc.HeaderSize))
	if err != nil {
		return nil, false, err
	}
	hb, err := blosc.HeadBytes(first)
	if err != nil {
		return nil, false, err
	}
	if int64(hb) > size {
		return nil, false, fmt.Errorf("blosc frame of %d bytes cannot hold its %d-byte block table", size, hb)
	}
	head, err := r.st.ReadRange(key, 0, int64(hb))
	if err != nil {
		return nil, false, err
	}
	ix, err := blosc.ParseIndex(head, int(size))
	if err != nil {
		return nil, false, err
	}
	if ix.NBytes != chunkBytes(r.a) {
		return nil, false, fmt.Errorf("blosc frame holds %d bytes, want %d", ix.NBytes, chunkBytes(r.a))
	}
	return ix, false, nil
}
