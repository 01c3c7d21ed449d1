package onnx

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"google.golang.org/protobuf/encoding/protowire"
)

// tensorProto builds a TensorProto by hand, field by field.
type tensorProto []byte

func (t tensorProto) dims(d ...int64) tensorProto {
	for _, v := range d {
		t = protowire.AppendTag(t, tpDims, protowire.VarintType)
		t = protowire.AppendVarint(t, uint64(v))
	}
	return t
}

func (t tensorProto) packedDims(d ...int64) tensorProto {
	var p []byte
	for _, v := range d {
		p = protowire.AppendVarint(p, uint64(v))
	}
	t = protowire.AppendTag(t, tpDims, protowire.BytesType)
	return protowire.AppendBytes(t, p)
}

func (t tensorProto) dataType(code int32) tensorProto {
	t = protowire.AppendTag(t, tpDataType, protowire.VarintType)
	return protowire.AppendVarint(t, uint64(int64(code)))
}

func (t tensorProto) bytesField(num protowire.Number, b []byte) tensorProto {
	t = protowire.AppendTag(t, num, protowire.BytesType)
	return protowire.AppendBytes(t, b)
}

// varints appends values packed (or one by one).
func (t tensorProto) varints(num protowire.Number, packed bool, v ...int64) tensorProto {
	if !packed {
		for _, x := range v {
			t = protowire.AppendTag(t, num, protowire.VarintType)
			t = protowire.AppendVarint(t, uint64(x))
		}
		return t
	}
	var p []byte
	for _, x := range v {
		p = protowire.AppendVarint(p, uint64(x))
	}
	return t.bytesField(num, p)
}

func (t tensorProto) floats(packed bool, v ...float32) tensorProto {
	if !packed {
		for _, x := range v {
			t = protowire.AppendTag(t, tpFloatData, protowire.Fixed32Type)
			t = protowire.AppendFixed32(t, math.Float32bits(x))
		}
		return t
	}
	var p []byte
	for _, x := range v {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(x))
	}
	return t.bytesField(tpFloatData, p)
}

func (t tensorProto) doubles(v ...float64) tensorProto {
	var p []byte
	for _, x := range v {
		p = binary.LittleEndian.AppendUint64(p, math.Float64bits(x))
	}
	return t.bytesField(tpDoubleData, p)
}

func le(size int, v ...int64) []byte {
	var b []byte
	for _, x := range v {
		switch size {
		case 1:
			b = append(b, byte(x))
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(x))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(x))
		case 8:
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
	}
	return b
}

func f32(v ...float32) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func f64(v ...float64) []byte {
	var b []byte
	for _, x := range v {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// Every typed field, packed and not, gives the bytes raw_data would hold.
func TestDecodeONNXTypedFields(t *testing.T) {
	for _, c := range []struct {
		name  string
		proto tensorProto
		dtype string
		shape string
		data  []byte
	}{
		{"float packed", tensorProto{}.dims(2, 2).dataType(1).floats(true, 1, -2, 3.5, 0), "float32", "2,2", f32(1, -2, 3.5, 0)},
		{"float unpacked", tensorProto{}.dims(3).dataType(1).floats(false, 1, 2, 3), "float32", "3", f32(1, 2, 3)},
		{"complex64", tensorProto{}.dims(2).dataType(14).floats(true, 1, 2, 3, 4), "complex64", "2", f32(1, 2, 3, 4)},
		{"int8", tensorProto{}.dims(4).dataType(3).varints(tpInt32Data, true, -128, -1, 0, 127), "int8", "4", le(1, -128, -1, 0, 127)},
		{"uint8", tensorProto{}.dims(2).dataType(2).varints(tpInt32Data, false, 0, 255), "uint8", "2", le(1, 0, 255)},
		{"int16", tensorProto{}.dims(2).dataType(5).varints(tpInt32Data, true, -32768, 32767), "int16", "2", le(2, -32768, 32767)},
		{"uint16", tensorProto{}.dims(1).dataType(4).varints(tpInt32Data, true, 65535), "uint16", "1", le(2, 65535)},
		{"int32", tensorProto{}.dims(2).dataType(6).varints(tpInt32Data, true, math.MinInt32, math.MaxInt32), "int32", "2", le(4, math.MinInt32, math.MaxInt32)},
		{"bool", tensorProto{}.dims(3).dataType(9).varints(tpInt32Data, true, 1, 0, 1), "bool", "3", []byte{1, 0, 1}},
		{"float16 bits", tensorProto{}.dims(2).dataType(10).varints(tpInt32Data, true, 0x3c00, 0xc000), "float16", "2", le(2, 0x3c00, 0xc000)},
		{"bfloat16 bits", tensorProto{}.dims(1).dataType(16).varints(tpInt32Data, true, 0x3f80), "bfloat16", "1", le(2, 0x3f80)},
		{"int64", tensorProto{}.dims(2).dataType(7).varints(tpInt64Data, true, math.MinInt64, math.MaxInt64), "int64", "2", le(8, math.MinInt64, math.MaxInt64)},
		{"uint32", tensorProto{}.dims(1).dataType(12).varints(tpUint64Data, true, math.MaxUint32), "uint32", "1", le(4, math.MaxUint32)},
		{"uint64", tensorProto{}.dims(1).dataType(13).varints(tpUint64Data, false, -1), "uint64", "1", le(8, -1)},
		{"double", tensorProto{}.dims(2).dataType(11).doubles(1.5, math.Copysign(0, -1)), "float64", "2", f64(1.5, math.Copysign(0, -1))},
		{"complex128", tensorProto{}.dims(1).dataType(15).doubles(1, 2), "complex128", "1", f64(1, 2)},
		{"packed dims, raw", tensorProto{}.packedDims(1, 2).dataType(1).bytesField(tpRawData, f32(7, 8)), "float32", "1,2", f32(7, 8)},
		{"scalar", tensorProto{}.dataType(6).bytesField(tpRawData, le(4, 42)), "int32", "", le(4, 42)},
		{"empty", tensorProto{}.dims(0, 3).dataType(1), "float32", "0,3", []byte{}},
		{"name and doc kept aside", tensorProto{}.dims(1).dataType(2).bytesField(tpName, []byte("x")).bytesField(12, []byte("doc")).bytesField(tpRawData, []byte{9}), "uint8", "1", []byte{9}},
	} {
		got, err := DecodeONNX(c.proto)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if got.DType.Name() != c.dtype || format.ShapeString(got.Shape) != c.shape || !bytes.Equal(got.Data, c.data) {
			t.Errorf("%s: got %s [%s] %v, want %s [%s] %v", c.name, got.DType.Name(), format.ShapeString(got.Shape), got.Data, c.dtype, c.shape, c.data)
		}
	}
}

func TestDecodeONNXErrors(t *testing.T) {
	raw4 := f32(1, 2, 3, 4)
	for _, c := range []struct {
		name  string
		proto []byte
		want  string
	}{
		{"no type", tensorProto{}.dims(1).bytesField(tpRawData, []byte{1}), "data_type is missing"},
		{"string", tensorProto{}.dims(1).dataType(8).bytesField(tpStringData, []byte("a")), "string_data: STRING tensors"},
		{"string type", tensorProto{}.dims(1).dataType(8), "STRING has no fixed-size numpy dtype"},
		{"float8", tensorProto{}.dims(1).dataType(17).bytesField(tpRawData, []byte{1}), "FLOAT8E4M3FN has no fixed-size"},
		{"int4", tensorProto{}.dims(2).dataType(22).bytesField(tpRawData, []byte{1}), "INT4 has no fixed-size"},
		{"unknown type", tensorProto{}.dims(1).dataType(99), "data_type 99 is not an ONNX type"},
		{"raw too short", tensorProto{}.dims(5).dataType(1).bytesField(tpRawData, raw4), "raw_data has 16 bytes but dims [5] of FLOAT describe 20"},
		{"raw too long", tensorProto{}.dims(3).dataType(1).bytesField(tpRawData, raw4), "raw_data has 16 bytes but dims [3] of FLOAT describe 12"},
		{"raw twice", tensorProto{}.dims(1).dataType(2).bytesField(tpRawData, []byte{1}).bytesField(tpRawData, []byte{2}), "raw_data appears twice"},
		{"raw and typed", tensorProto{}.dims(1).dataType(1).bytesField(tpRawData, f32(1)).floats(true, 1), "both raw_data and float_data"},
		{"wrong typed field", tensorProto{}.dims(1).dataType(7).floats(true, 1), "float_data holds values but data_type is INT64"},
		{"count", tensorProto{}.dims(3).dataType(1).floats(true, 1, 2), "float_data has 2 values but dims [3] of FLOAT need 3"},
		{"no data", tensorProto{}.dims(3).dataType(1), "no data: neither raw_data nor float_data"},
		{"int8 range", tensorProto{}.dims(1).dataType(3).varints(tpInt32Data, true, 200), "value 200 does not fit INT8"},
		{"bool range", tensorProto{}.dims(1).dataType(9).varints(tpInt32Data, true, 2), "value 2 does not fit BOOL"},
		{"uint32 range", tensorProto{}.dims(1).dataType(12).varints(tpUint64Data, true, 1<<32), "does not fit UINT32"},
		{"negative dim", tensorProto{}.dims(-1).dataType(1), "dimension 0 is negative"},
		{"huge dims", tensorProto{}.dims(1<<40, 1<<40).dataType(1), "too large"},
		{"external", tensorProto{}.dims(1).dataType(1).bytesField(tpExternalData, tensorProto{}.bytesField(1, []byte("location")).bytesField(2, []byte("w.bin"))), `external_data, location "w.bin"`},
		{"data_location", tensorProto{}.dims(1).dataType(1).varints(tpDataLocation, false, 1), "data_location is EXTERNAL"},
		{"segment", tensorProto{}.dims(1).dataType(1).bytesField(tpSegment, nil), "segmented tensors"},
		{"cut length", []byte{0x4a, 0x10, 1, 2}, "length runs past the end"},
		{"bad tag", []byte{0x80}, "malformed field tag"},
		{"field zero", []byte{0x00, 0x01}, "malformed field tag"},
		{"float_data ragged", tensorProto{}.dims(1).dataType(1).bytesField(tpFloatData, []byte{1, 2, 3}), "not a whole number of 4-byte values"},
		{"varint cut", tensorProto{}.dims(1).dataType(6).bytesField(tpInt32Data, []byte{0x80}), "the last varint is cut off"},
		{"model-like", tensorProto{}.varints(1, false, 8).bytesField(2, []byte("pytorch")), "not a TensorProto"},
		{"name not utf8", tensorProto{}.dims(1).dataType(2).bytesField(tpName, []byte{0xff}).bytesField(tpRawData, []byte{1}), "name is not valid UTF-8"},
	} {
		_, err := DecodeONNX(c.proto)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}

// A preamble followed by the data is a TensorProto that decodes to the
// same header, name and bytes.
func TestONNXPreambleRoundTrip(t *testing.T) {
	for _, name := range []string{"float32", "float16", "bfloat16", "bool", "int8", "uint8", "int16", "uint16",
		"int32", "uint32", "int64", "uint64", "float64", "complex64", "complex128"} {
		dt := format.NumpyNames()[name]
		h := format.Header{DType: dt, Shape: []int{2, 1, 3}}
		data := make([]byte, h.DataBytes())
		for i := range data {
			data[i] = byte(i * 7)
			if dt.Kind == 'b' {
				data[i] &= 1
			}
		}
		pre, err := ONNXPreamble(h, "t_"+name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := DecodeONNX(append(pre, data...))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !got.DType.SameLayout(dt) || format.ShapeString(got.Shape) != "2,1,3" || got.Name != "t_"+name || !bytes.Equal(got.Data, data) {
			t.Errorf("%s: round trip gave %s [%s] %q", name, got.DType.Name(), format.ShapeString(got.Shape), got.Name)
		}
	}
}

func TestONNXDataTypeRefuses(t *testing.T) {
	for _, c := range []struct{ descr, want string }{
		{">f4", "big-endian >f4 data cannot be written as ONNX"},
		{"|S5", "S5 has no ONNX tensor type"},
		{"<U2", "U2 has no ONNX tensor type"},
		{"|V2", "V2 is opaque"},
		{"|V3", "V3 has no ONNX tensor type"},
	} {
		d, err := format.ParseDescr(c.descr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ONNXDataType(d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.descr, err, c.want)
		}
	}
	// Single-byte types have no byte order to worry about.
	if d, _ := format.ParseDescr(">u1"); func() error { _, err := ONNXDataType(d); return err }() != nil {
		t.Errorf(">u1 refused")
	}
}

// FuzzONNX: hostile TensorProtos never panic, never allocate more than 8
// bytes per byte of the file (an INT64 from one-byte varints), and whatever
// decodes describes exactly its data.
func FuzzONNX(f *testing.F) {
	f.Add([]byte(tensorProto{}.dims(2, 2).dataType(1).floats(true, 1, 2, 3, 4)))
	f.Add([]byte(tensorProto{}.dims(1, 3).dataType(6).varints(tpInt32Data, false, -1, 0, 1)))
	f.Add([]byte(tensorProto{}.packedDims(2).dataType(7).varints(tpInt64Data, true, 5, -5)))
	f.Add([]byte(tensorProto{}.dims(1).dataType(11).doubles(2.5)))
	f.Add([]byte(tensorProto{}.dims(2).dataType(13).varints(tpUint64Data, true, 1, 2)))
	f.Add([]byte(tensorProto{}.dims(4).dataType(2).bytesField(tpName, []byte("x")).bytesField(tpRawData, []byte{1, 2, 3, 4})))
	f.Add([]byte(tensorProto{}.dims(1 << 40).dataType(1)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := DecodeONNX(b)
		if err != nil {
			return
		}
		if int64(len(got.Data)) != got.DataBytes() {
			t.Fatalf("%d data bytes for dims [%s] of %s", len(got.Data), format.ShapeString(got.Shape), got.DType)
		}
		if len(got.Data) > 8*len(b) {
			t.Fatalf("%d data bytes from a %d-byte file", len(got.Data), len(b))
		}
	})
}
