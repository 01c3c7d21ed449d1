package zarr

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/zarr/blosc"
	"github.com/pierrec/lz4/v4"
)

// zarray is a v2 array's .zarray.
type zarray struct {
	ZarrFormat         json.Number     `json:"zarr_format"`
	Shape              json.RawMessage `json:"shape"`
	Chunks             json.RawMessage `json:"chunks"`
	DType              json.RawMessage `json:"dtype"`
	Compressor         json.RawMessage `json:"compressor"`
	FillValue          json.RawMessage `json:"fill_value"`
	Order              string          `json:"order"`
	Filters            json.RawMessage `json:"filters"`
	DimensionSeparator string          `json:"dimension_separator"`
}

// parseV2 reads a .zarray.
func parseV2(b []byte) (*Array, error) {
	var z zarray
	if err := strictJSON(b, &z); err != nil {
		return nil, fmt.Errorf(".zarray is not valid JSON: %w", err)
	}
	if z.ZarrFormat != "2" {
		return nil, fmt.Errorf(".zarray: zarr_format %q, want 2", z.ZarrFormat)
	}
	shape, err := ints(z.Shape, ".zarray shape")
	if err != nil {
		return nil, err
	}
	chunks, err := ints(z.Chunks, ".zarray chunks")
	if err != nil {
		return nil, err
	}
	var descr string
	if err := json.Unmarshal(z.DType, &descr); err != nil {
		return nil, fmt.Errorf(".zarray dtype %s: structured dtypes are not read, only one numpy descr such as \"<f4\"", z.DType)
	}
	dt, err := format.ParseDescr(descr)
	if err != nil {
		return nil, fmt.Errorf(".zarray dtype: %w", err)
	}
	if err := checkGrid(shape, chunks, dt.Size, ".zarray chunks"); err != nil {
		return nil, err
	}
	a := &Array{Version: 2, Header: format.Header{DType: dt, Shape: shape}, Chunks: rank0(chunks), Inner: rank0(chunks)}
	if a.Header.DataBytes() < 0 {
		return nil, fmt.Errorf(".zarray shape %v of %s is too large", shape, dt)
	}
	switch z.Order {
	case "C":
	case "F":
		a.FOrder = true
	default:
		return nil, fmt.Errorf(".zarray order %q, want \"C\" or \"F\"", z.Order)
	}
	if f := strings.TrimSpace(string(z.Filters)); f != "" && f != "null" && f != "[]" {
		return nil, fmt.Errorf(".zarray filters %s: depthspace reads arrays without filters", f)
	}
	sep := z.DimensionSeparator
	switch sep {
	case "":
		sep = "."
	case ".", "/":
	default:
		return nil, fmt.Errorf(".zarray dimension_separator %q, want \".\" or \"/\"", sep)
	}
	a.key = func(idx []int) string {
		if len(idx) == 0 {
			return "0"
		}
		return joinIndex(idx, sep)
	}
	a.FillText = fillText(z.FillValue)
	if a.Fill, err = fillBytes(z.FillValue, dt); err != nil {
		return nil, fmt.Errorf(".zarray %w", err)
	}
	dec, name, err := v2Compressor(z.Compressor, dt.Size)
	if err != nil {
		return nil, err
	}
	a.Codecs = []string{name}
	a.decode = dec
	a.bloscV2 = strings.HasPrefix(name, "blosc")
	return a, nil
}

// joinIndex is a chunk key of v2 (and v3's "v2" encoding): the indices
// joined by the separator, "0" for a scalar.
func joinIndex(idx []int, sep string) string {
	var b strings.Builder
	for i, x := range idx {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(strconv.Itoa(x))
	}
	return b.String()
}

// v2Compressor reads a .zarray's compressor (numcodecs' config) into
// the function that decodes a chunk, and what info calls it.
func v2Compressor(raw json.RawMessage, typesize int) (func(dst, raw []byte) error, string, error) {
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return rawChunk, "none", nil
	}
	var c struct {
		ID      string      `json:"id"`
		CName   string      `json:"cname"`
		Shuffle json.Number `json:"shuffle"`
		Level   json.Number `json:"level"`
		CLevel  json.Number `json:"clevel"`
	}
	if err := strictJSON(raw, &c); err != nil {
		return nil, "", fmt.Errorf(".zarray compressor %s: %w", raw, err)
	}
	switch c.ID {
	case "blosc":
		return bloscChunk, "blosc " + c.CName + " shuffle " + string(c.Shuffle), nil
	case "zlib":
		return zlibChunk, "zlib", nil
	case "gzip":
		return gzipChunk, "gzip", nil
	case "zstd":
		return zstdChunk, "zstd", nil
	case "lz4":
		return lz4Chunk, "lz4", nil
	}
	return nil, "", fmt.Errorf(".zarray compressor %q is not one depthspace reads (none, zlib, gzip, zstd, lz4, blosc)", c.ID)
}

// rawChunk: a chunk stored as its bytes.
func rawChunk(dst, raw []byte) error {
	if len(raw) != len(dst) {
		return fmt.Errorf("chunk is %d bytes, want %d", len(raw), len(dst))
	}
	copy(dst, raw)
	return nil
}

func bloscChunk(dst, raw []byte) error { return blosc.DecodeInto(dst, raw) }

func zlibChunk(dst, raw []byte) error {
	r, err := zlib.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("zlib: %w", err)
	}
	return exactly("zlib", r, dst)
}

func gzipChunk(dst, raw []byte) error {
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("gzip: %w", err)
	}
	return exactly("gzip", r, dst)
}

func zstdChunk(dst, raw []byte) error {
	if err := blosc.ZstdInto(dst, raw); err != nil {
		return fmt.Errorf("zstd stream %w", err)
	}
	return nil
}

// lz4Chunk: numcodecs' LZ4, a 4-byte little-endian size, then one lz4
// block.
func lz4Chunk(dst, raw []byte) error {
	if len(raw) < 4 {
		return fmt.Errorf("lz4 chunk of %d bytes has no size prefix", len(raw))
	}
	if n := binary.LittleEndian.Uint32(raw); int64(n) != int64(len(dst)) {
		return fmt.Errorf("lz4 chunk says it holds %d bytes, want %d", n, len(dst))
	}
	n, err := lz4.UncompressBlock(raw[4:], dst)
	if err != nil {
		return fmt.Errorf("lz4: %w", err)
	}
	if n != len(dst) {
		return fmt.Errorf("lz4 chunk holds %d bytes, want %d", n, len(dst))
	}
	return nil
}

func exactly(name string, r interface{ Read([]byte) (int, error) }, dst []byte) error {
	if err := blosc.ReadExactly(r, dst); err != nil {
		return fmt.Errorf("%s stream %w", name, err)
	}
	return nil
}
