package format

import (
	"strings"
	"testing"
)

// The canonical descr of every numpy name in the table: what numpy.dtype(name).str
// prints on a little-endian machine (bfloat16 as ml_dtypes stores it).
var wantDescr = map[string]string{
	"bool": "|b1", "int8": "|i1", "uint8": "|u1",
	"int16": "<i2", "uint16": "<u2", "int32": "<i4", "uint32": "<u4",
	"int64": "<i8", "uint64": "<u8",
	"float16": "<f2", "float32": "<f4", "float64": "<f8",
	"complex64": "<c8", "complex128": "<c16",
	"bfloat16": "<V2",
	"bool_":    "|b1", "byte": "|i1", "ubyte": "|u1", "short": "<i2", "ushort": "<u2",
	"intc": "<i4", "uintc": "<u4", "int": "<i8", "int_": "<i8", "uint": "<u8",
	"half": "<f2", "single": "<f4", "double": "<f8", "cfloat": "<c16",
}

// Every numpy name in the table parses, has the descr numpy gives it, and
// that descr (and the dtype's own Name) read back as the same dtype.
func TestDTypeNumpyNamesRoundTrip(t *testing.T) {
	if len(wantDescr) != len(NumpyNames()) {
		t.Errorf("the test knows %d numpy names, the table has %d: keep them in step", len(wantDescr), len(NumpyNames()))
	}
	for name := range NumpyNames() {
		d, err := ParseDType(name)
		if err != nil {
			t.Errorf("ParseDType(%q): %v", name, err)
			continue
		}
		want, ok := wantDescr[name]
		if !ok {
			t.Errorf("%q: no expected descr in the test", name)
			continue
		}
		if got := d.Descr(); got != want {
			t.Errorf("%q: descr %q, want %q", name, got, want)
		}
		back, err := ParseDescr(d.Descr())
		if err != nil {
			t.Errorf("%q: its descr %q does not parse: %v", name, d.Descr(), err)
			continue
		}
		if !back.SameLayout(d) && !d.BFloat16 {
			t.Errorf("%q: descr %q reads back as %s", name, d.Descr(), back.Name())
		}
		again, err := ParseDType(d.Name())
		if err != nil || !again.SameLayout(d) {
			t.Errorf("%q: its name %q reads back as %v, %v", name, d.Name(), again, err)
		}
		if d.BFloat16 && (back.Kind != 'V' || back.Size != 2) {
			t.Errorf("bfloat16's descr %q should be an opaque V2", d.Descr())
		}
	}
}

// numpy's one-letter codes, alone and with every byte order.
func TestDTypeCodes(t *testing.T) {
	for c, want := range numpyChars() {
		for _, order := range []string{"", "<", ">", "=", "|"} {
			name := order + string(c)
			d, err := ParseDType(name)
			if order == "|" && want.Size > 1 {
				if err == nil {
					t.Errorf("%q: a multi-byte type with byte order '|' should be refused", name)
				}
				continue
			}
			if err != nil {
				t.Errorf("ParseDType(%q): %v", name, err)
				continue
			}
			if d.Kind != want.Kind || d.Size != want.Size {
				t.Errorf("%q: got %s", name, d.Name())
			}
			wantOrder := byte('<')
			switch {
			case d.Size == 1:
				wantOrder = '|'
			case order == ">":
				wantOrder = '>'
			}
			if d.Order != wantOrder {
				t.Errorf("%q: byte order %q, want %q", name, d.Order, wantOrder)
			}
		}
	}
	// Sized codes, and names of big-endian dtypes, round-trip through descr and name.
	for _, code := range []string{"b1", "i1", "u1", "i2", "u2", "i4", "u4", "i8", "u8", "f2", "f4", "f8", "c8", "c16",
		"<i2", ">i2", ">u4", ">f8", ">c16", "=u4", "|u1", "S8", "|S1", "a3", "U3", "<U3", ">U2", "V2", "|V16"} {
		d, err := ParseDType(code)
		if err != nil {
			t.Errorf("ParseDType(%q): %v", code, err)
			continue
		}
		for _, text := range []string{d.Descr(), d.Name()} {
			back, err := ParseDType(text)
			if err != nil || !back.SameLayout(d) {
				t.Errorf("%q -> %q reads back as %v, %v", code, text, back.Name(), err)
			}
		}
	}
	for code, want := range map[string]string{">i2": ">i2", "<f4": "<f4", "S8": "|S8", "a3": "|S3", "U3": "<U3", ">U2": ">U2", "V2": "|V2", "?": "|b1", "d": "<f8", "F": "<c8"} {
		d, err := ParseDType(code)
		if err != nil || d.Descr() != want {
			t.Errorf("ParseDType(%q).Descr() = %q, %v; want %q", code, d.Descr(), err, want)
		}
	}
}

// ONNX TensorProto.DataType and DirectML DML_TENSOR_DATA_TYPE names, in
// any case, with or without their prefixes, mean the numpy type named.
func TestDTypeFrameworkNames(t *testing.T) {
	onnx := map[string]string{ // onnx.proto TensorProto.DataType, the fixed-size ones
		"FLOAT": "float32", "UINT8": "uint8", "INT8": "int8", "UINT16": "uint16", "INT16": "int16",
		"INT32": "int32", "INT64": "int64", "BOOL": "bool", "FLOAT16": "float16", "DOUBLE": "float64",
		"UINT32": "uint32", "UINT64": "uint64", "COMPLEX64": "complex64", "COMPLEX128": "complex128",
		"BFLOAT16": "bfloat16",
	}
	dml := map[string]string{ // DML_TENSOR_DATA_TYPE_*
		"FLOAT32": "float32", "FLOAT16": "float16", "UINT32": "uint32", "UINT16": "uint16", "UINT8": "uint8",
		"INT32": "int32", "INT16": "int16", "INT8": "int8", "FLOAT64": "float64", "UINT64": "uint64", "INT64": "int64",
	}
	check := func(name, want string) {
		t.Helper()
		got, err := ParseDType(name)
		if err != nil {
			t.Errorf("ParseDType(%q): %v", name, err)
			return
		}
		w := NumpyNames()[want]
		if !got.SameLayout(w) {
			t.Errorf("ParseDType(%q) = %s, want %s", name, got.Name(), want)
		}
	}
	for name, want := range onnx {
		check(name, want)
		check("TensorProto."+name, want)
		if name != "FLOAT" { // lower-case float is ambiguous, tested below
			check(strings.ToLower(name), want)
			check(strings.ToUpper(name[:1])+strings.ToLower(name[1:]), want)
		}
	}
	for name, want := range dml {
		check(name, want)
		check("DML_TENSOR_DATA_TYPE_"+name, want)
		check(strings.ToLower("DML_TENSOR_DATA_TYPE_"+name), want)
		check(strings.ToLower(name), want)
	}
	// Every framework name in the table is covered by the lists above.
	for name := range frameworkNames() {
		if _, ok := onnx[name]; !ok {
			if _, ok := dml[name]; !ok && name != "BOOLEAN" {
				t.Errorf("table name %q is in neither the ONNX nor the DirectML list", name)
			}
		}
	}
}

// Lower-case "float" means float64 to numpy and float32 to ONNX: refused,
// naming both, rather than guessed. The upper-case ONNX spelling is not
// ambiguous.
func TestDTypeAmbiguousFloat(t *testing.T) {
	for _, name := range []string{"float", "Float", "fLoAt"} {
		_, err := ParseDType(name)
		if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), "float32 or float64") {
			t.Errorf("ParseDType(%q) = %v, want the ambiguity explained", name, err)
		}
	}
	for _, name := range []string{"FLOAT", "TensorProto.FLOAT", "DML_TENSOR_DATA_TYPE_FLOAT32"} {
		d, err := ParseDType(name)
		if err != nil || !d.SameLayout(NumpyNames()["float32"]) {
			t.Errorf("ParseDType(%q) = %v, %v; want float32", name, d.Name(), err)
		}
	}
}

func TestDTypeRefused(t *testing.T) {
	for name, want := range map[string]string{
		"float33":                    `unknown dtype "float33"`,
		"":                           `unknown dtype ""`,
		"i3":                         `unknown dtype "i3"`,
		"f1":                         `unknown dtype "f1"`,
		"c4":                         `unknown dtype "c4"`,
		"S0":                         `unknown dtype "S0"`,
		"<":                          "byte order but no type",
		"|f4":                        "needs a byte order",
		"O":                          "object arrays",
		"|O":                         "object arrays",
		"object":                     "object arrays",
		"STRING":                     "no fixed size",
		"string":                     "no fixed size",
		"U999999999999":              "too large",
		"S2147483648":                "too large",
		"FLOAT8E4M3FN":               "unknown dtype",
		"DML_TENSOR_DATA_TYPE_UINT4": "unknown dtype",
	} {
		_, err := ParseDType(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseDType(%q) = %v, want an error containing %q", name, err, want)
		}
	}
}

// Byte order is storage, not type: SameLayout tells them apart, and Name
// keeps the '>' so a JSON round trip gives the same npy bytes.
func TestDTypeByteOrder(t *testing.T) {
	le, _ := ParseDType("<i4")
	be, _ := ParseDType(">i4")
	if le.SameLayout(be) {
		t.Error("<i4 and >i4 have the same layout")
	}
	if be.Name() != ">i4" || le.Name() != "int32" {
		t.Errorf("names %q, %q", le.Name(), be.Name())
	}
	if got := le.WithOrder('>'); !got.SameLayout(be) || got.Descr() != ">i4" {
		t.Errorf("WithOrder('>') = %s", got.Descr())
	}
	u1, _ := ParseDType("u1")
	if got := u1.WithOrder('>'); got.Descr() != "|u1" {
		t.Errorf("a one-byte type has no byte order, got %s", got.Descr())
	}
}
