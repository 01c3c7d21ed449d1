package zarr

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/x448/float16"
)

// maxChunkBytes bounds one decoded chunk (and one shard index): what
// numcodecs' Blosc can hold, 2 GiB. A chunk shape that claims more is
// refused before anything is allocated.
const maxChunkBytes = 1<<31 - 1

// Array is one Zarr array's metadata, v2 or v3, as the reader needs it:
// the tensor, the grid of chunks the store holds, how a chunk's bytes
// become C-order elements and what fills a chunk that is missing.
type Array struct {
	Version int
	Header  format.Header // C order: Zarr's F order is per chunk
	// Chunks is the grid a chunk key names (a shard, for v3 sharding);
	// Inner the shape of what one read decodes (Chunks, or the inner
	// chunks of a shard).
	Chunks []int
	Inner  []int
	// FOrder: v2's order "F", each chunk's elements in Fortran order.
	FOrder bool
	Fill   []byte // one element
	// FillText is the fill value as the metadata writes it, for info.
	FillText string
	// key names the object of a chunk of the grid.
	key func(idx []int) string
	// decode turns a chunk's stored bytes into its elements (C order of
	// the chunk shape, the tensor's byte order) in dst.
	decode func(dst, raw []byte) error
	// shard is the sharding codec, when the chunks are shards.
	shard *sharding
	// bloscV2: v2 chunks compressed by Blosc, whose frames can be read a
	// few blocks at a time (ReadChunkRange).
	bloscV2 bool
	// Codecs and Attrs are what info shows.
	Codecs []string
	// Missing counts chunks the store lacks, once counted.
	Missing int
}

// rank0 gives a scalar array one axis of 1: chunk arithmetic needs an axis.
func rank0(s []int) []int {
	if len(s) == 0 {
		return []int{1}
	}
	return s
}

// checkGrid checks a shape and chunk shape of the same rank, every chunk
// extent at least 1, and one chunk's bytes under maxChunkBytes.
func checkGrid(shape, chunks []int, size int, what string) error {
	if len(chunks) != len(shape) {
		return fmt.Errorf("%s %v has %d axes but the shape %v has %d", what, chunks, len(chunks), shape, len(shape))
	}
	n := int64(size)
	for _, c := range chunks {
		if c < 1 {
			return fmt.Errorf("%s %v has an extent under 1", what, chunks)
		}
		if int64(c) > maxChunkBytes/n {
			return fmt.Errorf("%s %v holds over 2 GiB, more than a chunk can", what, chunks)
		}
		n *= int64(c)
	}
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("shape %v has a negative extent", shape)
		}
	}
	return nil
}

// ints reads a JSON array of non-negative integers.
func ints(raw json.RawMessage, what string) ([]int, error) {
	var v []json.Number
	if err := strictJSON(raw, &v); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out := make([]int, len(v))
	for i, n := range v {
		x, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil || x < 0 || x > math.MaxInt32*int64(1<<31) {
			return nil, fmt.Errorf("%s: %s is not a size", what, n)
		}
		out[i] = int(x)
	}
	return out, nil
}

// strictJSON decodes JSON text into v, numbers kept as text.
func strictJSON(raw []byte, v any) error {
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("text after the JSON value")
	}
	return nil
}

// fillBytes encodes a fill value of either version as one element of d
// (in d's byte order). v3 spells NaN and the infinities as v2 does and
// also takes a float's bits in hex ("0x7fc00000"); v2 stores S and V
// fill values in base64; null (v2) is zero, as zarr-python reads a
// missing chunk of an array without a fill value.
func fillBytes(raw json.RawMessage, d format.DType) ([]byte, error) {
	b := make([]byte, d.Size)
	if len(raw) == 0 || string(raw) == "null" {
		return b, nil
	}
	var v any
	if err := strictJSON(raw, &v); err != nil {
		return nil, fmt.Errorf("fill_value: %w", err)
	}
	var order binary.ByteOrder = binary.LittleEndian
	if d.Order == '>' {
		order = binary.BigEndian
	}
	bad := fmt.Errorf("fill_value %s is not a %s", raw, d.Name())
	switch d.Kind {
	case 'b':
		switch x := v.(type) {
		case bool:
			if x {
				b[0] = 1
			}
		case json.Number:
			if x != "0" && x != "1" {
				return nil, bad
			}
			b[0] = x[0] - '0'
		default:
			return nil, bad
		}
	case 'i', 'u':
		n, ok := v.(json.Number)
		if !ok {
			return nil, bad
		}
		var u uint64
		if d.Kind == 'i' {
			x, err := strconv.ParseInt(string(n), 10, 8*d.Size)
			if err != nil {
				return nil, bad
			}
			u = uint64(x)
		} else {
			x, err := strconv.ParseUint(string(n), 10, 8*d.Size)
			if err != nil {
				return nil, bad
			}
			u = x
		}
		putUint(b, u, order)
	case 'f':
		if err := putFloat(b, v, order); err != nil {
			return nil, bad
		}
	case 'c':
		pair, ok := v.([]any)
		if !ok || len(pair) != 2 {
			return nil, bad
		}
		h := d.Size / 2
		if putFloat(b[:h], pair[0], order) != nil || putFloat(b[h:], pair[1], order) != nil {
			return nil, bad
		}
	case 'S', 'V':
		switch x := v.(type) {
		case string:
			s, err := base64.StdEncoding.DecodeString(x)
			if err != nil || len(s) > d.Size {
				return nil, bad
			}
			copy(b, s)
		case json.Number:
			if x != "0" {
				return nil, bad
			}
		case []any: // v3 raw bits: one integer per byte
			if len(x) != d.Size {
				return nil, bad
			}
			for i, e := range x {
				n, ok := e.(json.Number)
				c, err := strconv.ParseUint(string(n), 10, 8)
				if !ok || err != nil {
					return nil, bad
				}
				b[i] = byte(c)
			}
		default:
			return nil, bad
		}
	case 'U':
		s, ok := v.(string)
		if !ok || len([]rune(s)) > d.Size/4 {
			return nil, bad
		}
		for i, r := range []rune(s) {
			putUint(b[4*i:4*i+4], uint64(r), order)
		}
	default:
		return nil, bad
	}
	return b, nil
}

func putUint(b []byte, u uint64, order binary.ByteOrder) {
	switch len(b) {
	case 1:
		b[0] = byte(u)
	case 2:
		order.PutUint16(b, uint16(u))
	case 4:
		order.PutUint32(b, uint32(u))
	case 8:
		order.PutUint64(b, u)
	}
}

// putFloat encodes a JSON float (a number, "NaN", "Infinity",
// "-Infinity", or v3's "0x…" bits) into b's 2, 4 or 8 bytes.
func putFloat(b []byte, v any, order binary.ByteOrder) error {
	var f float64
	switch x := v.(type) {
	case json.Number:
		var err error
		if f, err = strconv.ParseFloat(string(x), 64); err != nil {
			return err
		}
	case string:
		switch x {
		case "NaN":
			f = math.NaN()
		case "Infinity":
			f = math.Inf(1)
		case "-Infinity":
			f = math.Inf(-1)
		default:
			h, ok := strings.CutPrefix(x, "0x")
			raw, err := hex.DecodeString(h)
			if !ok || err != nil || len(raw) != len(b) {
				return errors.New("bad float")
			}
			var u uint64
			for _, c := range raw {
				u = u<<8 | uint64(c)
			}
			putUint(b, u, order)
			return nil
		}
	default:
		return errors.New("bad float")
	}
	switch len(b) {
	case 2:
		putUint(b, uint64(float16.Fromfloat32(float32(f)).Bits()), order)
	case 4:
		putUint(b, uint64(math.Float32bits(float32(f))), order)
	case 8:
		putUint(b, math.Float64bits(f), order)
	default:
		return errors.New("bad float size")
	}
	return nil
}

// fillText is a fill value's JSON as info shows it: compact; null when
// the metadata has none.
func fillText(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Compact(&b, raw) != nil {
		return "null"
	}
	return b.String()
}
