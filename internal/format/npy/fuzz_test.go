package npy

import (
	"bytes"
	"errors"
	"io"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
)

// Fuzz targets for the two descriptions of a tensor that come from outside:
// an npy preamble (a hostile file controls every byte of it) and the raw
// description --dtype/--shape checked against a file's size. Their seed
// corpora live in testdata/fuzz/<FuzzName>/ (numpy-written files of every
// dtype and version, Fortran and big-endian ones, and known nasty cases);
// plain `go test` runs them. See docs/reliability.md.

// FuzzNpyHeader: ParseNpy (a mapped file) and ReadNpy (a stream) agree on
// every input; neither panics; the fast path for numpy's own headers
// reads what it takes as the strict parser does; a header they accept
// describes a shape whose size fits in int64 and a data offset inside the
// file; and an accepted header, written back by EncodeNpy, reads back the
// same.
func FuzzNpyHeader(f *testing.F) {
	for _, s := range []string{
		"",
		NpyMagic,
		string(npyWith(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2, 2, 2), }       \n")),
		string(npyWith(3, "{'descr': '<U1', 'fortran_order': True, 'shape': (2,), }\n")),
		"\x93NUMPY\x02\x00\xff\xff\xff\xff{",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fast path reads what it takes as the strict parser does.
		if len(data) > 10 {
			if h, ok := numpyHeader(data[10:]); ok {
				want, err := parseDict(string(data[10:]), 10)
				if err != nil || !reflect.DeepEqual(h, want) {
					t.Fatalf("numpyHeader %+v, parseDict %+v, %v", h, want, err)
				}
			}
		}
		n, err := ParseNpy(data)
		rd := bytes.NewReader(data)
		r, rerr := ReadNpy(rd)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("ParseNpy: %v; ReadNpy: %v", err, rerr)
		}
		if err != nil {
			for _, e := range []error{err, rerr} {
				var fe *FormatError
				if !errors.As(e, &fe) {
					t.Errorf("%T is not a *FormatError: %v", e, e)
				}
				if strings.ContainsAny(e.Error(), "\n\r") || e.Error() == "" {
					t.Errorf("error is not one line: %q", e.Error())
				}
			}
			// Both read the same preamble bytes, so past the fixed part
			// (where ParseNpy can see a wrong magic that ReadNpy cannot
			// read yet) they must fail for the same reason.
			if len(data) >= 12 && err.Error() != rerr.Error() {
				t.Errorf("different errors: ParseNpy %q, ReadNpy %q", err, rerr)
			}
			return
		}
		if !reflect.DeepEqual(n, r) {
			t.Fatalf("ParseNpy %+v, ReadNpy %+v", n, r)
		}
		// ReadNpy consumed exactly the preamble.
		if rest := int64(rd.Len()); rest != int64(len(data))-n.DataOffset {
			t.Fatalf("ReadNpy left %d bytes, want %d", rest, int64(len(data))-n.DataOffset)
		}
		checkSaneNpy(t, data, n)

		// Written back (C order and Fortran order), it reads the same.
		for _, fortran := range []bool{false, true} {
			h := format.Header{DType: n.DType, Shape: n.Shape, Fortran: fortran}
			pre := EncodeNpy(h)
			if len(pre)%npyAlign != 0 {
				t.Fatalf("EncodeNpy: %d-byte preamble is not %d-aligned", len(pre), npyAlign)
			}
			back, err := ParseNpy(pre)
			if err != nil {
				t.Fatalf("EncodeNpy(%+v) does not parse: %v\n%q", h, err, pre)
			}
			if back.DType.Descr() != n.DType.Descr() || !back.DType.SameLayout(n.DType) ||
				!reflect.DeepEqual(back.Shape, n.Shape) || back.Fortran != fortran || back.DataOffset != int64(len(pre)) {
				t.Fatalf("round trip of %+v gave %+v", h, back)
			}
			if back.Major != 1 && len(pre) <= 0xffff+10 {
				t.Fatalf("version %d.0 for a header that fits version 1.0", back.Major)
			}
		}
	})
}

// checkSaneNpy checks what an accepted header promises to the code that
// uses it: an offset inside the file, a non-negative shape of at most 1024
// axes, an element size in range and sizes that fit in int64.
func checkSaneNpy(t *testing.T, data []byte, n Npy) {
	t.Helper()
	fixed := int64(10)
	if n.Major != 1 {
		fixed = 12
	}
	if n.Major < 1 || n.Major > 3 || n.Minor != 0 {
		t.Fatalf("accepted version %d.%d", n.Major, n.Minor)
	}
	if n.DataOffset < fixed || n.DataOffset > int64(len(data)) || n.DataOffset-fixed > MaxNpyHeader {
		t.Fatalf("data offset %d in a %d-byte file", n.DataOffset, len(data))
	}
	if len(n.Shape) > 1024 {
		t.Fatalf("rank %d", len(n.Shape))
	}
	for _, d := range n.Shape {
		if d < 0 {
			t.Fatalf("negative dimension in %v", n.Shape)
		}
	}
	if n.DType.Size < 1 || n.DType.Size > format.MaxElemSize {
		t.Fatalf("element size %d", n.DType.Size)
	}
	want, overflow := bigBytes(n.Shape, n.DType.Size)
	if overflow || n.Elements() < 0 || n.DataBytes() != want {
		t.Fatalf("shape %v of %d-byte elements: format.DataBytes %d, want %d (overflow %v)", n.Shape, n.DType.Size, n.DataBytes(), want, overflow)
	}
}

// bigBytes is the oracle for a tensor's size: the product of the shape and
// the element size in arbitrary precision. Like numpy ("array is too big"),
// a shape is refused when the product of its non-zero dimensions times the
// element size overflows int64, even if another dimension is zero.
func bigBytes(shape []int, elemSize int) (int64, bool) {
	p := big.NewInt(int64(elemSize))
	zero := false
	for _, d := range shape {
		if d == 0 {
			zero = true
			continue
		}
		p.Mul(p, big.NewInt(int64(d)))
	}
	if !p.IsInt64() {
		return -1, true
	}
	if zero {
		return 0, false
	}
	return p.Int64(), false
}

// FuzzRawDescription: --dtype and --shape, as a user types them, against
// the size of a raw file. Parsing never panics; the described size never
// overflows silently (an overflowing description is refused, like numpy
// refuses it); and raw input is accepted exactly when the described size
// equals the file size.
func FuzzRawDescription(f *testing.F) {
	f.Add("uint32", "1,2,4,6", int64(192))
	f.Add("float32", "1,8,2,3", int64(191))
	f.Add("S3", "[2, 3]", int64(18))
	f.Add("U2", "(4)", int64(32))
	f.Add("bfloat16", "2x2", int64(8))
	f.Add("FLOAT16", "", int64(2))
	f.Add("<c16", "0,99999999999", int64(0))
	f.Add("V1073741824", "9,1073741824", int64(-1))
	f.Add("u1", "1,1,-2,2", int64(-4))
	f.Add("int64", "4611686018427387904,2", int64(0))
	f.Add("i8", "0,4294967296,4294967296", int64(0))
	f.Fuzz(func(t *testing.T, dtype, shape string, size int64) {
		dt, err := format.ParseDType(dtype)
		if err != nil {
			oneLineErr(t, err)
			return
		}
		if dt.Size < 1 || dt.Size > format.MaxElemSize || !strings.ContainsRune("biufcSUV", rune(dt.Kind)) || !strings.ContainsRune("<>|", rune(dt.Order)) {
			t.Fatalf("format.ParseDType(%q) = %+v", dtype, dt)
		}
		if back, err := format.ParseDType(dt.Name()); err != nil || !back.SameLayout(dt) {
			t.Fatalf("format.ParseDType(%q).Name() = %q reads back as %+v (%v)", dtype, dt.Name(), back, err)
		}
		s, err := format.ParseShape(shape)
		if err != nil {
			oneLineErr(t, err)
			return
		}
		for _, d := range s {
			if d < 0 {
				t.Fatalf("format.ParseShape(%q) = %v", shape, s)
			}
		}
		if back, err := format.ParseShape(format.ShapeString(s)); err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("format.ParseShape(%q) = %v; its format.ShapeString %q reads back as %v (%v)", shape, s, format.ShapeString(s), back, err)
		}
		h := format.Header{DType: dt, Shape: s}
		want, overflow := bigBytes(s, dt.Size)
		got := h.DataBytes()
		if overflow && got != -1 || !overflow && got != want {
			t.Fatalf("%s %v: format.DataBytes %d, want %d (overflow %v)", dt, s, got, want, overflow)
		}
		accept := got >= 0 && got == size
		if accept != (!overflow && want == size) {
			t.Fatalf("%s %v against %d bytes: accepted %v", dt, s, size, accept)
		}
	})
}

func oneLineErr(t *testing.T, err error) {
	t.Helper()
	if msg := err.Error(); msg == "" || strings.ContainsAny(msg, "\n\r") {
		t.Fatalf("error is not one line: %q", msg)
	}
}

// A stream is read in bounded memory: ReadNpy never allocates more than the
// header bound, whatever length the preamble claims.
func TestReadNpyBoundedByHeaderLimit(t *testing.T) {
	data := []byte("\x93NUMPY\x02\x00\xff\xff\xff\xff{")
	if _, err := ReadNpy(bytes.NewReader(data)); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("a 4 GiB header length: %v", err)
	}
	// Just under the bound: refused as truncated, without reading past
	// the end of the stream.
	data = append([]byte(NpyMagic), 2, 0, 0, 0, 0x10, 0, '{')
	_, err := ReadNpy(io.LimitReader(bytes.NewReader(data), int64(len(data))))
	if err == nil || !strings.Contains(err.Error(), "truncated npy header: 13 of 1048588 bytes") {
		t.Fatalf("a 1 MiB header length in a 13-byte stream: %v", err)
	}
}

// Found while writing testdata/scripts/hostile_shape_flag.txtar: ParseShape
// called a dimension that does not fit in int64 "not an integer"; it is
// one, and the message says it is too large, as the npy header parser does.
func TestParseShapeHugeDimensionMessage(t *testing.T) {
	_, err := format.ParseShape("1,1,99999999999999999999,2")
	if err == nil || !strings.Contains(err.Error(), "too large") || strings.Contains(err.Error(), "not an integer") {
		t.Errorf("got %v, want an error saying the dimension is too large", err)
	}
}

// Found by FuzzNpyHeader and FuzzRawDescription (testdata/fuzz/*/
// c023f85f6f0a5cc6, 9c74356728e3e3f5): Header.DataBytes of a zero-size
// shape was 0 even when the product of its non-zero dimensions times the
// element size overflows int64. numpy refuses such an array ("array is too
// big"), Elements refused the same case for the element count, and an npy
// file written with this header (depthspace keeps shapes) could not be
// loaded by numpy.
func TestDataBytesZeroSizeOverflow(t *testing.T) {
	s7, _ := format.ParseDType("S7")
	s8, _ := format.ParseDType("S8")
	for _, h := range []format.Header{
		{DType: s7, Shape: []int{0, 0, 700000000000000000, 2}},
		{DType: s8, Shape: []int{0, 7000000000, 170000000}},
	} {
		if got := h.DataBytes(); got != -1 {
			t.Errorf("%s %v: format.DataBytes %d, want -1 (numpy: array is too big)", h.DType, h.Shape, got)
		}
	}
	pre := npyWith(1, "{'descr': '|S7', 'fortran_order': False, 'shape': (0, 700000000000000000, 2), }\n")
	if _, err := ParseNpy(pre); err == nil {
		t.Error("ParseNpy accepts a header numpy refuses as too big")
	}
}
