package zarr

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/zarr/blosc"
	"github.com/depthspace/depthspace/internal/testpeer"
	"github.com/klauspost/compress/zstd"
)

// This file's encoder writes v3 stores from the specification alone
// (zarr.json, chunk keys, the codecs' bytes, the shard index), simply and
// element by element, so that the reader is checked against something
// that does not share its code.

// v3Spec is one store to write.
type v3Spec struct {
	shape, chunks []int
	dtype         string // v3 name
	size          int
	big           bool
	transpose     []int
	bytesCodecs   []string // gzip, zstd, blosc, crc32c, in encoding order
	keys          string   // "default" or "v2"
	sep           string
	fill          any
	// sharding: chunks are shards of inner chunks.
	inner       []int
	indexStart  bool
	emptyInner  func(pos int) bool // inner chunks left empty in the index
	skipChunk   func(idx []int) bool
	corruptCRC  bool
	indexPastIt bool
}

// value is the test array's element at flat C index i, as little-endian
// bytes of size.
func value(i, size int) []byte {
	b := make([]byte, size)
	v := uint64(i)*2654435761 + 17
	for j := range b {
		b[j] = byte(v >> (8 * (j % 8)))
	}
	return b
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// unravel gives the C-order index of flat position p in shape.
func unravel(p int, shape []int) []int {
	idx := make([]int, len(shape))
	for i := len(shape) - 1; i >= 0; i-- {
		idx[i] = p % shape[i]
		p /= shape[i]
	}
	return idx
}

func ravel(idx, shape []int) int {
	p := 0
	for i := range shape {
		p = p*shape[i] + idx[i]
	}
	return p
}

func reverse(b []byte) []byte {
	r := bytes.Clone(b)
	for i, j := 0, len(r)-1; i < j; i, j = i+1, j-1 {
		r[i], r[j] = r[j], r[i]
	}
	return r
}

// element is the array's element at idx in the store's byte order.
func (s *v3Spec) element(idx []int, fill []byte) []byte {
	v := value(ravel(idx, s.shape), s.size)
	if s.big {
		v = reverse(v)
	}
	return v
}

// encodeChunk encodes the chunk of shape cshape at origin (padded with
// fill past the array) with the spec's transpose and bytes codecs.
func (s *v3Spec) encodeChunk(t testing.TB, origin, cshape []int, fill []byte) []byte {
	n := prod(cshape)
	// Element order after transpose: C order over the permuted shape.
	tshape := cshape
	if s.transpose != nil {
		tshape = make([]int, len(cshape))
		for i, o := range s.transpose {
			tshape[i] = cshape[o]
		}
	}
	var out []byte
	for p := range n {
		tidx := unravel(p, tshape)
		idx := make([]int, len(cshape))
		for i := range tidx {
			o := i
			if s.transpose != nil {
				o = s.transpose[i]
			}
			idx[o] = origin[o] + tidx[i]
		}
		inside := true
		for i := range idx {
			inside = inside && idx[i] < s.shape[i]
		}
		if inside {
			out = append(out, s.element(idx, fill)...)
		} else {
			out = append(out, fill...)
		}
	}
	for _, c := range s.bytesCodecs {
		switch c {
		case "gzip":
			var b bytes.Buffer
			w := gzip.NewWriter(&b)
			w.Write(out)
			w.Close()
			out = b.Bytes()
		case "zstd":
			e, _ := zstd.NewWriter(nil)
			out = e.EncodeAll(out, nil)
		case "blosc":
			var err error
			if out, err = blosc.EncodeLZ4(out, s.size, blosc.Shuffle); err != nil {
				t.Fatal(err)
			}
		case "crc32c":
			out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, crc32.MakeTable(crc32.Castagnoli)))
		}
	}
	return out
}

func (s *v3Spec) codecsJSON() []any {
	var cs []any
	if s.transpose != nil {
		cs = append(cs, map[string]any{"name": "transpose", "configuration": map[string]any{"order": s.transpose}})
	}
	endian := "little"
	if s.big {
		endian = "big"
	}
	cs = append(cs, map[string]any{"name": "bytes", "configuration": map[string]any{"endian": endian}})
	for _, c := range s.bytesCodecs {
		switch c {
		case "gzip":
			cs = append(cs, map[string]any{"name": "gzip", "configuration": map[string]any{"level": 5}})
		case "zstd":
			cs = append(cs, map[string]any{"name": "zstd", "configuration": map[string]any{"level": 3, "checksum": false}})
		case "blosc":
			cs = append(cs, map[string]any{"name": "blosc", "configuration": map[string]any{"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": s.size, "blocksize": 0}})
		case "crc32c":
			cs = append(cs, map[string]any{"name": "crc32c"})
		}
	}
	return cs
}

// write writes the store into dir and returns the array the reader must
// give.
func (s *v3Spec) write(t testing.TB, dir string, fill []byte) []byte {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	keys := map[string]any{"name": s.keys}
	if s.sep != "" {
		keys["configuration"] = map[string]any{"separator": s.sep}
	}
	codecs := s.codecsJSON()
	if s.inner != nil {
		loc := "end"
		if s.indexStart {
			loc = "start"
		}
		codecs = []any{map[string]any{"name": "sharding_indexed", "configuration": map[string]any{
			"chunk_shape": s.inner, "codecs": codecs, "index_location": loc,
			"index_codecs": []any{map[string]any{"name": "bytes", "configuration": map[string]any{"endian": "little"}}, map[string]any{"name": "crc32c"}},
		}}}
	}
	meta := map[string]any{
		"zarr_format": 3, "node_type": "array", "shape": s.shape, "data_type": s.dtype,
		"chunk_grid":         map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": s.chunks}},
		"chunk_key_encoding": keys, "fill_value": s.fill, "codecs": codecs, "attributes": map[string]any{"made": "by the test"},
	}
	b, _ := json.MarshalIndent(meta, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "zarr.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	grid := make([]int, len(s.shape))
	for i := range grid {
		grid[i] = (s.shape[i] + s.chunks[i] - 1) / s.chunks[i]
	}
	want := make([]byte, 0, prod(s.shape)*s.size)
	skipped := map[int]bool{} // flat positions read as fill
	for p := range prod(grid) {
		cidx := unravel(p, grid)
		origin := make([]int, len(cidx))
		for i := range cidx {
			origin[i] = cidx[i] * s.chunks[i]
		}
		if s.skipChunk != nil && s.skipChunk(cidx) {
			s.markFill(skipped, origin, s.chunks)
			continue
		}
		var obj []byte
		if s.inner == nil {
			obj = s.encodeChunk(t, origin, s.chunks, fill)
		} else {
			obj = s.encodeShard(t, origin, fill, skipped)
		}
		key := s.key(cidx)
		path := filepath.Join(dir, filepath.FromSlash(key))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, obj, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p := range prod(s.shape) {
		if skipped[p] {
			want = append(want, fill...)
		} else {
			want = append(want, s.element(unravel(p, s.shape), fill)...)
		}
	}
	return want
}

func (s *v3Spec) markFill(skipped map[int]bool, origin, cshape []int) {
	for q := range prod(cshape) {
		idx := unravel(q, cshape)
		inside := true
		for i := range idx {
			idx[i] += origin[i]
			inside = inside && idx[i] < s.shape[i]
		}
		if inside {
			skipped[ravel(idx, s.shape)] = true
		}
	}
}

func (s *v3Spec) key(idx []int) string {
	parts := make([]string, len(idx))
	for i, x := range idx {
		parts[i] = fmt.Sprint(x)
	}
	sep := s.sep
	if s.keys == "v2" {
		if sep == "" {
			sep = "."
		}
		if len(idx) == 0 {
			return "0"
		}
		return strings.Join(parts, sep)
	}
	if sep == "" {
		sep = "/"
	}
	return strings.Join(append([]string{"c"}, parts...), sep)
}

// encodeShard writes a shard: its inner chunks in C order, then (or
// before them) the index of (offset, nbytes) pairs and its crc32c.
func (s *v3Spec) encodeShard(t testing.TB, origin []int, fill []byte, skipped map[int]bool) []byte {
	per := make([]int, len(s.chunks))
	for i := range per {
		per[i] = s.chunks[i] / s.inner[i]
	}
	n := prod(per)
	indexBytes := 16*n + 4
	var body []byte
	index := make([]byte, 16*n)
	base := 0
	if s.indexStart {
		base = indexBytes
	}
	for q := range n {
		qidx := unravel(q, per)
		io := make([]int, len(qidx))
		for i := range qidx {
			io[i] = origin[i] + qidx[i]*s.inner[i]
		}
		if s.emptyInner != nil && s.emptyInner(q) {
			binary.LittleEndian.PutUint64(index[16*q:], math.MaxUint64)
			binary.LittleEndian.PutUint64(index[16*q+8:], math.MaxUint64)
			s.markFill(skipped, io, s.inner)
			continue
		}
		c := s.encodeChunk(t, io, s.inner, fill)
		off := uint64(base + len(body))
		if s.indexPastIt && q == n-1 {
			off += 1000
		}
		binary.LittleEndian.PutUint64(index[16*q:], off)
		binary.LittleEndian.PutUint64(index[16*q+8:], uint64(len(c)))
		body = append(body, c...)
	}
	sum := crc32.Checksum(index, crc32.MakeTable(crc32.Castagnoli))
	if s.corruptCRC {
		sum ^= 1
	}
	index = binary.LittleEndian.AppendUint32(index, sum)
	if s.indexStart {
		return append(index, body...)
	}
	return append(body, index...)
}

func fillOf(t *testing.T, s *v3Spec) []byte {
	t.Helper()
	raw, _ := json.Marshal(s.fill)
	dt, err := v3DType(s.dtype)
	if err != nil {
		t.Fatal(err)
	}
	if s.big {
		dt = dt.WithOrder('>')
	}
	b, err := fillBytes(raw, dt)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func v3Specs() map[string]*v3Spec {
	odd := func(idx []int) bool { return (idx[0]+idx[len(idx)-1])%3 == 1 }
	return map[string]*v3Spec{
		"plain":        {shape: []int{5, 3, 9, 7}, chunks: []int{2, 2, 4, 3}, dtype: "float32", size: 4, keys: "default", fill: 0},
		"big-gzip":     {shape: []int{5, 3, 9, 7}, chunks: []int{2, 2, 4, 3}, dtype: "int16", size: 2, big: true, bytesCodecs: []string{"gzip"}, keys: "default", sep: ".", fill: -3},
		"zstd-crc":     {shape: []int{6, 10}, chunks: []int{4, 4}, dtype: "float64", size: 8, bytesCodecs: []string{"zstd", "crc32c"}, keys: "v2", fill: "NaN", skipChunk: odd},
		"blosc":        {shape: []int{33, 17}, chunks: []int{8, 16}, dtype: "uint32", size: 4, bytesCodecs: []string{"blosc"}, keys: "v2", sep: "/", fill: 7, skipChunk: odd},
		"transpose":    {shape: []int{4, 5, 6}, chunks: []int{3, 2, 4}, dtype: "int32", size: 4, transpose: []int{2, 0, 1}, bytesCodecs: []string{"crc32c"}, keys: "default", fill: 0},
		"hexfill":      {shape: []int{9}, chunks: []int{4}, dtype: "float32", size: 4, keys: "default", fill: "0x7fc00001", skipChunk: func(i []int) bool { return i[0] == 1 }},
		"complex":      {shape: []int{3, 3}, chunks: []int{2, 2}, dtype: "complex64", size: 8, keys: "default", fill: []any{1.5, -2}, skipChunk: odd},
		"bool":         {shape: []int{7, 3}, chunks: []int{2, 2}, dtype: "bool", size: 1, keys: "default", fill: true, skipChunk: odd},
		"scalar":       {shape: []int{}, chunks: []int{}, dtype: "float64", size: 8, keys: "default", fill: 0},
		"shard-end":    {shape: []int{10, 12}, chunks: []int{4, 6}, inner: []int{2, 3}, dtype: "float32", size: 4, bytesCodecs: []string{"zstd"}, keys: "default", fill: -1, emptyInner: func(q int) bool { return q == 1 }, skipChunk: func(i []int) bool { return i[0] == 1 && i[1] == 0 }},
		"shard-start":  {shape: []int{10, 12}, chunks: []int{4, 6}, inner: []int{2, 3}, dtype: "uint16", size: 2, big: true, indexStart: true, transpose: []int{1, 0}, bytesCodecs: []string{"blosc", "crc32c"}, keys: "default", fill: 9, emptyInner: func(q int) bool { return q == 2 }},
		"shard-single": {shape: []int{3, 4, 5}, chunks: []int{3, 4, 5}, inner: []int{1, 4, 5}, dtype: "int8", size: 1, keys: "default", fill: 0},
	}
}

// TestReadV3: the spec encoder's stores (codecs bytes in both byte
// orders, transpose, gzip, zstd, blosc, crc32c; both key encodings and
// separators; fill values for missing chunks, NaN, hex bits, complex,
// bool; a scalar; shards with the index at either end, empty inner
// chunks and a missing shard) read back as written.
func TestReadV3(t *testing.T) {
	for name, s := range v3Specs() {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name+".zarr")
			want := s.write(t, dir, fillOf(t, s))
			m := readStore(t, dir)[""]
			if format.ShapeString(m.Header.Shape) != format.ShapeString(s.shape) {
				t.Fatalf("shape %v, want %v", m.Header.Shape, s.shape)
			}
			if s.big != (m.Header.DType.Order == '>') {
				t.Fatalf("dtype %s, big-endian %v", m.Header.DType.Descr(), s.big)
			}
			if !bytes.Equal(m.Data, want) {
				t.Fatalf("data differ:\n got %x\nwant %x", m.Data[:min(64, len(m.Data))], want[:min(64, len(want))])
			}
		})
	}
}

// TestCastagnoliMatchesPeer: the crc32c the tests' encoder and the
// reader use is python3-crc32c's.
func TestCastagnoliMatchesPeer(t *testing.T) {
	py := testpeer.Python(t, "crc32c")
	data := []byte("depthspace reads Zarr shards \x00\xe9\xff")
	out, err := exec.Command(py, "-c", "import crc32c,sys; print(crc32c.crc32c(bytes.fromhex(sys.argv[1])))", fmt.Sprintf("%x", data)).Output()
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli))); strings.TrimSpace(string(out)) != got {
		t.Fatalf("crc32c: python %s, Go %s", out, got)
	}
}
