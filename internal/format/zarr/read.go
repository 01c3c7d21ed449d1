package zarr

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// slabBytes bounds the part of an array assembled in memory at once
// (reading and writing): as many whole rows of chunks of the split axis
// as fit, at least one, or fewer rows than a chunk's when one row of
// chunks is larger (each chunk is then decoded once per slab it
// crosses). 16 MiB: one 16 MiB chunk, whose Blosc blocks decode on
// several goroutines; smaller chunks go to several goroutines each.
const slabBytes = 16 << 20

// node is one array of a store: where it lives and its metadata.
type node struct {
	st     format.Store
	prefix string // "" or "a/b/"
	a      *Array
}

// openArray reads the array at prefix, v2 or v3, or says there is none
// (nil, nil).
func openArray(st format.Store, prefix string) (*Array, error) {
	if b, err := readMeta(st, prefix+".zarray"); err == nil {
		return parseV2(b)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	b, err := readMeta(st, prefix+"zarr.json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	kind, err := parseV3Node(b)
	if err != nil || kind != "array" {
		return nil, err
	}
	return parseV3(b)
}

// isGroup says whether prefix holds a group's metadata.
func isGroup(st format.Store, prefix string) (bool, error) {
	if _, err := readMeta(st, prefix+".zgroup"); err == nil {
		return true, nil
	}
	b, err := readMeta(st, prefix+"zarr.json")
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	kind, err := parseV3Node(b)
	return kind == "group", err
}

// open lists a store's arrays: the root's, or a group's at any depth
// by path.
func open(st format.Store, opt format.OpenOptions) (*format.Archive, error) {
	a, err := openArray(st, "")
	if err != nil {
		return nil, err
	}
	if a != nil {
		return &format.Archive{Members: []format.Member{member(st, "", "", a, opt)}, Meta: &Meta{Version: a.Version, Chunks: map[string][]int{"": a.Chunks}, Shapes: map[string][]int{"": a.Header.Shape}}}, nil
	}
	g, err := isGroup(st, "")
	if err != nil {
		return nil, err
	}
	if !g {
		return nil, errors.New("is not a Zarr store: no .zarray, .zgroup or zarr.json")
	}
	meta := &Meta{Version: version(st), Chunks: map[string][]int{}, Shapes: map[string][]int{}}
	ar := &format.Archive{Meta: meta}
	if err := walkGroup(st, "", opt, ar); err != nil {
		return nil, err
	}
	return ar, nil
}

// version is a group's Zarr version.
func version(st format.Store) int {
	if _, err := readMeta(st, ".zgroup"); err == nil {
		return 2
	}
	return 3
}

// walkGroup adds the arrays under the group at prefix, in sorted order of
// their paths; it goes into subgroups, never into arrays.
func walkGroup(st format.Store, prefix string, opt format.OpenOptions, ar *format.Archive) error {
	names, err := st.List(prefix)
	if err != nil {
		return err
	}
	for _, n := range names {
		sub, ok := strings.CutSuffix(n, "/")
		if !ok {
			continue
		}
		p := prefix + sub + "/"
		a, err := openArray(st, p)
		if err != nil {
			return fmt.Errorf("%s: %w", prefix+sub, err)
		}
		if a != nil {
			ar.Members = append(ar.Members, member(st, p, prefix+sub, a, opt))
			ar.Meta.(*Meta).Chunks[prefix+sub] = a.Chunks
			ar.Meta.(*Meta).Shapes[prefix+sub] = a.Header.Shape
			continue
		}
		if g, err := isGroup(st, p); err != nil {
			return fmt.Errorf("%s: %w", prefix+sub, err)
		} else if g {
			if err := walkGroup(st, p, opt, ar); err != nil {
				return err
			}
		}
	}
	return nil
}

// Meta is what a Zarr input keeps for an output of the same format: its
// version, and each array's chunk shape by member name.
type Meta struct {
	Version int
	Chunks  map[string][]int
	Shapes  map[string][]int // the arrays' shapes, to tell a kept shape
}

func member(st format.Store, prefix, name string, a *Array, opt format.OpenOptions) format.Member {
	threads := opt.Threads
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	if r, ok := st.(interface{ InFlight() int }); ok {
		threads = max(threads, r.InFlight()) // a store of objects: requests overlap
	}
	return format.Member{Name: name, Header: a.Header, Lazy: &reader{node: node{st: st, prefix: prefix, a: a}, threads: threads}}
}

// reader decodes an array's chunks into its C-order bytes, a slab of
// rows at a time, the chunks of a slab on several goroutines.
type reader struct {
	node
	threads int
	info    survey // info's count of the chunks (info.go)
	// shards is ReadChunk's cache of shard indexes.
	shardsOnce sync.Once
	shards     *shardCache
	// frames are ReadChunkRange's chunk heads, blocks the blocks it
	// decoded whole to read parts of them, the newest last.
	framesMu    sync.Mutex
	frames      map[string]*frame
	frameBlocks int // the blocks of frames' indexes, and one per frame
	blocks      []*cachedBlock
}

func (r *reader) InflateData() ([]byte, error) {
	n := r.a.Header.DataBytes()
	if n > math.MaxInt {
		return nil, fmt.Errorf("array of %d bytes is too large", n)
	}
	b := make([]byte, 0, n)
	w := byteSink{&b}
	return b[:n], r.Inflate(w)
}

type byteSink struct{ b *[]byte }

func (s byteSink) Write(p []byte) (int, error) { *s.b = append(*s.b, p...); return len(p), nil }

// splitAxis is the axis slabs are cut along: the first whose chunk
// extent is over 1 (the last axis at most). The axes before it have
// chunks of 1, so a slab — one index on each of them, a run of rows of
// this one, all of the axes after — is contiguous in the C-order array
// and made of whole chunk rows of the axes from it on.
func splitAxis(unit []int) int {
	m := 0
	for m < len(unit)-1 && unit[m] == 1 {
		m++
	}
	return m
}

// Inflate writes the array's elements to w in C order.
func (r *reader) Inflate(w io.Writer) error {
	a := r.a
	shape := rank0(a.Header.Shape)
	for _, d := range shape {
		if d == 0 {
			return nil
		}
	}
	m := splitAxis(a.Inner)
	rowBytes := int64(a.Header.DType.Size)
	for _, d := range shape[m+1:] {
		rowBytes *= int64(d)
	}
	// As many whole chunk rows as fit slabBytes (so that a slab's chunks
	// go to several goroutines), else fewer rows than one.
	step := a.Inner[m]
	if n := slabBytes / (int64(step) * rowBytes); n > 1 {
		step *= int(n)
	} else if n == 0 {
		step = int(max(1, slabBytes/rowBytes))
	}
	slab := make([]byte, int64(min(step, shape[m]))*rowBytes)
	shards := &shardCache{chunks: a.Chunks}
	for p := range prodInts(shape[:m]) {
		prefix := unravelInts(p, shape[:m])
		for r0 := 0; r0 < shape[m]; r0 += step {
			r1 := min(r0+step, shape[m])
			buf := slab[:int64(r1-r0)*rowBytes]
			if err := r.slab(buf, prefix, r0, r1, shards); err != nil {
				return err
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
			shards.drop(prefix, r1/a.Chunks[m])
		}
	}
	return nil
}

// slab fills buf with rows r0…r1 of the split axis at the given index
// of the axes before it.
func (r *reader) slab(buf []byte, prefix []int, r0, r1 int, shards *shardCache) error {
	a := r.a
	shape := rank0(a.Header.Shape)
	m := len(prefix)
	// The chunks of the slab: prefix on the axes before m (chunks of 1
	// there), those crossing r0…r1 on axis m, all of them after.
	grid := make([]int, len(shape))
	for i := range shape {
		grid[i] = (shape[i] + a.Inner[i] - 1) / a.Inner[i]
	}
	first := r0 / a.Inner[m]
	grid[m] = (r1-1)/a.Inner[m] - first + 1
	var jobs [][]int
	for p := range prodInts(grid[m:]) {
		idx := append(slices.Clone(prefix), unravelInts(p, grid[m:])...)
		idx[m] += first
		jobs = append(jobs, idx)
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		fail error
	)
	for range min(r.threads, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			chunk := make([]byte, chunkBytes(a))
			for {
				mu.Lock()
				if next == len(jobs) || fail != nil {
					mu.Unlock()
					return
				}
				j := jobs[next]
				next++
				mu.Unlock()
				// A chunk that is whole rows of the slab is decoded in
				// place; another into chunk, then copied.
				dst, direct := r.inSlab(buf, j, r0, r1)
				if !direct {
					dst = chunk
				}
				if err := r.chunk(dst, j, shards); err != nil {
					mu.Lock()
					fail = err
					mu.Unlock()
					return
				}
				if !direct {
					// The chunk's extents before m are 1: its bytes are
					// those of its sub-chunk over the axes from m on.
					place(buf, chunk, j[m:], r0, r1, shape[m:], a.Inner[m:], a.Header.DType.Size)
				}
			}
		}()
	}
	wg.Wait()
	return fail
}

// inSlab is where chunk idx lies in the slab of rows r0…r1 of the split
// axis when its bytes are a contiguous run of it: the chunk spans the
// axes after the split axis whole and its rows lie in the slab and the
// array.
func (r *reader) inSlab(buf []byte, idx []int, r0, r1 int) ([]byte, bool) {
	a := r.a
	shape := rank0(a.Header.Shape)
	m := splitAxis(a.Inner)
	if a.FOrder && len(shape) > 1 {
		return nil, false
	}
	for i := m + 1; i < len(shape); i++ {
		if a.Inner[i] != shape[i] {
			return nil, false
		}
	}
	lo, hi := idx[m]*a.Inner[m], (idx[m]+1)*a.Inner[m]
	if lo < r0 || hi > r1 {
		return nil, false
	}
	row := len(buf) / (r1 - r0)
	return buf[(lo-r0)*row : (hi-r0)*row], true
}

func chunkBytes(a *Array) int {
	n := a.Header.DType.Size
	for _, c := range a.Inner {
		n *= c
	}
	return n
}

// place copies the part of chunk idx (C order over inner) that lies in
// rows r0…r1 into buf, the C-order bytes of those rows.
func place(buf, chunk []byte, idx []int, r0, r1 int, shape, inner []int, size int) {
	rank := len(shape)
	ext := make([]int, rank)
	dstOff, srcOff := 0, 0
	bshape := append([]int{r1 - r0}, shape[1:]...)
	dstStrides := cStrides(bshape, size)
	srcStrides := cStrides(inner, size)
	for i := range rank {
		lo, hi := idx[i]*inner[i], min((idx[i]+1)*inner[i], shape[i])
		if i == 0 {
			lo, hi = max(lo, r0), min(hi, r1)
			dstOff += (lo - r0) * dstStrides[0]
		} else {
			dstOff += lo * dstStrides[i]
		}
		srcOff += (lo - idx[i]*inner[i]) * srcStrides[i]
		ext[i] = hi - lo
	}
	copyBox(buf, chunk, dstOff, srcOff, ext, dstStrides, srcStrides, size)
}

// copyBox copies a box of extents ext (in elements of size bytes) from
// src at srcOff to dst at dstOff, each laid out with its own C strides
// (in bytes): a run of the last axis at a time, walking the outer axes.
func copyBox(dst, src []byte, dstOff, srcOff int, ext, dstStrides, srcStrides []int, size int) {
	rank := len(ext)
	run := ext[rank-1] * size
	pos := make([]int, rank-1)
	for {
		copy(dst[dstOff:dstOff+run], src[srcOff:srcOff+run])
		i := rank - 2
		for ; i >= 0; i-- {
			pos[i]++
			dstOff += dstStrides[i]
			srcOff += srcStrides[i]
			if pos[i] < ext[i] {
				break
			}
			dstOff -= dstStrides[i] * pos[i]
			srcOff -= srcStrides[i] * pos[i]
			pos[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// chunk fills dst with chunk idx of the read grid (Inner), C order:
// decoded from the store, or the fill value where the store lacks it.
func (r *reader) chunk(dst []byte, idx []int, shards *shardCache) error {
	raw, key, release, err := r.raw(idx, shards)
	if err != nil {
		return err
	}
	defer release()
	return r.decodeChunk(dst, raw, key)
}

// decodeChunk fills dst with the chunk whose stored bytes are raw (nil:
// the store lacks it, the fill value), key naming it in errors.
func (r *reader) decodeChunk(dst, raw []byte, key string) error {
	a := r.a
	if raw == nil {
		fill(dst, a.Fill)
		return nil
	}
	if !a.FOrder {
		if err := a.decode(dst, raw); err != nil {
			return fmt.Errorf("chunk %s: %w", key, err)
		}
		return nil
	}
	tmp := make([]byte, len(dst))
	if err := a.decode(tmp, raw); err != nil {
		return fmt.Errorf("chunk %s: %w", key, err)
	}
	// A Fortran-order chunk is C order over the reversed shape.
	n := len(a.Inner)
	rs, st := make([]int, n), cStrides(a.Inner, a.Header.DType.Size)
	rst := make([]int, n)
	for i := range n {
		rs[i], rst[i] = a.Inner[n-1-i], st[n-1-i]
	}
	scatter(dst, tmp, rs, rst, a.Header.DType.Size)
	return nil
}

// fill sets dst to the fill value v, repeated; to zeros when there is
// none (a v2 fill_value of null), never leaving what a reused buffer held.
func fill(dst, v []byte) {
	if len(v) == 0 {
		clear(dst)
		return
	}
	copy(dst, v)
	for n := len(v); n < len(dst); n *= 2 {
		copy(dst[n:], dst[:n])
	}
}

// raw reads the stored bytes of chunk idx of the read grid, and its key;
// nil bytes for a chunk the store lacks. release hands the bytes back
// once they are decoded: from a local directory they are read into
// fileio's pooled buffers (intoStore), off the Go heap.
func (r *reader) raw(idx []int, shards *shardCache) (b []byte, key string, release func(), err error) {
	a := r.a
	release = func() {}
	into, _ := r.st.(intoStore)
	if a.shard == nil {
		key := r.prefix + a.key(keyIndex(a, idx))
		err := errors.ErrUnsupported
		if into != nil {
			b, err = into.ReadBoundedInto(key, maxStoredChunk(a), fileio.GetBuffer)
			if err != nil && b != nil {
				fileio.PutBuffer(b)
			}
			if err == nil {
				pooled := b
				release = func() { fileio.PutBuffer(pooled) }
			}
		}
		if errors.Is(err, errors.ErrUnsupported) {
			b, err = readBounded(r.st, key, maxStoredChunk(a))
			if err == nil {
				body := b
				release = func() { fileio.ReleaseBody(r.st, body) }
			}
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, key, release, nil
		}
		if err != nil {
			return nil, key, release, fmt.Errorf("chunk %s: %w", key, err)
		}
		return b, key, release, nil
	}
	in, err := r.locate(idx, shards)
	if err != nil || in.missing {
		return nil, in.key, release, err
	}
	b, release, err = r.readRange(in.key, int64(in.off), int64(in.n))
	if err != nil {
		return nil, in.key, release, fmt.Errorf("shard %s: chunk %d: %w", in.key, in.pos, err)
	}
	return b, in.name(), release, nil
}

// intoStore is a store that reads an object, or part of one, into the
// caller's memory (a local directory): errors.ErrUnsupported where it
// cannot (a place's object).
type intoStore interface {
	ReadBoundedInto(key string, limit int64, get func(n int) []byte) ([]byte, error)
	ReadRangeInto(key string, off, n int64, get func(n int) []byte) ([]byte, error)
}

// innerChunk is where an inner chunk is stored: its shard's key, its
// place in the shard, and its bytes there (none: missing, the fill value).
type innerChunk struct {
	key     string
	pos     int
	off, n  uint64
	missing bool
}

func (c innerChunk) name() string { return fmt.Sprintf("%s[%d]", c.key, c.pos) }

// locate finds inner chunk idx of a sharded array in its shard's index.
func (r *reader) locate(idx []int, shards *shardCache) (innerChunk, error) {
	a := r.a
	// The shard holding the inner chunk, and its place in the shard.
	sidx := make([]int, len(idx))
	pos := 0
	for i := range idx {
		per := a.Chunks[i] / a.Inner[i]
		sidx[i] = idx[i] / per
		pos = pos*per + idx[i]%per
	}
	c := innerChunk{key: r.prefix + a.key(keyIndex(a, sidx)), pos: pos}
	index, err := shards.index(r, c.key, sidx)
	if err != nil {
		return c, err
	}
	if index == nil {
		c.missing = true
		return c, nil
	}
	c.off, c.n = index[2*pos], index[2*pos+1]
	if c.off == math.MaxUint64 && c.n == math.MaxUint64 {
		c.missing = true
		return c, nil
	}
	if c.off > math.MaxInt64/2 || c.n > maxChunkBytes+1<<20 {
		return c, fmt.Errorf("shard %s: its index puts chunk %d at %d, %d bytes: past any object", c.key, pos, c.off, c.n)
	}
	return c, nil
}

// Coalesces says whether ReadChunks reads neighbouring chunks in fewer
// requests than ReadChunk would: for a sharded array; the chunks of
// another are objects of their own, read one by one.
func (r *reader) Coalesces() bool { return r.a.shard != nil }

// ReadChunks decodes chunks idxs of the ChunkShape grid into dsts, as
// ReadChunk does each. The inner chunks of a shard that lie back to back
// in it, in the order given, are read in one ranged request: on a store
// of objects each request costs the server and any proxy on the way
// about a millisecond of CPU, a 1 MiB inner chunk's transfer hardly more.
// Never more of a shard than the chunks asked for. Safe from several
// goroutines.
func (r *reader) ReadChunks(dsts [][]byte, idxs [][]int) error {
	return r.readChunks(idxs, func() ([][]byte, error) { return dsts, nil })
}

// ReadChunksArriving is ReadChunks with the destinations, and the right
// to hold the answer's bytes, given by arriving, called once: when the
// first answer begins to arrive (its length known, its body not read,
// fileio.ReadRangeArriving), or before filling a missing chunk. A caller
// that bounds the bytes it holds waits in arriving while the requests
// are on their way, so that more of them can be, and their answers wait
// in the sockets; an error from arriving (the caller stopping) is
// returned. arriving is not called when reading fails before.
func (r *reader) ReadChunksArriving(idxs [][]int, arriving func() ([][]byte, error)) error {
	return r.readChunks(idxs, arriving)
}

func (r *reader) readChunks(idxs [][]int, arriving func() ([][]byte, error)) error {
	r.shardsOnce.Do(func() { r.shards = &shardCache{chunks: r.a.Chunks} })
	var dsts [][]byte
	var arriveErr error
	arrived := false
	arrive := func() {
		if !arrived {
			arrived = true
			dsts, arriveErr = arriving()
		}
	}
	if r.a.shard == nil {
		if arrive(); arriveErr != nil {
			return arriveErr
		}
		for i, idx := range idxs {
			if err := r.chunk(dsts[i], idx, r.shards); err != nil {
				return err
			}
		}
		return nil
	}
	ins := make([]innerChunk, len(idxs))
	for i, idx := range idxs {
		var err error
		if ins[i], err = r.locate(idx, r.shards); err != nil {
			return err
		}
	}
	// The chunks in the order they lie in their shards' files, so that
	// neighbours there are read in one range whatever the order asked: a
	// shard written chunk to chunk holds its inner chunks in the order
	// they were done, not in the grid's. Chunks the store lacks first.
	order := make([]int, len(ins))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		x, y := &ins[a], &ins[b]
		switch {
		case x.missing && y.missing:
			return 0
		case x.missing:
			return -1
		case y.missing:
			return 1
		}
		if c := strings.Compare(x.key, y.key); c != 0 {
			return c
		}
		return cmp.Compare(x.off, y.off)
	})
	for i := 0; i < len(order); {
		first := ins[order[i]]
		if first.missing {
			if arrive(); arriveErr != nil {
				return arriveErr
			}
			fill(dsts[order[i]], r.a.Fill)
			i++
			continue
		}
		j, end := i+1, first.off+first.n
		for j < len(order) && !ins[order[j]].missing && ins[order[j]].key == first.key && ins[order[j]].off == end {
			end += ins[order[j]].n
			j++
		}
		b, release, err := r.readRangeArriving(first.key, int64(first.off), int64(end-first.off), arrive)
		if err == nil && arriveErr != nil {
			release()
			return arriveErr
		}
		if err != nil {
			if j-i == 1 {
				return fmt.Errorf("shard %s: chunk %d: %w", first.key, first.pos, err)
			}
			return fmt.Errorf("shard %s: chunks %d to %d: %w", first.key, first.pos, ins[order[j-1]].pos, err)
		}
		for _, k := range order[i:j] {
			at := ins[k].off - first.off
			if err := r.decodeChunk(dsts[k], b[at:at+ins[k].n:at+ins[k].n], ins[k].name()); err != nil {
				release()
				return err
			}
		}
		release()
		i = j
	}
	return nil
}

// keyIndex is the index a key names: a scalar's chunk has none.
func keyIndex(a *Array, idx []int) []int {
	if len(a.Header.Shape) == 0 {
		return nil
	}
	return idx
}

// shardCache keeps the indexes of the shards a slab reads, read once
// each.
type shardCache struct {
	mu     sync.Mutex
	m      map[string]*shardIndex
	chunks []int // the shard shape
}

// shardPrefix is the shard grid index of an array index on the axes
// before the split axis.
func (c *shardCache) shardPrefix(prefix []int) []int {
	out := make([]int, len(prefix))
	for i, x := range prefix {
		out[i] = x / c.chunks[i]
	}
	return out
}

type shardIndex struct {
	once  sync.Once
	sidx  []int // the shard's index in the shard grid
	pairs []uint64
	err   error
}

// drop forgets the shards a slab order has passed: those at another
// index of the axes before the split axis, or before row on it (of the
// shard grid).
func (c *shardCache) drop(prefix []int, row int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := len(prefix)
	for k, v := range c.m {
		if v.sidx[m] < row || !slices.Equal(v.sidx[:m], c.shardPrefix(prefix)) {
			delete(c.m, k)
		}
	}
}

func (c *shardCache) index(r *reader, key string, sidx []int) ([]uint64, error) {
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]*shardIndex{}
	}
	e := c.m[key]
	if e == nil {
		e = &shardIndex{sidx: sidx}
		c.m[key] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.pairs, e.err = readIndex(r, key) })
	return e.pairs, e.err
}

// readIndex reads a shard's index, checks its crc32c, and returns its
// (offset, nbytes) pairs; nil for a shard the store lacks.
func readIndex(r *reader, key string) ([]uint64, error) {
	s := r.a.shard
	n := int64(s.indexBytes())
	off := -n
	if !s.indexAtEnd {
		off = 0
	}
	b, err := r.st.ReadRange(key, off, n)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shard %s: its index: %w", key, err)
	}
	return decodeIndex(s, b, key)
}

// decodeIndex checks a shard index's bytes (its crc32c) and reads its
// pairs.
func decodeIndex(s *sharding, b []byte, key string) ([]uint64, error) {
	body := b
	for i := len(s.index.bytes_) - 1; i >= 0; i-- {
		var err error
		if body, err = s.index.bytes_[i].decode(body, 16*s.perShard); err != nil {
			return nil, fmt.Errorf("shard %s: its index: %w", key, err)
		}
	}
	if len(body) != 16*s.perShard {
		return nil, fmt.Errorf("shard %s: its index is %d bytes, want %d", key, len(body), 16*s.perShard)
	}
	pairs := make([]uint64, 2*s.perShard)
	for i := range pairs {
		pairs[i] = binary.LittleEndian.Uint64(body[8*i:])
	}
	return pairs, nil
}

// maxMetaBytes bounds a metadata document (.zarray, .zgroup, zarr.json):
// what no store's metadata needs, so that a file posing as one is
// refused before it is read whole.
const maxMetaBytes = 16 << 20

// readMeta reads a metadata document of at most maxMetaBytes.
func readMeta(st format.Store, key string) ([]byte, error) {
	return readBounded(st, key, maxMetaBytes)
}

// maxStoredChunk bounds one stored chunk of a: its decoded bytes and
// what a codec can add to them (lz4's, zstd's and Blosc's worst cases
// are well under an eighth, deflate's a few bytes a block), so that a
// chunk file far larger than its array could need is refused unread.
func maxStoredChunk(a *Array) int64 {
	n := int64(a.Header.DType.Size)
	for _, c := range a.Chunks {
		n *= int64(c)
	}
	return n + n/8 + 64<<10
}

// readBounded reads the object key whole if it holds at most limit
// bytes; a larger one is an error naming its size, before anything is
// allocated for it.
func readBounded(st format.Store, key string, limit int64) ([]byte, error) {
	if d, ok := st.(*fileio.Dir); ok {
		return d.ReadBoundedPooled(key, limit) // chunk() gives it back
	}
	if r, ok := st.(interface {
		ReadBounded(key string, limit int64) ([]byte, error)
	}); ok {
		return r.ReadBounded(key, limit) // one request for an object
	}
	size, err := st.Size(key)
	if err != nil {
		return nil, err
	}
	if size > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than it can (at most %d): not read", key, size, limit)
	}
	return st.Read(key)
}
