package zarr

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
)

// zarrJSON is a v3 node's zarr.json.
type zarrJSON struct {
	ZarrFormat       json.Number     `json:"zarr_format"`
	NodeType         string          `json:"node_type"`
	Shape            json.RawMessage `json:"shape"`
	DataType         json.RawMessage `json:"data_type"`
	ChunkGrid        json.RawMessage `json:"chunk_grid"`
	ChunkKeyEncoding json.RawMessage `json:"chunk_key_encoding"`
	FillValue        json.RawMessage `json:"fill_value"`
	Codecs           json.RawMessage `json:"codecs"`
}

// named is v3's {"name": …, "configuration": {…}}.
type named struct {
	Name          string          `json:"name"`
	Configuration json.RawMessage `json:"configuration"`
}

// v3Types are the v3 data types depthspace reads, as numpy names them
// (r* raw bits are V of their bytes).
var v3Types = map[string]string{
	"bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
	"uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
	"float16": "float16", "float32": "float32", "float64": "float64",
	"complex64": "complex64", "complex128": "complex128", "bfloat16": "bfloat16",
}

// parseV3Node reads a zarr.json's node type.
func parseV3Node(b []byte) (string, error) {
	var z zarrJSON
	if err := strictJSON(b, &z); err != nil {
		return "", fmt.Errorf("zarr.json is not valid JSON: %w", err)
	}
	if z.ZarrFormat != "3" {
		return "", fmt.Errorf("zarr.json: zarr_format %q, want 3", z.ZarrFormat)
	}
	if z.NodeType != "array" && z.NodeType != "group" {
		return "", fmt.Errorf("zarr.json: node_type %q, want \"array\" or \"group\"", z.NodeType)
	}
	return z.NodeType, nil
}

// parseV3 reads an array's zarr.json.
func parseV3(b []byte) (*Array, error) {
	var z zarrJSON
	if err := strictJSON(b, &z); err != nil {
		return nil, fmt.Errorf("zarr.json is not valid JSON: %w", err)
	}
	shape, err := ints(z.Shape, "zarr.json shape")
	if err != nil {
		return nil, err
	}
	var typeName string
	if err := json.Unmarshal(z.DataType, &typeName); err != nil {
		return nil, fmt.Errorf("zarr.json data_type %s is not one depthspace reads", z.DataType)
	}
	dt, err := v3DType(typeName)
	if err != nil {
		return nil, err
	}
	var grid named
	if err := strictJSON(z.ChunkGrid, &grid); err != nil || grid.Name != "regular" {
		return nil, fmt.Errorf("zarr.json chunk_grid %s: want a \"regular\" grid", z.ChunkGrid)
	}
	var gridConf struct {
		ChunkShape json.RawMessage `json:"chunk_shape"`
	}
	if err := strictJSON(grid.Configuration, &gridConf); err != nil {
		return nil, fmt.Errorf("zarr.json chunk_grid configuration: %w", err)
	}
	chunks, err := ints(gridConf.ChunkShape, "zarr.json chunk_shape")
	if err != nil {
		return nil, err
	}
	if len(chunks) != len(shape) {
		return nil, fmt.Errorf("zarr.json chunk_shape %v has %d axes but the shape %v has %d", chunks, len(chunks), shape, len(shape))
	}
	a := &Array{Version: 3, Header: format.Header{Shape: shape}, Chunks: rank0(chunks), Inner: rank0(chunks)}
	if a.key, err = v3Keys(z.ChunkKeyEncoding); err != nil {
		return nil, err
	}
	var codecs []named
	if err := strictJSON(z.Codecs, &codecs); err != nil {
		return nil, fmt.Errorf("zarr.json codecs: %w", err)
	}
	c, err := parseChain(codecs, len(shape), dt)
	if err != nil {
		return nil, err
	}
	a.Codecs = c.names
	c.shape = chunks
	dt = c.dtype
	a.Header.DType = dt
	if a.Header.DataBytes() < 0 {
		return nil, fmt.Errorf("zarr.json shape %v of %s is too large", shape, dt)
	}
	if err := checkGrid(shape, chunks, dt.Size, "zarr.json chunk_shape"); err != nil {
		return nil, err
	}
	if c.shard != nil {
		s := c.shard
		if err := checkGrid(shape, s.inner, dt.Size, "sharding_indexed chunk_shape"); err != nil {
			return nil, err
		}
		n := 1
		for i, in := range s.inner {
			if chunks[i]%in != 0 {
				return nil, fmt.Errorf("sharding_indexed chunk_shape %v does not divide the shard shape %v", s.inner, chunks)
			}
			n *= chunks[i] / in
		}
		if int64(n)*16 > maxChunkBytes {
			return nil, fmt.Errorf("a shard of %v holds %d chunks of %v: its index is over 2 GiB", chunks, n, s.inner)
		}
		s.perShard = n
		a.shard = s
		a.Inner = rank0(s.inner)
		a.decode = s.inner_.decode
	} else {
		a.decode = c.decode
	}
	a.FillText = fillText(z.FillValue)
	if a.Fill, err = fillBytes(z.FillValue, dt); err != nil {
		return nil, fmt.Errorf("zarr.json %w", err)
	}
	return a, nil
}

func v3DType(name string) (format.DType, error) {
	if n, ok := v3Types[name]; ok {
		return format.ParseDType(n)
	}
	if bits, ok := strings.CutPrefix(name, "r"); ok {
		var n int
		if _, err := fmt.Sscanf(bits, "%d", &n); err == nil && n > 0 && n%8 == 0 && fmt.Sprint(n) == bits {
			return format.ParseDType(fmt.Sprintf("V%d", n/8))
		}
	}
	return format.DType{}, fmt.Errorf("zarr.json data_type %q is not one depthspace reads", name)
}

// v3Keys reads chunk_key_encoding: "default" (c/0/1, separator "/" or
// ".") or "v2" (0.1, separator "." or "/").
func v3Keys(raw json.RawMessage) (func([]int) string, error) {
	var e named
	if err := strictJSON(raw, &e); err != nil {
		return nil, fmt.Errorf("zarr.json chunk_key_encoding: %w", err)
	}
	var conf struct {
		Separator string `json:"separator"`
	}
	if len(e.Configuration) > 0 {
		if err := strictJSON(e.Configuration, &conf); err != nil {
			return nil, fmt.Errorf("zarr.json chunk_key_encoding: %w", err)
		}
	}
	sep := conf.Separator
	switch e.Name {
	case "default":
		if sep == "" {
			sep = "/"
		}
	case "v2":
		if sep == "" {
			sep = "."
		}
	default:
		return nil, fmt.Errorf("zarr.json chunk_key_encoding %q, want \"default\" or \"v2\"", e.Name)
	}
	if sep != "/" && sep != "." {
		return nil, fmt.Errorf("zarr.json chunk_key_encoding separator %q, want \"/\" or \".\"", sep)
	}
	if e.Name == "v2" {
		return func(idx []int) string {
			if len(idx) == 0 {
				return "0"
			}
			return joinIndex(idx, sep)
		}, nil
	}
	return func(idx []int) string {
		if len(idx) == 0 {
			return "c"
		}
		return "c" + sep + joinIndex(idx, sep)
	}, nil
}

// chain is a v3 codec pipeline: array→array codecs (transpose), one
// array→bytes codec (bytes, or sharding_indexed) and bytes→bytes codecs
// (blosc, gzip, zstd, crc32c), decoded in reverse.
type chain struct {
	dtype  format.DType
	names  []string
	order  []int // transpose's order; nil for none
	shape  []int // the chunk shape, to undo transpose
	bytes_ []bytesDecoder
	shard  *sharding
}

// sharding is sharding_indexed: shards of inner chunks, each encoded by
// its own chain, with an index of (offset, nbytes) per inner chunk.
type sharding struct {
	inner      []int
	inner_     *chain
	index      *chain
	indexAtEnd bool
	perShard   int // inner chunks per shard
}

// indexBytes is the size of a shard's index as stored.
func (s *sharding) indexBytes() int {
	n := 16 * s.perShard
	for _, name := range s.index.names {
		if name == "crc32c" {
			n += 4
		}
	}
	return n
}

func parseChain(codecs []named, rank int, dt format.DType) (*chain, error) {
	c := &chain{dtype: dt}
	stage := 0 // 0: array→array, 1: after array→bytes
	for _, k := range codecs {
		switch k.Name {
		case "transpose":
			if stage != 0 {
				return nil, fmt.Errorf("zarr.json codec transpose after the array→bytes codec")
			}
			var conf struct {
				Order json.RawMessage `json:"order"`
			}
			if err := strictJSON(k.Configuration, &conf); err != nil {
				return nil, fmt.Errorf("zarr.json transpose: %w", err)
			}
			order, err := ints(conf.Order, "zarr.json transpose order")
			if err != nil {
				return nil, err
			}
			sorted := slices.Sorted(slices.Values(order))
			for i, o := range sorted {
				if o != i || len(order) != rank {
					return nil, fmt.Errorf("zarr.json transpose order %v is not a permutation of %d axes", order, rank)
				}
			}
			if c.order != nil { // two transposes compose
				for i := range order {
					order[i] = c.order[order[i]]
				}
			}
			c.order = order
			c.names = append(c.names, fmt.Sprintf("transpose %v", order))
		case "bytes":
			if stage != 0 {
				return nil, fmt.Errorf("zarr.json has two array→bytes codecs")
			}
			stage = 1
			var conf struct {
				Endian string `json:"endian"`
			}
			if len(k.Configuration) > 0 {
				if err := strictJSON(k.Configuration, &conf); err != nil {
					return nil, fmt.Errorf("zarr.json bytes: %w", err)
				}
			}
			switch {
			case conf.Endian == "little":
				c.dtype = dt.WithOrder('<')
			case conf.Endian == "big":
				c.dtype = dt.WithOrder('>')
			case conf.Endian == "" && dt.Size == 1:
			default:
				return nil, fmt.Errorf("zarr.json bytes endian %q, want \"little\" or \"big\"", conf.Endian)
			}
			c.names = append(c.names, strings.TrimSpace("bytes "+conf.Endian))
		case "sharding_indexed":
			if stage != 0 {
				return nil, fmt.Errorf("zarr.json has two array→bytes codecs")
			}
			stage = 1
			s, err := parseSharding(k.Configuration, rank, dt)
			if err != nil {
				return nil, err
			}
			c.shard = s
			c.dtype = s.inner_.dtype
			c.names = append(c.names, fmt.Sprintf("sharding_indexed %v [%s]", s.inner, strings.Join(s.inner_.names, ", ")))
		case "blosc", "gzip", "zstd", "crc32c":
			if stage != 1 {
				return nil, fmt.Errorf("zarr.json codec %s before the array→bytes codec", k.Name)
			}
			d, name, err := bytesCodec(k)
			if err != nil {
				return nil, err
			}
			c.bytes_ = append(c.bytes_, d)
			c.names = append(c.names, name)
		default:
			return nil, fmt.Errorf("zarr.json codec %q is not one depthspace reads (bytes, transpose, blosc, gzip, zstd, crc32c, sharding_indexed)", k.Name)
		}
	}
	if stage != 1 {
		return nil, fmt.Errorf("zarr.json codecs have no array→bytes codec (bytes or sharding_indexed)")
	}
	if c.shard != nil && (c.order != nil || len(c.bytes_) > 0) {
		return nil, fmt.Errorf("zarr.json: codecs around sharding_indexed are not read; put them in its own codecs")
	}
	return c, nil
}

func parseSharding(raw json.RawMessage, rank int, dt format.DType) (*sharding, error) {
	var conf struct {
		ChunkShape    json.RawMessage `json:"chunk_shape"`
		Codecs        []named         `json:"codecs"`
		IndexCodecs   []named         `json:"index_codecs"`
		IndexLocation string          `json:"index_location"`
	}
	if err := strictJSON(raw, &conf); err != nil {
		return nil, fmt.Errorf("zarr.json sharding_indexed: %w", err)
	}
	inner, err := ints(conf.ChunkShape, "sharding_indexed chunk_shape")
	if err != nil {
		return nil, err
	}
	if len(inner) != rank {
		return nil, fmt.Errorf("sharding_indexed chunk_shape %v has %d axes, want %d", inner, len(inner), rank)
	}
	s := &sharding{inner: inner, indexAtEnd: true}
	switch conf.IndexLocation {
	case "", "end":
	case "start":
		s.indexAtEnd = false
	default:
		return nil, fmt.Errorf("sharding_indexed index_location %q, want \"start\" or \"end\"", conf.IndexLocation)
	}
	if s.inner_, err = parseChain(conf.Codecs, rank, dt); err != nil {
		return nil, err
	}
	if s.inner_.shard != nil {
		return nil, fmt.Errorf("sharding_indexed inside sharding_indexed is not read")
	}
	s.inner_.shape = inner
	u64, _ := format.ParseDType("uint64")
	if s.index, err = parseChain(conf.IndexCodecs, 2, u64); err != nil {
		return nil, fmt.Errorf("sharding_indexed index_codecs: %w", err)
	}
	if s.index.order != nil || s.index.dtype.Order != '<' {
		return nil, fmt.Errorf("sharding_indexed index_codecs: depthspace reads a little-endian index without transpose")
	}
	for _, n := range s.index.names {
		if n != "crc32c" && !strings.HasPrefix(n, "bytes") {
			return nil, fmt.Errorf("sharding_indexed index_codecs: %s is not read (bytes and crc32c are)", n)
		}
	}
	return s, nil
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bytesDecoder undoes a bytes→bytes codec. decode returns the bytes it
// wraps, size being what the chunk's elements take (the last decode must
// give exactly that). into, for a codec that decompresses, fills dst
// exactly instead: the codec undone last decodes straight into the
// chunk, with no buffer of its own to allocate and copy from (a 1 GiB
// array of 1 MiB zstd chunks made 1 GiB of such garbage).
type bytesDecoder struct {
	decode func(raw []byte, size int) ([]byte, error)
	into   func(dst, raw []byte) error
}

// bytesCodec reads a bytes→bytes codec.
func bytesCodec(k named) (bytesDecoder, string, error) {
	withDst := func(f func(dst, raw []byte) error) bytesDecoder {
		return bytesDecoder{decode: func(raw []byte, size int) ([]byte, error) {
			dst := make([]byte, size)
			return dst, f(dst, raw)
		}, into: f}
	}
	switch k.Name {
	case "crc32c":
		return bytesDecoder{decode: func(raw []byte, _ int) ([]byte, error) {
			if len(raw) < 4 {
				return nil, fmt.Errorf("crc32c: %d bytes hold no checksum", len(raw))
			}
			body := raw[:len(raw)-4]
			if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(raw[len(raw)-4:]); got != want {
				return nil, fmt.Errorf("crc32c %08x does not match the stored %08x", got, want)
			}
			return body, nil
		}}, "crc32c", nil
	case "gzip":
		return withDst(gzipChunk), "gzip", nil
	case "zstd":
		return withDst(zstdChunk), "zstd", nil
	case "blosc":
		var conf struct {
			CName   string          `json:"cname"`
			Shuffle json.RawMessage `json:"shuffle"`
		}
		if err := strictJSON(k.Configuration, &conf); err != nil {
			return bytesDecoder{}, "", fmt.Errorf("zarr.json blosc: %w", err)
		}
		return withDst(bloscChunk), "blosc " + conf.CName + " " + strings.Trim(string(conf.Shuffle), `"`), nil
	}
	return bytesDecoder{}, "", fmt.Errorf("zarr.json codec %q is not read", k.Name)
}

// decode turns one chunk's stored bytes into its elements in dst (C
// order of the chunk shape).
func (c *chain) decode(dst, raw []byte) error {
	b := raw
	for i := len(c.bytes_) - 1; i >= 0; i-- {
		d := c.bytes_[i]
		if i == 0 && d.into != nil {
			out := dst
			if c.order != nil {
				out = make([]byte, len(dst)) // transposed below
			}
			if err := d.into(out, b); err != nil {
				return err
			}
			b = out
			break
		}
		var err error
		// Only the last codec to undo must give the chunk's size; the
		// ones before it give what they hold (a crc32c strips 4 bytes).
		if b, err = d.decode(b, len(dst)); err != nil {
			return err
		}
	}
	if len(b) != len(dst) {
		return fmt.Errorf("chunk holds %d bytes, want %d", len(b), len(dst))
	}
	if c.order == nil {
		if len(b) > 0 && &b[0] != &dst[0] {
			copy(dst, b)
		}
		return nil
	}
	// b is the chunk transposed: its axis i is the chunk's axis order[i].
	tshape := make([]int, len(c.order))
	for i, o := range c.order {
		tshape[i] = c.shape[o]
	}
	strides := cStrides(c.shape, c.dtype.Size) // of dst
	tstrides := make([]int, len(c.order))
	for i, o := range c.order {
		tstrides[i] = strides[o]
	}
	scatter(dst, b, tshape, tstrides, c.dtype.Size)
	return nil
}

// cStrides are the byte strides of a C-order array of shape.
func cStrides(shape []int, size int) []int {
	s := make([]int, len(shape))
	n := size
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= shape[i]
	}
	return s
}

// scatter copies src, C order over shape, to dst at the given byte
// strides, size bytes per element.
func scatter(dst, src []byte, shape, strides []int, size int) {
	if len(shape) == 0 {
		copy(dst[:size], src[:size])
		return
	}
	idx := make([]int, len(shape))
	off := 0
	for p := 0; p+size <= len(src); p += size {
		copy(dst[off:off+size], src[p:p+size])
		for i := len(shape) - 1; i >= 0; i-- {
			idx[i]++
			off += strides[i]
			if idx[i] < shape[i] {
				break
			}
			off -= strides[i] * idx[i]
			idx[i] = 0
		}
	}
}
