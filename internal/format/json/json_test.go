package json

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/x448/float16"
)

// The DirectML DML_SPACE_TO_DEPTH_OPERATOR_DESC example, exactly as the
// seed page prints it (seeds/000_*.txt).
const seedDMLInput = `[[[[ 0, 18, 1, 19, 2, 20],
[36, 54, 37, 55, 38, 56],
[ 3, 21, 4, 22, 5, 23],
[39, 57, 40, 58, 41, 59]],
[[ 9, 27, 10, 28, 11, 29],
[45, 63, 46, 64, 47, 65],
[12, 30, 13, 31, 14, 32],
[48, 66, 49, 67, 50, 68]]]]`

const seedDMLOutput = `[[[[0, 1, 2],
[3, 4, 5]],
[[9, 10, 11],
[12, 13, 14]],
[[18, 19, 20],
[21, 22, 23]],
[[27, 28, 29],
[30, 31, 32]],
[[36, 37, 38],
[39, 40, 41]],
[[45, 46, 47],
[48, 49, 50]],
[[54, 55, 56],
[57, 58, 59]],
[[63, 64, 65],
[66, 67, 68]]]]`

func mustDType(t testing.TB, name string) format.DType {
	t.Helper()
	d, err := format.ParseDType(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func u32le(vals ...uint32) []byte {
	b := make([]byte, 4*len(vals))
	for i, v := range vals {
		binary.LittleEndian.PutUint32(b[4*i:], v)
	}
	return b
}

func TestDecodeJSONSeedDML(t *testing.T) {
	u32 := mustDType(t, "uint32")
	h, data, err := DecodeJSON([]byte(seedDMLInput), &u32)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, format.Header{DType: u32, Shape: []int{1, 2, 4, 6}}) {
		t.Fatalf("header %+v", h)
	}
	want := u32le(0, 18, 1, 19, 2, 20, 36, 54, 37, 55, 38, 56, 3, 21, 4, 22, 5, 23, 39, 57, 40, 58, 41, 59,
		9, 27, 10, 28, 11, 29, 45, 63, 46, 64, 47, 65, 12, 30, 13, 31, 14, 32, 48, 66, 49, 67, 50, 68)
	if !bytes.Equal(data, want) {
		t.Fatalf("data\n%x\nwant\n%x", data, want)
	}

	h, data, err = DecodeJSON([]byte(seedDMLOutput), &u32)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h.Shape, []int{1, 8, 2, 3}) {
		t.Fatalf("shape %v", h.Shape)
	}
	var vals []uint32
	for c := 0; c < 8; c++ {
		for k := 0; k < 6; k++ {
			vals = append(vals, uint32(9*c+k/3*3+k%3))
		}
	}
	if !bytes.Equal(data, u32le(vals...)) {
		t.Fatalf("output seed data %x", data)
	}

	// Without --dtype the integers are int64, as numpy reads them.
	h, data, err = DecodeJSON([]byte(seedDMLInput), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h.DType != mustDType(t, "int64") || len(data) != 48*8 || binary.LittleEndian.Uint64(data[8:]) != 18 {
		t.Fatalf("inferred %v, %d bytes", h.DType, len(data))
	}
}

func TestEncodeJSONGolden(t *testing.T) {
	var buf bytes.Buffer
	data := u32le(0, 1, 2, 3, 4, 5, 9, 10, 11, 12, 13, 14)
	if err := EncodeJSON(&buf, mustDType(t, "uint32"), []int{1, 2, 2, 3}, data); err != nil {
		t.Fatal(err)
	}
	const golden = `{"dtype": "uint32", "shape": [1, 2, 2, 3], "data": [[[[0, 1, 2],
   [3, 4, 5]],
  [[9, 10, 11],
   [12, 13, 14]]]]}
`
	if buf.String() != golden {
		t.Fatalf("got\n%s\nwant\n%s", buf.String(), golden)
	}
	h, back, err := DecodeJSON(buf.Bytes(), nil)
	if err != nil || !bytes.Equal(back, data) || !reflect.DeepEqual(h.Shape, []int{1, 2, 2, 3}) {
		t.Fatalf("read back: %v %v %x", err, h, back)
	}
}

func TestEncodeJSONLayout(t *testing.T) {
	for _, tc := range []struct {
		dtype string
		shape []int
		data  []byte
		want  string
	}{
		{"uint8", []int{}, []byte{7}, `{"dtype": "uint8", "shape": [], "data": 7}` + "\n"},
		{"uint8", []int{0}, nil, `{"dtype": "uint8", "shape": [0], "data": []}` + "\n"},
		{"uint8", []int{2, 0, 3}, nil, `{"dtype": "uint8", "shape": [2, 0, 3], "data": [[],` + "\n" + ` []]}` + "\n"},
		{"uint8", []int{3}, []byte{1, 2, 3}, `{"dtype": "uint8", "shape": [3], "data": [1, 2, 3]}` + "\n"},
		{"bool", []int{2, 1}, []byte{0, 1}, `{"dtype": "bool", "shape": [2, 1], "data": [[false],` + "\n" + ` [true]]}` + "\n"},
		{"complex64", []int{2}, append(f32le(1, -2), f32le(float32(math.Inf(1)), 0.5)...),
			`{"dtype": "complex64", "shape": [2], "data": [[1, -2], ["Infinity", 0.5]]}` + "\n"},
		{">i2", []int{2}, []byte{0xff, 0xfe, 0x01, 0x00}, `{"dtype": ">i2", "shape": [2], "data": [-2, 256]}` + "\n"},
		{"S4", []int{3}, []byte("ab\x00\x00\"\\\n\xff\x00c\x00\x00"), `{"dtype": "S4", "shape": [3], "data": ["ab", "\"\\\u000a\u00ff", "\u0000c"]}` + "\n"},
		{"V2", []int{1}, []byte{0x00, 0xfe}, `{"dtype": "V2", "shape": [1], "data": ["00fe"]}` + "\n"},
	} {
		var buf bytes.Buffer
		if err := EncodeJSON(&buf, mustDType(t, tc.dtype), tc.shape, tc.data); err != nil {
			t.Errorf("%s %v: %v", tc.dtype, tc.shape, err)
			continue
		}
		if buf.String() != tc.want {
			t.Errorf("%s %v:\n got %q\nwant %q", tc.dtype, tc.shape, buf.String(), tc.want)
		}
		h, back, err := DecodeJSON(buf.Bytes(), nil)
		if err != nil || !bytes.Equal(back, tc.data) && len(tc.data) > 0 || !reflect.DeepEqual(h.Shape, tc.shape) {
			t.Errorf("%s %v: read back %v %v %x", tc.dtype, tc.shape, err, h.Shape, back)
		}
	}
}

func f32le(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func f64le(v ...float64) []byte {
	b := make([]byte, 8*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f))
	}
	return b
}

func u16le(v ...uint16) []byte {
	b := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(b[2*i:], x)
	}
	return b
}

func TestJSONRoundTrip(t *testing.T) {
	i64 := func(v ...int64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
		}
		return b
	}
	u32ucs := func(s string, n int) []byte {
		b := make([]byte, 4*n)
		i := 0
		for _, r := range s {
			binary.LittleEndian.PutUint32(b[4*i:], uint32(r))
			i++
		}
		return b
	}
	be := func(order binary.ByteOrder, size int, vals ...uint64) []byte {
		b := make([]byte, size*len(vals))
		for i, v := range vals {
			switch size {
			case 4:
				order.PutUint32(b[4*i:], uint32(v))
			case 8:
				order.PutUint64(b[8*i:], v)
			}
		}
		return b
	}
	for _, tc := range []struct {
		dtype string
		data  []byte
		text  string // expected "data" text, if not empty
	}{
		{"bool", []byte{0, 1, 1, 0}, "[false, true, true, false]"},
		{"int8", []byte{0x80, 0x7f, 0xff, 0}, "[-128, 127, -1, 0]"},
		{"uint8", []byte{0, 255, 1, 128}, "[0, 255, 1, 128]"},
		{"int16", u16le(0x8000, 0x7fff, 0xffff, 1), "[-32768, 32767, -1, 1]"},
		{"uint16", u16le(0, 65535, 1, 2), "[0, 65535, 1, 2]"},
		{"int32", u32le(0x80000000, 0x7fffffff, 0xffffffff, 0), "[-2147483648, 2147483647, -1, 0]"},
		{"uint32", u32le(0, 4294967295, 7, 8), "[0, 4294967295, 7, 8]"},
		{"int64", i64(math.MinInt64, math.MaxInt64, -1, 0), "[-9223372036854775808, 9223372036854775807, -1, 0]"},
		{"uint64", i64(-1, 0, 1, math.MaxInt64), "[18446744073709551615, 0, 1, 9223372036854775807]"},
		{"float16", u16le(0x7bff, 0x0001, 0x8000, 0x7c00), `[65500, 6e-8, -0, "Infinity"]`}, // 65504 prints as numpy prints it
		{"float16", u16le(0xfc00, 0x7e01, 0x2e66, 0x3c00), `["-Infinity", "NaN", 0.1, 1]`},
		{"bfloat16", u16le(0x3f80, 0x7f7f, 0x0001, 0x8000), `[1, 3.39e+38, 9e-41, -0]`},
		{"bfloat16", u16le(0x7f80, 0xffc1, 0x3dcd, 0xc049), `["Infinity", "NaN", 0.1, -3.14]`},
		{"float32", f32le(0.1, float32(math.Inf(-1)), float32(math.Copysign(0, -1)), math.MaxFloat32), `[0.1, "-Infinity", -0, 3.4028235e+38]`},
		{"float32", f32le(math.SmallestNonzeroFloat32, 16777216, 1e-7, 3.4e21), `[1e-45, 16777216, 1e-7, 3.4e+21]`},
		{"float64", f64le(5e-324, 1.7976931348623157e308, 0.1, math.Copysign(0, -1)), `[5e-324, 1.7976931348623157e+308, 0.1, -0]`},
		{"float64", f64le(1e21, 1e-7, 123456789012345680000, math.Inf(1)), `[1e+21, 1e-7, 123456789012345680000, "Infinity"]`},
		{"complex64", f32le(1, -1, 0.1, float32(math.NaN()), 0, 0, 1e-30, 2), `[[1, -1], [0.1, "NaN"], [0, 0], [1e-30, 2]]`},
		{"complex128", f64le(1, -1, 0.1, math.Inf(-1), 0, 0, 5e-324, 2), `[[1, -1], [0.1, "-Infinity"], [0, 0], [5e-324, 2]]`},
		{"S8", []byte("abc\x00\x00\x00\x00\x00\xff\x00x\x00\x00\x00\x00\x0012345678\x00\x00\x00\x00\x00\x00\x00\x00"),
			`["abc", "\u00ff\u0000x", "12345678", ""]`},
		{"U3", append(append(u32ucs("é€😀", 3), u32ucs("a", 3)...), append(u32ucs("", 3), u32ucs("\"\n", 3)...)...),
			`["é€😀", "a", "", "\"\u000a"]`},
		{"V4", []byte{0, 1, 2, 3, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff},
			`["00010203", "deadbeef", "00000000", "ffffffff"]`},
		{">i4", be(binary.BigEndian, 4, 1, 0xffffffff, 0x80000000, 256), "[1, -1, -2147483648, 256]"},
		{">f8", be(binary.BigEndian, 8, math.Float64bits(0.1), math.Float64bits(-2.5), math.Float64bits(math.NaN()), 0), `[0.1, -2.5, "NaN", 0]`},
	} {
		dt := mustDType(t, tc.dtype)
		var buf bytes.Buffer
		if len(tc.data) != 4*dt.Size {
			t.Fatalf("%s: %d bytes of test data", tc.dtype, len(tc.data))
		}
		if err := EncodeJSON(&buf, dt, []int{4}, tc.data); err != nil {
			t.Errorf("%s: %v", tc.dtype, err)
			continue
		}
		if tc.text != "" {
			want := `{"dtype": "` + dt.Name() + `", "shape": [4], "data": ` + tc.text + "}\n"
			if buf.String() != want {
				t.Errorf("%s:\n got %s\nwant %s", tc.dtype, buf.String(), want)
			}
		}
		h, back, err := DecodeJSON(buf.Bytes(), nil)
		if err != nil {
			t.Errorf("%s: %v", tc.dtype, err)
			continue
		}
		if h.DType != dt || !reflect.DeepEqual(h.Shape, []int{4}) {
			t.Errorf("%s: header %+v", tc.dtype, h)
		}
		wantData := tc.data
		if dt.Kind == 'f' || dt.Kind == 'c' || dt.BFloat16 {
			wantData = canonicalNaNs(dt, tc.data)
		}
		if !bytes.Equal(back, wantData) {
			t.Errorf("%s: read back\n%x\nwant\n%x", tc.dtype, back, wantData)
		}
		// The bare array with --dtype reads the same.
		h, back2, err := DecodeJSON([]byte(tc.text), &dt)
		if err != nil || !bytes.Equal(back2, back) || h.DType != dt {
			t.Errorf("%s: bare array with --dtype: %v %x", tc.dtype, err, back2)
		}
	}
}

// canonicalNaNs replaces every NaN by the one DecodeJSON writes.
func canonicalNaNs(dt format.DType, data []byte) []byte {
	out := append([]byte(nil), data...)
	size := dt.Size
	if dt.Kind == 'c' {
		size /= 2
	}
	big := dt.Order == '>'
	for i := 0; i+size <= len(out); i += size {
		v := format.Uint(out[i:i+size], big)
		switch {
		case size == 2 && dt.BFloat16 && v&0x7fff > 0x7f80:
			format.PutUint(out[i:i+size], 0x7fc0, big)
		case size == 2 && !dt.BFloat16 && v&0x7fff > 0x7c00:
			format.PutUint(out[i:i+size], 0x7e00, big)
		case size == 4 && math.IsNaN(float64(math.Float32frombits(uint32(v)))):
			format.PutUint(out[i:i+size], float32NaN, big)
		case size == 8 && math.IsNaN(math.Float64frombits(v)):
			format.PutUint(out[i:i+size], float64NaN, big)
		}
	}
	return out
}

func TestJSONShortestText(t *testing.T) {
	for _, tc := range []struct {
		dtype string
		data  []byte
		want  string
	}{
		{"float32", f32le(0.1), "0.1"},
		{"float16", u16le(0x2e66), "0.1"},
		{"float64", f64le(1e21), "1e+21"},
		{"float64", f64le(1e-7), "1e-7"},
		{"float64", f64le(1e-6), "0.000001"},
		{"float64", f64le(123e-20), "1.23e-18"},
		{"float32", f32le(1e-7), "1e-7"},
		{"float16", u16le(0x0001), "6e-8"},
		{"float16", u16le(0x8000), "-0"},
		{"float16", u16le(0x3555), "0.3333"},
		{"float16", u16le(0x0400), "0.00006104"},
		{"bfloat16", u16le(0x3dcd), "0.1"},
		// 2^16: the interval below a power of two is half as wide, and
		// 65500 is the nearest of the shortest decimals that read back.
		{"bfloat16", u16le(0x4780), "65500"},
		{"bfloat16", u16le(0x4781), "66000"},
	} {
		var buf bytes.Buffer
		if err := EncodeJSON(&buf, mustDType(t, tc.dtype), nil, tc.data); err != nil {
			t.Fatal(err)
		}
		got := strings.TrimSuffix(strings.TrimPrefix(buf.String(), `{"dtype": "`+mustDType(t, tc.dtype).Name()+`", "shape": [], "data": `), "}\n")
		if got != tc.want {
			t.Errorf("%s %x: got %s, want %s", tc.dtype, tc.data, got, tc.want)
		}
	}
}

func TestDecodeJSONValues(t *testing.T) {
	for _, tc := range []struct {
		dtype, text string
		want        []byte
	}{
		{"int32", "[1.0, 1e3, 12.5e1, -0, 0.0e-999999999999, 1000000000000e-12]", u32le(1, 1000, 125, 0, 0, 1)},
		{"uint8", "[true, false, 255, 2.55e2]", []byte{1, 0, 255, 255}},
		{"uint64", "[18446744073709551615, 1.8446744073709551615e19]", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}},
		{"bool", "[0, 1, true, false, -0, 1.0]", []byte{0, 1, 1, 0, 0, 1}},
		{"float32", `["nan", "-INF", "+inf", "Infinity", NaN, -Infinity, 1e-50, true]`,
			f32le(float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.Inf(1)), float32(math.NaN()), float32(math.Inf(-1)), 0, 1)},
		// 16777217 is halfway between two float32s: to even, read directly, not via float64.
		{"float32", "[16777217, 16777219, 1.00000005960464477539062500001]", f32le(16777216, 16777220, 1.0000001)},
		// 1 + 2^-11 is halfway between two float16s; a literal a hair above it
		// rounds to float64 exactly at the halfway point, yet must round up.
		{"float16", "[1.00048828125, 1.000488281250000000000000000001, 1.00146484375, 1.001464843749999999999999999, 65519.99, -1e-30]",
			u16le(0x3c00, 0x3c01, 0x3c02, 0x3c01, 0x7bff, 0x8000)},
		{"float16", "[5.960464477539063e-8, 2.98023223876953125e-8, 2.9802322387695313e-8, 8.940696716308594e-8]", u16le(1, 0, 1, 2)},
		{"bfloat16", "[1.00390625, 1.003906250000000001, 3.3895313892515355e38]", u16le(0x3f80, 0x3f81, 0x7f7f)},
		{"S3", `["a\u00e9\/", "", "\u0000"]`, []byte("a\xe9/\x00\x00\x00\x00\x00\x00")},
		{"U2", `["\ud83d\ude00"]`, []byte{0x00, 0xf6, 0x01, 0x00, 0, 0, 0, 0}},
		{">U1", `["A"]`, []byte{0, 0, 0, 'A'}},
		{"V2", `["ABcd"]`, []byte{0xab, 0xcd}},
		{"complex64", "[[1, 2]]", f32le(1, 2)},
		{"complex64", "[1, 2]", f32le(1, 2)},
	} {
		dt := mustDType(t, tc.dtype)
		_, got, err := DecodeJSON([]byte(tc.text), &dt)
		if err != nil {
			t.Errorf("%s %s: %v", tc.dtype, tc.text, err)
			continue
		}
		if !bytes.Equal(got, tc.want) {
			t.Errorf("%s %s:\n got %x\nwant %x", tc.dtype, tc.text, got, tc.want)
		}
	}
}

func TestDecodeJSONInfer(t *testing.T) {
	for _, tc := range []struct {
		text, dtype string
		shape       []int
	}{
		{"[true, false]", "bool", []int{2}},
		{"[[1, 2], [3, -4]]", "int64", []int{2, 2}},
		{"[1, 18446744073709551615]", "uint64", []int{2}},
		{"[true, 2]", "int64", []int{2}},
		{"[1, 2.5]", "float64", []int{2}},
		{`[1, "NaN"]`, "float64", []int{2}},
		{`[1e3]`, "float64", []int{1}},
		{`[-Infinity, 18446744073709551616]`, "float64", []int{2}},
		{"[]", "float64", []int{0}},
		{"[[], []]", "float64", []int{2, 0}},
		{"\ufeff [[[]]] \n", "float64", []int{1, 1, 0}},
	} {
		h, data, err := DecodeJSON([]byte(tc.text), nil)
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		if h.DType != mustDType(t, tc.dtype) || !reflect.DeepEqual(h.Shape, tc.shape) || int64(len(data)) != h.DataBytes() {
			t.Errorf("%s: got %v %v (%d bytes), want %s %v", tc.text, h.DType, h.Shape, len(data), tc.dtype, tc.shape)
		}
	}
}

func TestDecodeJSONObject(t *testing.T) {
	for _, tc := range []struct {
		text, want string // want: dtype name, shape
		shape      []int
		data       []byte
	}{
		{`{"dtype": "uint8", "shape": [2], "data": [1, 2]}`, "uint8", []int{2}, []byte{1, 2}},
		{`{"data": [[1], [2]], "dtype": "|u1"}`, "uint8", []int{2, 1}, []byte{1, 2}},
		{`{"dtype": "uint8", "shape": [], "data": 5}`, "uint8", []int{}, []byte{5}},
		{`{"dtype": "uint8", "data": 5}`, "uint8", []int{}, []byte{5}},
		{`{"dtype": "complex64", "shape": [], "data": [1, 2]}`, "complex64", []int{}, f32le(1, 2)},
		{`{"dtype": "complex64", "shape": [0, 2], "data": []}`, "complex64", []int{0, 2}, nil},
		{`{"dtype": "uint8", "shape": [2, 0, 1000000000000], "data": [[], []]}`, "uint8", []int{2, 0, 1000000000000}, nil},
		{`{"dtype": "DML_TENSOR_DATA_TYPE_UINT32", "shape": [1], "data": [7]}`, "uint32", []int{1}, u32le(7)},
		{`{"dtype": ">i2", "shape": [1], "data": [-2]}`, ">i2", []int{1}, []byte{0xff, 0xfe}},
		{`{"dtype": "S2", "shape": [1], "data": "ab"}`, "S2", nil, nil}, // error below
	} {
		h, data, err := DecodeJSON([]byte(tc.text), nil)
		if tc.shape == nil {
			if err == nil {
				t.Errorf("%s: no error", tc.text)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.text, err)
			continue
		}
		if h.DType != mustDType(t, tc.want) || !reflect.DeepEqual(h.Shape, tc.shape) || !bytes.Equal(data, tc.data) {
			t.Errorf("%s: got %v %v %x", tc.text, h.DType, h.Shape, data)
		}
	}
	// --dtype agreeing with the file in kind and size but not byte order:
	// the file's dtype wins.
	want := mustDType(t, "int16")
	h, data, err := DecodeJSON([]byte(`{"dtype": ">i2", "data": [1]}`), &want)
	if err != nil || h.DType.Order != '>' || !bytes.Equal(data, []byte{0, 1}) {
		t.Errorf("byte order: %v %v %x", err, h.DType, data)
	}
}

func TestDecodeJSONErrors(t *testing.T) {
	u8 := mustDType(t, "uint8")
	u32 := mustDType(t, "uint32")
	s8 := mustDType(t, "S8")
	ragged := strings.Replace(seedDMLInput, "[ 3, 21, 4, 22, 5, 23]", "[ 3, 21, 4, 22, 5]", 1)
	trailing := seedDMLOutput + "\n]"
	deep := strings.Repeat("[", 65) + "1" + strings.Repeat("]", 65)
	okDeep := strings.Repeat("[", 64) + "1" + strings.Repeat("]", 64)
	if _, _, err := DecodeJSON([]byte(okDeep), nil); err != nil {
		t.Errorf("64 levels: %v", err)
	}
	for _, tc := range []struct {
		name string
		text string
		want *format.DType
		err  string
	}{
		{"empty", " \n\t", nil, "empty input: expected a JSON array or object"},
		{"ragged short", ragged, &u32, "line 3, column 1: ragged array at [0][0][2]: expected 6 elements, found 5"},
		{"ragged long", "[[1, 2],\n [3, 4, [5], 6]]", nil, "line 2, column 2: ragged array at [1]: expected 2 elements, found 4"},
		{"ragged depth 1", "[[[0, 1, 2]],\n [[0, 1, 2], [3, 4, 5]]]", nil, "line 2, column 2: ragged array at [1]: expected 1 elements, found 2"},
		{"array expected", "[[1, 2],\n 3]", nil, "line 2, column 2: at [1]: expected an array, found a number"},
		{"number expected", "[[1, 2], [3, [4]]]", nil, "line 1, column 14: at [1][1]: expected a number, found an array"},
		{"string", "[[1, 2, 3, \"abc\"]]", &u32, `line 1, column 12: at [0][3]: expected a number, found a string "abc"`},
		{"null", "[[1, 2, 3, null]]", &u32, `line 1, column 12: at [0][3]: expected a number, found null`},
		{"object", "[[1, 2, 3, {}]]", &u32, `line 1, column 12: at [0][3]: expected a number, found an object`},
		{"null inferred", "[null]", nil, `line 1, column 2: at [0]: expected a number, found null`},
		{"array for object", "[{\"a\": 1}, [2]]", nil, `line 1, column 2: at [0]: expected a number, found an object`},
		{"out of range", "[[1, 2, 300]]", &u8, "line 1, column 9: at [0][2]: value 300 is out of range for uint8"},
		{"negative uint", "[-1]", &u8, "line 1, column 2: at [0]: value -1 is out of range for uint8"},
		{"not integer", "[1.5]", &u32, "line 1, column 2: at [0]: value 1.5 is not an integer, as uint32 needs"},
		{"nan integer", `["NaN"]`, &u32, `line 1, column 2: at [0]: value "NaN" is not an integer, as uint32 needs`},
		{"float32 range", "[1e40]", ptr(mustDType(t, "float32")), "line 1, column 2: at [0]: value 1e40 is out of range for float32"},
		{"float16 range", "[65520]", ptr(mustDType(t, "float16")), "line 1, column 2: at [0]: value 65520 is out of range for float16"},
		{"float64 range", "[-1e309]", nil, "line 1, column 2: at [0]: value -1e309 is out of range for float64"},
		{"bool range", "[2]", ptr(mustDType(t, "bool")), "line 1, column 2: at [0]: value 2 is out of range for bool"},
		{"int64 or uint64", "[-1, 18446744073709551615]", nil, "line 1, column 6: at [1]: value 18446744073709551615 is out of range for int64, and other values are negative so uint64 cannot hold them"},
		{"beyond uint64", "[18446744073709551616]", nil, "line 1, column 2: at [0]: value 18446744073709551616 is out of range for int64 and uint64"},
		{"trailing", trailing, nil, "line 17, column 1: unexpected data after the tensor"},
		{"trailing object", `{"dtype": "uint8", "data": 1} x`, nil, "line 1, column 31: unexpected data after the tensor"},
		{"utf8", "[1, \xff]", nil, "line 1, column 5: the JSON text is not valid UTF-8"},
		{"utf8 line 2", "[1,\n \"é\xc3\"]", nil, "line 2, column 4: the JSON text is not valid UTF-8"},
		{"too deep", deep, nil, "line 1, column 65: at [0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: arrays nested deeper than 64 levels"},
		{"too deep object", `{"dtype": "uint8", "data": ` + deep + "}", nil, "line 1, column 92: nested deeper than 64 levels"},
		{"shape mismatch", `{"dtype": "uint32", "shape": [1, 8, 2, 3], "data": [[[0, 1, 2]], [[0, 1, 2]], [[0, 1, 2]], [[0, 1, 2]], [[0, 1, 2]], [[0, 1, 2]], [[0, 1, 2]]]}`, nil,
			"line 1, column 52: shape [1,8,2,3] does not match data: expected 1 elements, found 7"},
		{"shape mismatch deeper", "{\"dtype\": \"uint32\", \"shape\": [1, 8, 2, 3],\n\"data\": [[[[0, 1, 2], [3, 4, 5]]]]}", nil,
			"line 2, column 10: shape [1,8,2,3] does not match data: at [0] expected 8 elements, found 1"},
		{"shape huge", `{"dtype": "uint8", "shape": [1000000000000], "data": [1, 2, 3]}`, nil,
			"line 1, column 54: shape [1000000000000] does not match data: expected 1000000000000 elements, found 3"},
		{"shape shallow", `{"dtype": "uint8", "shape": [2, 1], "data": [1, 2]}`, nil,
			"line 1, column 46: shape [2,1] does not match data: at [0] expected an array, found a number"},
		{"shape deep", `{"dtype": "uint8", "shape": [], "data": [1, 2]}`, nil,
			"line 1, column 41: shape [] does not match data: expected a number, found an array"},
		{"shape bad", `{"dtype": "uint8", "shape": [1, -2], "data": [1]}`, nil,
			`line 1, column 29: "shape" must be an array of non-negative integers such as [1, 8, 2, 3]`},
		{"shape too large", `{"dtype": "uint8", "shape": [0, 9223372036854775807, 3], "data": []}`, nil,
			`line 1, column 66: shape [0,9223372036854775807,3] is too large`},
		{"unknown key", `{"dtype": "uint8", "order": "C", "data": [1]}`, nil,
			`line 1, column 20: unknown key "order" (a JSON tensor has "dtype", "shape" and "data")`},
		{"duplicate key", `{"dtype": "uint8", "data": [1], "dtype": "int8"}`, nil, `line 1, column 33: duplicate key "dtype"`},
		{"missing data", `{"dtype": "uint8"}`, nil, `line 1, column 18: the object has no "data" key`},
		{"missing dtype", `{"data": [1]}`, &u8, `line 1, column 13: the object has no "dtype" key`},
		{"bad dtype", `{"dtype": "float", "data": [1]}`, nil,
			`line 1, column 11: dtype "float" is ambiguous: numpy reads it as float64, ONNX as float32; say float32 or float64`},
		{"dtype disagrees", `{"dtype": "float32", "data": [1]}`, &u8, "line 1, column 11: dtype uint8 given but the file says float32"},
		{"strings need dtype", `[1, "abc"]`, nil, "line 1, column 5: at [1]: strings need --dtype S<n> or U<n>"},
		{"string too long", `["123456789"]`, &s8, "line 1, column 2: at [0]: string of 9 bytes does not fit S8"},
		{"string not latin-1", `["€"]`, &s8, "line 1, column 2: at [0]: character U+20AC does not fit S8: its bytes are characters U+0000 to U+00FF"},
		{"U too long", `["abc"]`, ptr(mustDType(t, "U2")), "line 1, column 2: at [0]: string of 3 characters does not fit U2"},
		{"V digits", `["abc"]`, ptr(mustDType(t, "V2")), "line 1, column 2: at [0]: a V2 value is 4 hex digits, found 3"},
		{"V not hex", `["abcg"]`, ptr(mustDType(t, "V2")), `line 1, column 2: at [0]: a V2 value is 4 hex digits, found a string "abcg"`},
		{"string for number dtype S", `[1]`, &s8, "line 1, column 2: at [0]: expected a string, found a number"},
		{"complex pair", `[[1, 2, 3]]`, ptr(mustDType(t, "complex64")), "line 1, column 2: at [0]: a complex64 value is [re, im]: expected 2 numbers, found 3"},
		{"lone surrogate", `["\ud800"]`, ptr(mustDType(t, "U2")), `line 1, column 3: invalid \u escape: lone surrogate \ud800`},
		{"bare scalar", `5`, &u8, "line 1, column 1: expected a JSON array or object, found a number"},
		{"leading zero", `[01]`, nil, "line 1, column 2: invalid number: a leading zero"},
		{"missing comma", "[1\n 2]", nil, "line 2, column 2: expected ',' or ']' after an array element, found a number"},
		{"trailing comma", "[1, ]", nil, "line 1, column 5: invalid character ']'"},
		{"unterminated", "[1, 2", nil, "line 1, column 6: expected ',' or ']' after an array element, found the end of the input"},
		{"control char", "[\"a\tb\"]", &s8, `line 1, column 4: control character '\t' in a string; write it as an escape`},
		{"padding limit", `{"dtype": "S1000000000", "data": ["", "", ""]}`, nil,
			"line 1, column 34: shape [3] of S1000000000 would take 3000000000 bytes, too many for 46 bytes of JSON"},
	} {
		_, _, err := DecodeJSON([]byte(tc.text), tc.want)
		if err == nil {
			t.Errorf("%s: no error", tc.name)
			continue
		}
		if err.Error() != tc.err {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, err, tc.err)
		}
		var je *JSONError
		if tc.name != "empty" && tc.name != "padding limit" && !errors.As(err, &je) {
			t.Errorf("%s: not a *JSONError", tc.name)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func TestEncodeJSONErrors(t *testing.T) {
	u2 := mustDType(t, "U2")
	for _, tc := range []struct {
		dt    format.DType
		shape []int
		data  []byte
		err   string
	}{
		{u2, []int{2}, []byte{'a', 0, 0, 0, 0, 0, 0, 0, 0, 0xd8, 0, 0, 0, 0, 0, 0}, "U2 element at flat index 1 holds code unit 0xD800, which is not a Unicode character"},
		{u2, []int{1}, []byte{0, 0, 0x11, 0, 0, 0, 0, 0}, "U2 element at flat index 0 holds code unit 0x110000, which is not a Unicode character"},
		{mustDType(t, "uint8"), []int{3}, []byte{1, 2}, "2 bytes of data for a uint8 tensor of shape [3], which needs 3"},
		{mustDType(t, "uint8"), []int{-1}, nil, "shape [-1] has a negative dimension"},
		{mustDType(t, "uint8"), []int{1 << 40, 0}, nil, "shape [1099511627776,0] would print more than 268435456 empty arrays"},
		{format.DType{Kind: 'f', Size: 3}, []int{}, []byte{0, 0, 0}, "dtype float24 (kind 'f', 3 bytes) has no JSON form"},
	} {
		err := EncodeJSON(&bytes.Buffer{}, tc.dt, tc.shape, tc.data)
		if err == nil || err.Error() != tc.err {
			t.Errorf("%v %v: got %v, want %s", tc.dt, tc.shape, err, tc.err)
		}
	}
}

// Every float16 and bfloat16 bit pattern prints as text that reads back to
// the same bits (NaNs to the canonical quiet NaN), and the whole table
// survives EncodeJSON and DecodeJSON.
func TestJSONSmallFloatsExhaustive(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec floatSpec
		nan  func(uint16) bool
	}{
		{"float16", halfSpec, func(b uint16) bool { return b&0x7fff > 0x7c00 }},
		{"bfloat16", bfloat16Spec, func(b uint16) bool { return b&0x7fff > 0x7f80 }},
	} {
		dt := mustDType(t, tc.name)
		all := make([]byte, 2*65536)
		for i := 0; i < 65536; i++ {
			binary.LittleEndian.PutUint16(all[2*i:], uint16(i))
			text := string(tc.spec.appendShortest(nil, uint64(i)))
			var got uint64
			if text[0] == '"' {
				f, ok := specialFloat([]byte(text[1 : len(text)-1]))
				if !ok {
					t.Fatalf("%s %#04x: %s", tc.name, i, text)
				}
				got = floatBits(f, 2, &tc.spec)
			} else {
				var ok bool
				if got, ok = tc.spec.parse(text); !ok {
					t.Fatalf("%s %#04x: %s out of range", tc.name, i, text)
				}
			}
			if tc.nan(uint16(i)) {
				if got != tc.spec.qnan {
					t.Fatalf("%s NaN %#04x: %s -> %#04x", tc.name, i, text, got)
				}
			} else if got != uint64(i) {
				t.Fatalf("%s %#04x: %s reads back as %#04x", tc.name, i, text, got)
			}
			// The float64 value must agree with x448/float16 / the bfloat16 widening.
			if !tc.nan(uint16(i)) && tc.name == "float16" && float64(float16.Frombits(uint16(i)).Float32()) != tc.spec.toFloat64(uint64(i)) {
				t.Fatalf("widening %#04x", i)
			}
			// Rounding a value that is already representable changes nothing.
			if f := tc.spec.toFloat64(uint64(i)); !math.IsNaN(f) {
				if b, tie := tc.spec.fromFloat64(f, 0); b != uint64(i) || tie {
					t.Fatalf("%s %#04x: fromFloat64 gives %#04x", tc.name, i, b)
				}
			}
		}
		var buf bytes.Buffer
		if err := EncodeJSON(&buf, dt, []int{256, 256}, all); err != nil {
			t.Fatal(err)
		}
		_, back, err := DecodeJSON(buf.Bytes(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(back, canonicalNaNs(dt, all)) {
			t.Fatalf("%s: the full table does not read back", tc.name)
		}
	}
}

// float64 → float16 rounding agrees with x448/float16's float32 → float16
// for float32 inputs, and float64 → bfloat16 with the usual float32 bit
// trick, over random and boundary float32 values.
func TestSmallFloatRounding(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	vals := []uint32{0, 0x80000000, 0x7f800000, 0xff800000, 0x477fefff, 0x477ff000, 0x477ff001, 0x33000000, 0x33000001, 0x32ffffff,
		0x38800000, 0x387fc000, 0x387fe000, 0x7f7fffff, 0x7f7f8000, 0x7f7f7fff, 0x00000001, 0x00800000}
	for i := 0; i < 1_000_000; i++ {
		vals = append(vals, rng.Uint32())
	}
	// float32s near the float16 range, where the interesting cases are
	for i := 0; i < 1_000_000; i++ {
		vals = append(vals, rng.Uint32()&0x80ffffff|uint32(100+rng.Intn(45))<<23)
	}
	for _, u := range vals {
		f := math.Float32frombits(u)
		if f != f {
			continue
		}
		got, _ := halfSpec.fromFloat64(float64(f), 0)
		if want := float16.Fromfloat32(f).Bits(); got != uint64(want) {
			t.Fatalf("float16(%g = %#08x): got %#04x, want %#04x", f, u, got, want)
		}
		gotB, _ := bfloat16Spec.fromFloat64(float64(f), 0)
		if want := (u + 0x7fff + (u >> 16 & 1)) >> 16; gotB != uint64(want) {
			t.Fatalf("bfloat16(%g = %#08x): got %#04x, want %#04x", f, u, gotB, want)
		}
	}
}

func TestExactInt(t *testing.T) {
	for _, tc := range []struct {
		text string
		neg  bool
		mag  uint64
		st   intStatus
	}{
		{"0", false, 0, intOK},
		{"-0", true, 0, intOK},
		{"18446744073709551615", false, math.MaxUint64, intOK},
		{"18446744073709551616", false, 0, intTooBig},
		{"1.8446744073709551615e19", false, math.MaxUint64, intOK},
		{"1e19", false, 1e19, intOK},
		{"1e20", false, 0, intTooBig},
		{"1e999999999999999999999", false, 0, intTooBig},
		{"123e-2", false, 0, intNotInteger},
		{"12300e-2", false, 123, intOK},
		{"0.000e5", false, 0, intOK},
		{"-9223372036854775808", true, 1 << 63, intOK},
		{"0.5", false, 0, intNotInteger},
		{"1e-999999999999999", false, 0, intNotInteger},
		{"000000000000000000000000000000001", false, 1, intOK}, // not valid JSON, but exactInt copes
	} {
		neg, mag, st := exactInt([]byte(tc.text))
		if neg != tc.neg || mag != tc.mag || st != tc.st {
			t.Errorf("%s: got %v %d %d", tc.text, neg, mag, st)
		}
	}
}

func BenchmarkDecodeJSONFloat32(b *testing.B) {
	const n = 1 << 18
	data := make([]byte, 4*n)
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(rng.Float32()))
	}
	var buf bytes.Buffer
	if err := EncodeJSON(&buf, mustDType(b, "float32"), []int{n / 64, 64}, data); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := DecodeJSON(buf.Bytes(), nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeJSONFloat16(b *testing.B) {
	const n = 1 << 18
	data := make([]byte, 2*n)
	rng := rand.New(rand.NewSource(1))
	rng.Read(data)
	b.SetBytes(int64(len(data)))
	for i := 0; i < b.N; i++ {
		if err := EncodeJSON(&bytes.Buffer{}, mustDType(b, "float16"), []int{n / 64, 64}, data); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzDecodeJSON(f *testing.F) {
	maxJSONPadding = 1 << 20 // keep S<n>/U<n> padding small under the fuzzer
	for _, s := range []string{
		seedDMLInput, seedDMLOutput, "[[[[0, 18, 1]]]]", "[]", "[[], []]", "[true, false]", `[1, "NaN", -Infinity]`,
		`{"dtype": "uint32", "shape": [1, 2, 2, 3], "data": [[[[0, 1, 2], [3, 4, 5]], [[9, 10, 11], [12, 13, 14]]]]}`,
		`{"dtype": "complex64", "shape": [], "data": [1, 2]}`, `{"dtype": "S3", "data": ["a\u00ff", ""]}`,
		`{"dtype": "U2", "data": [["\ud83d\ude00"]]}`, `{"dtype": "V2", "data": ["00ff"]}`, `{"dtype": "bfloat16", "data": [0.1, 1e38]}`,
		`{"dtype": "float16", "data": [65504, 6e-8, -0, "inf"]}`, `{"dtype": ">f8", "data": [0.1]}`,
		`{"dtype": "uint8", "shape": [1000000000000], "data": [1, 2, 3]}`, `{"dtype": "uint8", "shape": [2, 0, 9], "data": [[], []]}`,
		"[18446744073709551615, -1]", "[1e999, 1.5e-999]", "[[1, 2], [3]]", `["\ud800"]`, "\xff", "[\n 1,\n 2\n] x",
		strings.Repeat("[", 70), `{"dtype": "int8", "data": [1], "data": [2]}`,
	} {
		f.Add([]byte(s), "")
	}
	f.Add([]byte(seedDMLInput), "uint32")
	f.Add([]byte("[1, 2]"), "complex128")
	f.Add([]byte(`["ab", "c"]`), "S2")
	f.Add([]byte(`[1.00048828125]`), "float16")
	f.Fuzz(func(t *testing.T, data []byte, dtype string) {
		tm := time.AfterFunc(3*time.Second, func() {
			os.WriteFile(fmt.Sprintf("/tmp/slow_%d.txt", time.Now().UnixNano()), []byte(fmt.Sprintf("%q\n%q\n", dtype, data)), 0o644)
		})
		defer tm.Stop()
		var want *format.DType
		if dtype != "" {
			d, err := format.ParseDType(dtype)
			if err != nil {
				return
			}
			want = &d
		}
		h, elems, err := DecodeJSON(data, want)
		if err != nil {
			return
		}
		if int64(len(elems)) != h.DataBytes() {
			t.Fatalf("%d bytes for %v %v", len(elems), h.DType, h.Shape)
		}
		var buf bytes.Buffer
		if err := EncodeJSON(&buf, h.DType, h.Shape, elems); err != nil {
			t.Fatalf("EncodeJSON of a decoded tensor: %v", err)
		}
		h2, elems2, err := DecodeJSON(buf.Bytes(), nil)
		if err != nil {
			t.Fatalf("DecodeJSON of EncodeJSON output: %v\n%s", err, buf.String())
		}
		if !h.DType.SameLayout(h2.DType) || h.DType.Name() != h2.DType.Name() || !reflect.DeepEqual(h.Shape, h2.Shape) || h2.Fortran {
			t.Fatalf("header %+v became %+v", h, h2)
		}
		if !bytes.Equal(elems, elems2) {
			t.Fatalf("data %x became %x\n%s", elems, elems2, buf.String())
		}
	})
}

// Large 16-bit float tensors take their texts from a memo: every one of the
// 65536 bit patterns, in both byte orders, gets the text the direct
// computation gives (a small tensor takes the direct path).
func TestJSONShortest16Memo(t *testing.T) {
	for _, c := range []struct {
		descr string
		spec  *floatSpec
	}{{"<f2", &halfSpec}, {">f2", &halfSpec}, {"<V2", &bfloat16Spec}} {
		dt, err := format.ParseDescr(c.descr)
		if err != nil {
			t.Fatal(err)
		}
		if c.descr == "<V2" {
			dt, err = format.ParseDType("bfloat16")
			if err != nil {
				t.Fatal(err)
			}
		}
		const n = 2 << 16 // every pattern twice: computed, then from the memo
		data := make([]byte, 2*n)
		for i := 0; i < n; i++ {
			if dt.Order == '>' {
				binary.BigEndian.PutUint16(data[2*i:], uint16(i))
			} else {
				binary.LittleEndian.PutUint16(data[2*i:], uint16(i))
			}
		}
		var out bytes.Buffer
		if err := EncodeJSON(&out, dt, []int{n}, data); err != nil {
			t.Fatal(err)
		}
		var doc struct{ Data []json.RawMessage }
		if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Data) != n {
			t.Fatalf("%s: %d elements", c.descr, len(doc.Data))
		}
		for i, got := range doc.Data {
			v := i % (1 << 16)
			if want := string(c.spec.appendShortest(nil, uint64(v))); string(got) != want {
				t.Fatalf("%s bits %#04x: %s, want %s", c.descr, v, got, want)
			}
		}
	}
}
