package zarr

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/zarr/blosc"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// targetChunk is the size chosen chunks come near when neither --chunks
// nor the input's chunking says otherwise: 16 MiB, large enough that a
// store of many gigabytes has few thousand objects, small enough that a
// reader decodes one in a few milliseconds.
const targetChunk = 16 << 20

// Codecs --zarr-codec takes. v2's default is what zarr-python 2 writes
// (Blosc lz4, byte shuffle, clevel 5); v3's is zstd, the codec of the v3
// core spec that every v3 reader has.
var codecNames = []string{"blosc-lz4-shuffle", "blosc-lz4", "zstd", "gzip", "zlib", "lz4", "none"}

// CodecNames lists --zarr-codec's values.
func CodecNames() []string { return slices.Clone(codecNames) }

// chunksOf is the input's chunk shape of an array whose shape the job
// kept (convert, a member copied through), or the one an operator keeps
// (keptMeta), so that an output of the same format chunks it the same
// way; nil otherwise. inner is the inner chunk shape when the array is
// kept sharded (chunks is then the shard shape), else nil.
func chunksOf(meta any, name string, shape []int) (chunks, inner []int) {
	if k, ok := meta.(*keptMeta); ok {
		meta, inner = k.Meta, k.Inner[name]
	}
	m, ok := meta.(*Meta)
	if !ok || m.Chunks == nil || !slices.Equal(m.Shapes[name], shape) {
		return nil, nil
	}
	return m.Chunks[name], inner
}

// creator makes a store writer of one version.
func creator(version int) func(w format.StoreWriter, members []format.MemberSpec, meta any, opt format.WriteOptions) (format.MemberWriter, error) {
	return func(w format.StoreWriter, members []format.MemberSpec, meta any, opt format.WriteOptions) (format.MemberWriter, error) {
		codec := opt.Codec
		if codec == "" {
			codec = map[int]string{2: "blosc-lz4-shuffle", 3: "zstd"}[version]
		}
		if !slices.Contains(codecNames, codec) {
			return nil, fmt.Errorf("--zarr-codec %q is not one of %s", codec, strings.Join(codecNames, ", "))
		}
		if codec == "zlib" && version == 3 || codec == "lz4" && version == 3 {
			return nil, fmt.Errorf("--zarr-codec %s is a v2 compressor; v3 writes zstd, gzip, blosc-lz4-shuffle, blosc-lz4 or none", codec)
		}
		if opt.Shards != nil && version == 2 {
			return nil, errors.New("--zarr-shard: sharding is Zarr v3's; write --to zarr3")
		}
		threads := opt.Threads
		if threads < 1 {
			threads = runtime.GOMAXPROCS(0)
		}
		sw := &storeWriter{w: w, version: version, codec: codec, threads: threads}
		single := len(members) == 1 && members[0].Name == ""
		for _, m := range members {
			if !single {
				if err := checkName(m.Name); err != nil {
					return nil, err
				}
			}
			chunks, inner := chunksOf(meta, m.Name, m.Header.Shape)
			a, err := sw.layout(m, opt, chunks, inner)
			if err != nil {
				if m.Name != "" {
					return nil, fmt.Errorf("member %q: %w", m.Name, err)
				}
				return nil, err
			}
			sw.arrays = append(sw.arrays, a)
		}
		if !single {
			if err := checkNesting(members); err != nil {
				return nil, err
			}
		}
		return sw, nil
	}
}

// checkName refuses member names that are no path of a store's arrays.
func checkName(name string) error {
	if name == "" || path.Clean(name) != name || strings.HasPrefix(name, "/") || strings.HasPrefix(name, "../") || name == ".." {
		return fmt.Errorf("member name %q is not a path of an array in a Zarr group", name)
	}
	// Zarr v3's node names (core spec, "Node names") are not empty, hold
	// no "/", are not periods alone, and do not start with "__", which is
	// reserved; v2 keeps the names of its metadata objects (.zarray,
	// .zgroup, .zattrs). A node named "c" is a group's child like any
	// other: "c" is a chunk key's prefix inside an array only.
	for _, part := range strings.Split(name, "/") {
		if strings.Trim(part, ".") == "" || strings.HasPrefix(part, ".z") || part == "zarr.json" || strings.HasPrefix(part, "__") {
			return fmt.Errorf("member name %q: %q is a name Zarr keeps for itself", name, part)
		}
	}
	return nil
}

// checkNesting refuses an array whose path is a prefix of another's (an
// array cannot hold a node).
func checkNesting(members []format.MemberSpec) error {
	names := map[string]bool{}
	for _, m := range members {
		if names[m.Name] {
			return fmt.Errorf("member name %q appears twice", m.Name)
		}
		names[m.Name] = true
	}
	for _, m := range members {
		for p := path.Dir(m.Name); p != "."; p = path.Dir(p) {
			if names[p] {
				return fmt.Errorf("member %q lies inside member %q, an array", m.Name, p)
			}
		}
	}
	return nil
}

// wArray is one array being written.
type wArray struct {
	name   string
	prefix string
	h      format.Header
	chunks []int // the chunk (the inner chunk, when sharded)
	shards []int // nil: no sharding
	fill   []byte
}

// unit is what one key holds: a chunk, or a shard.
func (a *wArray) unit() []int {
	if a.shards != nil {
		return a.shards
	}
	return a.chunks
}

type storeWriter struct {
	w       format.StoreWriter
	version int
	codec   string
	threads int
	arrays  []*wArray
	next    int
	// assemblers are the sharded arrays' shard builders, checked whole
	// at Close.
	assemblers []*shardAssembler
}

// layout chooses an array's chunks and shards: --chunks, else the
// input's when they fit the shape, else near targetChunk. A v3 output
// given neither --chunks nor --zarr-shard keeps a sharded input's
// sharding (inner, the inner chunks of shards inChunks); given
// --zarr-shard alone, its inner chunks.
func (sw *storeWriter) layout(m format.MemberSpec, opt format.WriteOptions, inChunks, inner []int) (*wArray, error) {
	h := m.Header
	if h.DataBytes() < 0 {
		return nil, errors.New("tensor is too large")
	}
	if _, err := dtypeName(sw.version, h.DType); err != nil {
		return nil, err
	}
	shape := rank0(h.Shape)
	a := &wArray{name: m.Name, h: h, fill: make([]byte, h.DType.Size)}
	if m.Name != "" {
		a.prefix = m.Name + "/"
	}
	chosen := opt.Chunks != nil // else the input's, kept, or ours
	if opt.Chunks == nil && sw.version == 3 && keepsShards(h.Shape, inChunks, inner) {
		if opt.Shards == nil {
			opt.Chunks, opt.Shards = inner, inChunks
		}
		inChunks = inner // --zarr-shard alone: shards of the kept inner chunks
	}
	switch {
	case opt.Chunks != nil:
		if len(opt.Chunks) != len(h.Shape) {
			return nil, fmt.Errorf("--chunks %s has %d axes, the tensor (shape %s) %d", format.ShapeString(opt.Chunks), len(opt.Chunks), format.ShapeString(h.Shape), len(h.Shape))
		}
		a.chunks = rank0(slices.Clone(opt.Chunks))
	case len(inChunks) == len(h.Shape) && len(h.Shape) > 0:
		a.chunks = slices.Clone(inChunks)
	default:
		within := shape
		if opt.Shards != nil && len(opt.Shards) == len(h.Shape) {
			within = opt.Shards
		}
		target := targetChunk
		if opt.Shards != nil {
			target = 1 << 20 // inner chunks of a shard: read one by one
		}
		a.chunks = nearChunks(within, h.DType.Size, target)
	}
	if err := checkGrid(shape, a.chunks, h.DType.Size, "--chunks"); err != nil {
		return nil, err
	}
	if opt.Shards != nil {
		if len(opt.Shards) != len(h.Shape) {
			return nil, fmt.Errorf("--zarr-shard %s has %d axes, the tensor (shape %s) %d", format.ShapeString(opt.Shards), len(opt.Shards), format.ShapeString(h.Shape), len(h.Shape))
		}
		a.shards = rank0(slices.Clone(opt.Shards))
		for i := range a.shards {
			if a.shards[i] < 1 || a.shards[i]%a.chunks[i] != 0 {
				kept := ""
				if !chosen && len(inChunks) == len(h.Shape) {
					kept = " (the input's, kept: --chunks chooses others)"
				}
				return nil, fmt.Errorf("--zarr-shard %s is not a multiple of the chunks %s%s", format.ShapeString(opt.Shards), format.ShapeString(a.chunks), kept)
			}
		}
		if err := checkGrid(shape, a.shards, h.DType.Size, "--zarr-shard"); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// nearChunks cuts shape into chunks of about target bytes: whole rows of
// the last axes, cut along the first axis that must be (so a chunk is
// one contiguous run of the C-order array, and axis 0 is cut first);
// an extent that does not fill the target is kept whole; a cut extent
// divides the one it cuts where a divisor near it exists.
func nearChunks(shape []int, size, target int) []int {
	c := slices.Clone(rank0(shape))
	for i := range c {
		c[i] = max(c[i], 1)
	}
	for i := range c {
		inner := int64(size)
		for _, d := range c[i+1:] {
			inner *= int64(d)
		}
		if int64(c[i])*inner <= int64(target) {
			break
		}
		n := int(max(1, int64(target)/inner))
		for d := n; d > n/2 && d > 1; d-- {
			if c[i]%d == 0 {
				n = d
				break
			}
		}
		c[i] = n
		if inner <= int64(target) {
			break
		}
	}
	return c
}

// dtypeName is the dtype as the version's metadata names it.
func dtypeName(version int, d format.DType) (string, error) {
	if version == 2 {
		return d.Descr(), nil
	}
	switch d.Kind {
	case 'b':
		return "bool", nil
	case 'i', 'u', 'f', 'c':
		n := d.Name()
		if d.Order == '>' {
			n = map[byte]string{'i': "int", 'u': "uint", 'f': "float", 'c': "complex"}[d.Kind] + fmt.Sprint(8*d.Size)
		}
		return n, nil
	case 'V':
		if d.BFloat16 {
			return "bfloat16", nil
		}
		return fmt.Sprintf("r%d", 8*d.Size), nil
	}
	return "", fmt.Errorf("dtype %s has no Zarr v3 data type; write it as Zarr v2 (--to zarr)", d.Name())
}

// Member starts the next array: its writer cuts the C-order bytes into
// slabs of whole chunk rows, and each slab's chunks are encoded on
// several goroutines and put as they are done.
func (sw *storeWriter) Member(name string, h format.Header) (io.Writer, error) {
	if sw.next >= len(sw.arrays) || sw.arrays[sw.next].name != name {
		return nil, fmt.Errorf("internal error: member %q out of order", name)
	}
	a := sw.arrays[sw.next]
	sw.next++
	return newSlabWriter(sw, a), nil
}

// Close writes the metadata: each array's, then the groups', so that a
// reader that finds metadata finds its chunks.
func (sw *storeWriter) Close() error {
	for _, s := range sw.assemblers {
		if err := s.complete(); err != nil {
			return err
		}
	}
	groups := map[string]bool{}
	for _, a := range sw.arrays {
		if a.name != "" {
			for p := path.Dir(a.name); ; p = path.Dir(p) {
				if p == "." {
					groups[""] = true
					break
				}
				groups[p+"/"] = true
			}
		}
		key, b, err := sw.arrayMeta(a)
		if err != nil {
			return err
		}
		if err := sw.w.Put(a.prefix+key, b); err != nil {
			return err
		}
	}
	for _, g := range slices.Sorted(func(yield func(string) bool) {
		for g := range groups {
			if !yield(g) {
				return
			}
		}
	}) {
		key, b := ".zgroup", []byte("{\n    \"zarr_format\": 2\n}")
		if sw.version == 3 {
			key, b = "zarr.json", []byte("{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n  \"attributes\": {}\n}")
		}
		if err := sw.w.Put(g+key, b); err != nil {
			return err
		}
	}
	return nil
}

// fillJSON is the fill value written: zero of the dtype.
func fillJSON(version int, d format.DType) any {
	switch d.Kind {
	case 'b':
		return false
	case 'c':
		return []int{0, 0}
	case 'S', 'U':
		if version == 2 {
			return ""
		}
	case 'V':
		if version == 2 {
			return nil
		}
		return make([]int, d.Size)
	}
	return 0
}

func (sw *storeWriter) arrayMeta(a *wArray) (string, []byte, error) {
	dt, err := dtypeName(sw.version, a.h.DType)
	if err != nil {
		return "", nil, err
	}
	shape := a.h.Shape
	if shape == nil {
		shape = []int{}
	}
	chunks := a.unit()
	if len(a.h.Shape) == 0 {
		chunks = []int{}
	}
	if sw.version == 2 {
		meta := map[string]any{
			"zarr_format": 2, "shape": shape, "chunks": chunks, "dtype": dt, "order": "C",
			"compressor": v2CompressorJSON(sw.codec, a.h.DType.Size), "fill_value": fillJSON(2, a.h.DType),
			"filters": nil, "dimension_separator": ".",
		}
		b, err := metaJSON(meta, "    ")
		return ".zarray", b, err
	}
	codecs := v3CodecsJSON(sw.codec, a.h.DType)
	if a.shards != nil {
		inner := a.chunks
		if len(a.h.Shape) == 0 {
			inner = []int{}
		}
		codecs = []any{map[string]any{"name": "sharding_indexed", "configuration": map[string]any{
			"chunk_shape": inner, "codecs": codecs, "index_location": "end",
			"index_codecs": []any{
				map[string]any{"name": "bytes", "configuration": map[string]any{"endian": "little"}},
				map[string]any{"name": "crc32c"},
			},
		}}}
	}
	meta := map[string]any{
		"zarr_format": 3, "node_type": "array", "shape": shape, "data_type": dt,
		"chunk_grid":         map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": chunks}},
		"chunk_key_encoding": map[string]any{"name": "default", "configuration": map[string]any{"separator": "/"}},
		"fill_value":         fillJSON(3, a.h.DType), "codecs": codecs, "attributes": map[string]any{},
	}
	b, err := metaJSON(meta, "  ")
	return "zarr.json", b, err
}

// metaJSON writes metadata as zarr-python does: indented, keys sorted,
// '<' and '>' as they are (not \u003c).
func metaJSON(v any, indent string) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.SetIndent("", indent)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func v2CompressorJSON(codec string, typesize int) any {
	switch codec {
	case "blosc-lz4-shuffle":
		return map[string]any{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
	case "blosc-lz4":
		return map[string]any{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}
	case "zstd":
		return map[string]any{"id": "zstd", "level": 3}
	case "gzip":
		return map[string]any{"id": "gzip", "level": 5}
	case "zlib":
		return map[string]any{"id": "zlib", "level": 5}
	case "lz4":
		return map[string]any{"id": "lz4", "acceleration": 1}
	}
	return nil
}

func v3CodecsJSON(codec string, d format.DType) []any {
	bytesCodec := map[string]any{"name": "bytes"}
	if d.Size > 1 && d.Kind != 'S' && d.Kind != 'V' {
		endian := "little"
		if d.Order == '>' {
			endian = "big"
		}
		bytesCodec["configuration"] = map[string]any{"endian": endian}
	}
	cs := []any{bytesCodec}
	switch codec {
	case "zstd":
		cs = append(cs, map[string]any{"name": "zstd", "configuration": map[string]any{"level": 3, "checksum": false}})
	case "gzip":
		cs = append(cs, map[string]any{"name": "gzip", "configuration": map[string]any{"level": 5}})
	case "blosc-lz4-shuffle", "blosc-lz4":
		shuffle := "shuffle"
		if codec == "blosc-lz4" {
			shuffle = "noshuffle"
		}
		cs = append(cs, map[string]any{"name": "blosc", "configuration": map[string]any{"cname": "lz4", "clevel": 5, "shuffle": shuffle, "typesize": d.Size, "blocksize": 0}})
	}
	return cs
}

// encodeChunk compresses one chunk's bytes with the store's codec.
func (sw *storeWriter) encodeChunk(b []byte, typesize int) ([]byte, error) {
	return sw.encodeChunkInto(nil, b, typesize)
}

// encodeChunkInto is encodeChunk into room's memory where the codec can
// (Blosc, when room has blosc.FrameBound's). With a room, the caller
// encodes chunks on several goroutines (the run chunk to chunk), and a
// frame is made on one goroutine with an Encoder of the pool; without,
// a large frame's blocks are compressed on several (a slab of one
// chunk is one job).
func (sw *storeWriter) encodeChunkInto(room, b []byte, typesize int) ([]byte, error) {
	switch sw.codec {
	case "none":
		return b, nil
	case "blosc-lz4-shuffle", "blosc-lz4":
		mode, _ := bloscShuffle(sw.codec)
		if room != nil {
			e := bloscEncoders.Get().(*blosc.Encoder)
			defer bloscEncoders.Put(e)
			return e.EncodeLZ4(room, b, typesize, mode)
		}
		return blosc.EncodeLZ4(b, typesize, mode)
	case "zstd":
		if room == nil {
			room = make([]byte, 0, len(b)/2+64)
		}
		return zstdEncoder.EncodeAll(b, room), nil
	case "gzip", "zlib":
		var out bytes.Buffer
		var w io.WriteCloser
		if sw.codec == "gzip" {
			w, _ = gzip.NewWriterLevel(&out, 5)
		} else {
			w, _ = zlib.NewWriterLevel(&out, 5)
		}
		if _, err := w.Write(b); err != nil {
			return nil, err
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		return out.Bytes(), nil
	case "lz4":
		out := make([]byte, 4+lz4.CompressBlockBound(len(b)))
		binary.LittleEndian.PutUint32(out, uint32(len(b)))
		var c lz4.Compressor
		n, err := c.CompressBlock(b, out[4:])
		if err != nil {
			return nil, err
		}
		if n == 0 { // incompressible: lz4 still needs a block, of literals
			n, err = lz4.CompressBlockHC(b, out[4:], 0, nil, nil)
			if err != nil || n == 0 {
				return nil, fmt.Errorf("lz4 cannot encode a chunk of %d bytes", len(b))
			}
		}
		return out[:4+n], nil
	}
	return nil, fmt.Errorf("internal error: codec %q", sw.codec)
}

// bloscShuffle is the shuffle of a Blosc codec, and whether codec is one.
func bloscShuffle(codec string) (mode int, ok bool) {
	switch codec {
	case "blosc-lz4-shuffle":
		return blosc.Shuffle, true
	case "blosc-lz4":
		return blosc.NoShuffle, true
	}
	return 0, false
}

// bloscEncoders keep their buffers and lz4 state from chunk to chunk.
var bloscEncoders = sync.Pool{New: func() any { return new(blosc.Encoder) }}

// zstdEncoder is shared: EncodeAll is safe from several goroutines.
// Single segment: every frame then states its content size, which
// numcodecs' Zstd needs to decode it (a small frame otherwise has none).
// It is made on first use: made at start, it was most of this package's
// initialisation in every run, Zarr or not (docs/performance.md,
// Start-up). No content checksum: the metadata written beside the chunks
// says `"checksum": false` (zstd's codec configuration in v3, numcodecs'
// default in v2), and a frame should be as its codec says.
var zstdEncoder = lazyEncoder{sync.OnceValue(func() *zstd.Encoder {
	e, _ := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithSingleSegment(true), zstd.WithEncoderCRC(false))
	return e
})}

// lazyEncoder is a zstd encoder made when first asked for.
type lazyEncoder struct{ encoder func() *zstd.Encoder }

func (l lazyEncoder) EncodeAll(src, dst []byte) []byte { return l.encoder().EncodeAll(src, dst) }

// slabWriter takes an array's C-order bytes and, each time a slab is
// full, encodes its units (chunks or shards) and puts them. A slab is one
// index on the axes before the split axis (units of 1 there), a unit's
// rows of that axis, and all of the axes after it: whole units, and
// contiguous in the C-order array (splitAxis).
type slabWriter struct {
	sw       *storeWriter
	a        *wArray
	shape    []int
	m        int // the split axis
	rowBytes int64
	slab     []byte
	filled   int
	prefix   int // the slab's index on the axes before m, flat
	row0     int // the slab's first row on axis m
	shards   *shardAssembler
}

func newSlabWriter(sw *storeWriter, a *wArray) *slabWriter {
	shape := rank0(a.h.Shape)
	m := splitAxis(a.unit())
	rowBytes := int64(a.h.DType.Size)
	for _, d := range shape[m+1:] {
		rowBytes *= int64(d)
	}
	s := &slabWriter{sw: sw, a: a, shape: shape, m: m, rowBytes: rowBytes}
	s.slab = make([]byte, int64(s.rows())*rowBytes)
	if a.shards != nil {
		s.shards = newShardAssembler(sw, a, func(idx []int) string { return a.prefix + s.key(idx) })
		sw.assemblers = append(sw.assemblers, s.shards)
	}
	return s
}

// rows is how many rows of the split axis the next slab takes: as many
// whole units as fit slabBytes (their encoding then goes to several
// goroutines), at least one, and no more than are left.
func (s *slabWriter) rows() int {
	if prodInts(s.shape) == 0 || s.prefix == prodInts(s.shape[:s.m]) {
		return 0
	}
	u := s.a.unit()[s.m]
	k := max(1, int(slabBytes/(int64(u)*max(s.rowBytes, 1))))
	return min(k*u, s.shape[s.m]-s.row0)
}

func (s *slabWriter) Write(p []byte) (int, error) {
	n := 0
	for len(p) > 0 {
		if len(s.slab) == 0 {
			return n, errors.New("internal error: data past the array's end")
		}
		c := copy(s.slab[s.filled:], p)
		s.filled += c
		n += c
		p = p[c:]
		if s.filled == len(s.slab) {
			if err := s.flush(); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

// flush encodes and puts the full slab's units.
func (s *slabWriter) flush() error {
	a := s.a
	unit := a.unit()
	m := s.m
	rows := int(int64(len(s.slab)) / max(s.rowBytes, 1))
	grid := make([]int, len(s.shape))
	for i := range grid {
		grid[i] = (s.shape[i] + unit[i] - 1) / unit[i]
	}
	prefix := unravelInts(s.prefix, s.shape[:m])
	var jobs [][]int
	for u := s.row0 / unit[m]; u*unit[m] < s.row0+rows; u++ {
		for p := range prodInts(grid[m+1:]) {
			jobs = append(jobs, append(append(slices.Clone(prefix), u), unravelInts(p, grid[m+1:])...))
		}
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		fail error
	)
	for range min(s.sw.threads, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(jobs) || fail != nil {
					mu.Unlock()
					return
				}
				idx := jobs[next]
				next++
				mu.Unlock()
				if err := s.putUnit(idx, rows); err != nil {
					mu.Lock()
					fail = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if fail != nil {
		return fail
	}
	s.row0 += rows
	s.filled = 0
	if s.row0 == s.shape[m] {
		s.row0 = 0
		s.prefix++
	}
	s.slab = s.slab[:cap(s.slab)][:int64(s.rows())*s.rowBytes]
	return nil
}

// inSlab is the chunk at origin as a run of the slab's bytes, when it is
// one: it spans the axes after the split axis whole and its rows lie in
// the slab (none past the array's end).
func (s *slabWriter) inSlab(origin []int, rows int) ([]byte, bool) {
	m, c := s.m, s.a.chunks
	for i := m + 1; i < len(s.shape); i++ {
		if c[i] != s.shape[i] {
			return nil, false
		}
	}
	lo := origin[m] - s.row0
	if lo+c[m] > rows {
		return nil, false
	}
	return s.slab[int64(lo)*s.rowBytes : int64(lo+c[m])*s.rowBytes], true
}

// extract copies the chunk of shape cshape at origin out of the slab
// (rows row0… of the split axis), padding what lies past the array with
// the fill value. Its extents before the split axis are 1: its bytes are
// those of its sub-chunk over the axes from the split axis on.
func (s *slabWriter) extract(dst []byte, origin, cshape []int, rows int) {
	size := s.a.h.DType.Size
	fill(dst, s.a.fill)
	origin, cshape = origin[s.m:], cshape[s.m:]
	bshape := append([]int{rows}, s.shape[s.m+1:]...)
	srcStrides := cStrides(bshape, size)
	dstStrides := cStrides(cshape, size)
	ext := make([]int, len(cshape))
	srcOff := 0
	for i := range cshape {
		o := origin[i]
		if i == 0 {
			o -= s.row0
		}
		ext[i] = min(cshape[i], bshape[i]-o)
		if ext[i] <= 0 {
			return
		}
		srcOff += o * srcStrides[i]
	}
	copyBox(dst, s.slab, 0, srcOff, ext, dstStrides, srcStrides, size)
}

// putUnit encodes and puts the chunk or shard at grid index idx.
func (s *slabWriter) putUnit(idx []int, rows int) error {
	a := s.a
	size := a.h.DType.Size
	unit := a.unit()
	key := a.prefix + s.key(idx)
	origin := make([]int, len(idx))
	for i := range idx {
		origin[i] = idx[i] * unit[i]
	}
	if a.shards == nil {
		chunk, ok := s.inSlab(origin, rows)
		if !ok {
			chunk = make([]byte, prodInts(a.chunks)*size)
			s.extract(chunk, origin, a.chunks, rows)
		}
		enc, err := s.sw.encodeChunk(chunk, size)
		if err != nil {
			return err
		}
		return s.sw.w.Put(key, enc)
	}
	chunk := make([]byte, prodInts(a.chunks)*size)
	per := make([]int, len(unit))
	for i := range per {
		per[i] = unit[i] / a.chunks[i]
	}
	inner := make([]int, len(idx))
	for q := range prodInts(per) {
		qidx := unravelInts(q, per)
		io := make([]int, len(qidx))
		inside := true
		for i := range qidx {
			io[i] = origin[i] + qidx[i]*a.chunks[i]
			inner[i] = idx[i]*per[i] + qidx[i]
			inside = inside && io[i] < s.shape[i]
		}
		if !inside { // wholly past the array: absent from the shard
			continue
		}
		s.extract(chunk, io, a.chunks, rows)
		enc, err := s.sw.encodeChunk(chunk, size)
		if err != nil {
			return err
		}
		if err := s.shards.add(inner, enc); err != nil {
			return err
		}
	}
	return nil
}

func (s *slabWriter) key(idx []int) string {
	if len(s.a.h.Shape) == 0 {
		idx = nil
	}
	if s.sw.version == 2 {
		if len(idx) == 0 {
			return "0"
		}
		return joinIndex(idx, ".")
	}
	if len(idx) == 0 {
		return "c"
	}
	return "c/" + joinIndex(idx, "/")
}

func prodInts(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

func unravelInts(p int, shape []int) []int {
	idx := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		idx[i] = p % shape[i]
		p /= shape[i]
	}
	return idx
}
