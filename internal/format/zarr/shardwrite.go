package zarr

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// A sharded array is written an inner chunk at a time: each inner chunk,
// once encoded, goes straight to its shard's object, in whatever order
// the chunks are done, and the shard's index (offset and length of each
// inner chunk, then its crc32c) follows its last inner chunk. The
// sharding_indexed codec lets inner chunks lie anywhere in the shard,
// and a reader of ours reads neighbours in the file together in whatever
// order they lie (readChunks); what a shard holds in memory is its
// index, 16 bytes an inner chunk, never its body.

// objectStreamer is a StoreWriter that takes an object's bytes in order,
// a piece at a time (a local directory's file in its staging directory;
// a multipart upload to a place's prefix), so that a shard is never held
// whole. Close completes the object; an object not closed is dropped
// with the store when the store is aborted. A StoreWriter without
// Stream, or whose Stream says errors.ErrUnsupported, takes whole
// objects only: the shard is then spooled to a scratch file, and put
// from its mapping once its index is written (the file's pages are the
// page cache, not this process's memory).
type objectStreamer interface {
	Stream(key string) (io.WriteCloser, error)
}

// shardAssembler builds the shards of one array from its inner chunks.
// Safe from several goroutines.
type shardAssembler struct {
	sw   *storeWriter
	a    *wArray
	key  func(idx []int) string
	per  []int // inner chunks per shard along each axis
	grid []int // inner chunks along each axis, over the array

	mu   sync.Mutex
	open map[int]*openShard // by flat shard index
	done int                // shards completed
	held int64              // bytes held: the open shards' indexes
	peak int64
}

// openShard is a shard with inner chunks still to come.
type openShard struct {
	mu    sync.Mutex
	key   string
	w     io.WriteCloser // the object, or spool; nil until the first inner chunk
	spool *os.File       // the store takes whole objects: the shard so far
	size  uint64         // bytes of the shard written so far
	index []byte         // 16 bytes an inner chunk; all ones: empty
	left  int            // inner chunks still to come
	err   error
}

func newShardAssembler(sw *storeWriter, a *wArray, key func(idx []int) string) *shardAssembler {
	shape := rank0(a.h.Shape)
	s := &shardAssembler{sw: sw, a: a, key: key, per: make([]int, len(shape)), grid: make([]int, len(shape)), open: map[int]*openShard{}}
	for i := range shape {
		s.per[i] = a.shards[i] / a.chunks[i]
		s.grid[i] = (shape[i] + a.chunks[i] - 1) / a.chunks[i]
	}
	return s
}

// shards is how many shards the array has.
func (s *shardAssembler) shards() int {
	n := 1
	for i := range s.grid {
		n *= (s.grid[i] + s.per[i] - 1) / s.per[i]
	}
	return n
}

// add stores the encoded inner chunk at inner-grid index idx in its
// shard; the shard's last inner chunk writes its index and completes it.
// enc may be reused once add returns.
func (s *shardAssembler) add(idx []int, enc []byte) error {
	shard := make([]int, len(idx))
	q, flat := 0, 0
	for i := range idx {
		shard[i] = idx[i] / s.per[i]
		q = q*s.per[i] + idx[i]%s.per[i]
		flat = flat*((s.grid[i]+s.per[i]-1)/s.per[i]) + shard[i]
	}
	s.mu.Lock()
	o := s.open[flat]
	if o == nil {
		// The inner chunks of the shard that lie in the array: those past
		// its end are absent, their index entries empty.
		left := 1
		for i := range shard {
			left *= min(s.per[i], s.grid[i]-shard[i]*s.per[i])
		}
		n := prodInts(s.per)
		o = &openShard{key: s.key(shard), index: make([]byte, 16*n, 16*n+4), left: left}
		for i := range o.index {
			o.index[i] = 0xff
		}
		s.open[flat] = o
		s.hold(int64(cap(o.index)))
	}
	s.mu.Unlock()

	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	if o.left == 0 || binary.LittleEndian.Uint64(o.index[16*q:]) != ^uint64(0) {
		return fmt.Errorf("internal error: inner chunk %v of shard %s written twice", idx, o.key)
	}
	if o.w == nil {
		o.err = o.start(s.sw.w)
		if o.err != nil {
			return o.err
		}
	}
	if _, err := o.w.Write(enc); err != nil {
		o.err = err
		o.w.Close() // the object is dropped with the store
		return err
	}
	binary.LittleEndian.PutUint64(o.index[16*q:], o.size)
	binary.LittleEndian.PutUint64(o.index[16*q+8:], uint64(len(enc)))
	o.size += uint64(len(enc))
	o.left--
	if o.left > 0 {
		return nil
	}
	o.err = o.finish(s.sw.w)
	s.mu.Lock()
	delete(s.open, flat)
	s.done++
	s.held -= int64(cap(o.index))
	s.mu.Unlock()
	o.index = nil
	return o.err
}

// hold counts n more bytes held (s.mu held).
func (s *shardAssembler) hold(n int64) {
	s.held += n
	s.peak = max(s.peak, s.held)
}

// start opens the shard's object, or its spool where the store takes
// whole objects only.
func (o *openShard) start(w any) error {
	if st, ok := w.(objectStreamer); ok {
		sw, err := st.Stream(o.key)
		if err == nil {
			o.w = sw
			return nil
		}
		if !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
	}
	f, err := fileio.Scratch()
	if err != nil {
		return fmt.Errorf("a scratch file for shard %s: %w", o.key, err)
	}
	o.w, o.spool = f, f
	return nil
}

// finish writes the index, with its crc32c, at the shard's end (the
// metadata's index_location) and completes the object: closed, or put
// from its spool.
func (o *openShard) finish(w format.StoreWriter) error {
	o.index = binary.LittleEndian.AppendUint32(o.index, crc32.Checksum(o.index, castagnoli))
	if _, err := o.w.Write(o.index); err != nil {
		o.w.Close()
		return err
	}
	if o.spool == nil {
		return o.w.Close()
	}
	defer o.spool.Close()
	data, unmap, err := fileio.MapScratch(o.spool, int64(o.size)+int64(len(o.index)))
	if err != nil {
		return fmt.Errorf("shard %s: mapping its scratch file: %w", o.key, err)
	}
	err = w.Put(o.key, data)
	if uerr := unmap(); err == nil {
		err = uerr
	}
	return err
}

// complete says whether every shard was written whole: a run that ended
// early with no error would otherwise leave a store whose shards lack
// their index.
func (s *shardAssembler) complete() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.open) > 0 || s.done != s.shards() {
		return fmt.Errorf("internal error: %d of %d shards written, %d open", s.done, s.shards(), len(s.open))
	}
	return nil
}

// OutputShards is the shard shape of the next array when it is sharded
// and written a whole inner chunk at a time (OutputChunks is then its
// inner chunk shape), else nil: a writer of whole chunks orders its work
// shard by shard, so that few shards are open at once.
func (sw *storeWriter) OutputShards(name string) []int {
	if sw.OutputChunks(name) == nil {
		return nil
	}
	return slices.Clone(sw.arrays[sw.next].shards)
}

// keptMeta is a store input's metadata with the sharding an output keeps
// for some of its arrays: Inner, by name, is the inner chunk shape of an
// array whose Chunks are then its shards.
type keptMeta struct {
	*Meta
	Inner map[string][]int
}

// WithShards is m with array name of the given shape sharded as shards of
// inner chunks: what an output keeps of a sharded array that the
// operator carries over (both shapes through the same operator), or of
// one whose shape the job keeps.
func (m *Meta) WithShards(name string, shape, shards, inner []int) any {
	return (&keptMeta{Meta: m}).WithShards(name, shape, shards, inner)
}

// WithShards is WithShards (Meta's) of k, keeping k's other shardings.
func (k *keptMeta) WithShards(name string, shape, shards, inner []int) any {
	n := &keptMeta{Meta: k.Meta.WithChunks(name, shape, shards).(*Meta), Inner: map[string][]int{}}
	for a, c := range k.Inner {
		n.Inner[a] = c
	}
	n.Inner[name] = slices.Clone(inner)
	return n
}

// WithChunks is WithChunks (Meta's) of k: array name unsharded.
func (k *keptMeta) WithChunks(name string, shape, chunks []int) any {
	n := &keptMeta{Meta: k.Meta.WithChunks(name, shape, chunks).(*Meta), Inner: map[string][]int{}}
	for a, c := range k.Inner {
		if a != name {
			n.Inner[a] = c
		}
	}
	return n
}

// keepsShards says whether shards of inner chunks is a sharding a store
// of shape can be written in: the same rank, every extent positive and
// every shard a multiple of its inner chunk, and a shard of more than one
// inner chunk (an unsharded input's chunks are their own inner chunks).
func keepsShards(shape, shards, inner []int) bool {
	if len(shape) == 0 || len(shards) != len(shape) || len(inner) != len(shape) || slices.Equal(shards, inner) {
		return false
	}
	for i := range shape {
		if inner[i] < 1 || shards[i] < inner[i] || shards[i]%inner[i] != 0 {
			return false
		}
	}
	return true
}
