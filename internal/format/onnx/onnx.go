package onnx

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pbwire"
)

// KindONNX is one ONNX TensorProto, as in the .pb files of ONNX's
// test_data_set directories.
const KindONNX format.Kind = "onnx"

// ONNX TensorProto files: the .pb files of ONNX test_data_set directories
// (onnx.proto, message TensorProto). The wire format is read with
// the protobuf wire format (package pbwire), field by field, strictly: every length is checked against the
// input before it is used, and the data is allocated only after its size
// has been checked against the values the file actually holds.
//
// Data is read from raw_data (little-endian bytes, by the ONNX spec) or
// from the typed fields: float_data (FLOAT, COMPLEX64), int32_data (INT32,
// INT16, INT8, UINT16, UINT8, BOOL, FLOAT16 and BFLOAT16 as bit patterns),
// int64_data (INT64), double_data (DOUBLE, COMPLEX128) and uint64_data
// (UINT32, UINT64). Output is always raw_data.

// TensorProto field numbers (onnx.proto).
const (
	tpDims         = 1
	tpDataType     = 2
	tpSegment      = 3
	tpFloatData    = 4
	tpInt32Data    = 5
	tpStringData   = 6
	tpInt64Data    = 7
	tpName         = 8
	tpRawData      = 9
	tpDoubleData   = 10
	tpUint64Data   = 11
	tpExternalData = 13
	tpDataLocation = 14
)

// onnxType is an ONNX type's name and its numpy name; "" marks a type
// with no fixed-size numpy equivalent.
type onnxType struct{ name, numpy string }

// onnxTypes() maps TensorProto.DataType to its names.
var onnxTypes = sync.OnceValue(func() map[int32]onnxType {
	return map[int32]onnxType{
		1: {"FLOAT", "float32"}, 2: {"UINT8", "uint8"}, 3: {"INT8", "int8"},
		4: {"UINT16", "uint16"}, 5: {"INT16", "int16"}, 6: {"INT32", "int32"},
		7: {"INT64", "int64"}, 8: {"STRING", ""}, 9: {"BOOL", "bool"},
		10: {"FLOAT16", "float16"}, 11: {"DOUBLE", "float64"}, 12: {"UINT32", "uint32"},
		13: {"UINT64", "uint64"}, 14: {"COMPLEX64", "complex64"}, 15: {"COMPLEX128", "complex128"},
		16: {"BFLOAT16", "bfloat16"},
		17: {"FLOAT8E4M3FN", ""}, 18: {"FLOAT8E4M3FNUZ", ""}, 19: {"FLOAT8E5M2", ""},
		20: {"FLOAT8E5M2FNUZ", ""}, 21: {"UINT4", ""}, 22: {"INT4", ""}, 23: {"FLOAT4E2M1", ""},
		24: {"FLOAT8E8M0", ""},
	}
})

// ONNXTensor is a decoded TensorProto.
type ONNXTensor struct {
	format.Header
	Name     string
	DataType int32 // TensorProto.DataType
	// Data is the element bytes, little-endian, C order: raw_data itself
	// (a slice of the input, not copied) or the typed values converted.
	Data []byte
}

// ONNXError is a malformed or unsupported TensorProto, with the byte offset
// where it went wrong (-1: the message as a whole).
type ONNXError struct {
	Offset int64
	Msg    string
}

func (e *ONNXError) Error() string {
	if e.Offset < 0 {
		return "onnx TensorProto: " + e.Msg
	}
	return fmt.Sprintf("onnx TensorProto, byte %d: %s", e.Offset, e.Msg)
}

func onnxErr(off int, format string, a ...any) error {
	return &ONNXError{Offset: int64(off), Msg: fmt.Sprintf(format, a...)}
}

// span is the packed bytes of a repeated scalar field, or the encoding of
// one unpacked value (the same thing for one element).
type span struct {
	b   []byte
	off int
}

type typedField struct {
	name  string
	wire  pbwire.Type // the unpacked wire type
	spans []span
}

// DecodeONNX reads one TensorProto from b.
func DecodeONNX(b []byte) (*ONNXTensor, error) {
	d := &onnxDecoder{t: &ONNXTensor{}, typed: map[pbwire.Number]*typedField{
		tpFloatData:  {name: "float_data", wire: pbwire.Fixed32Type},
		tpInt32Data:  {name: "int32_data", wire: pbwire.VarintType},
		tpInt64Data:  {name: "int64_data", wire: pbwire.VarintType},
		tpDoubleData: {name: "double_data", wire: pbwire.Fixed64Type},
		tpUint64Data: {name: "uint64_data", wire: pbwire.VarintType},
	}}
	// Fields come in any order, so what needs several of them (the type,
	// the size, which field holds the data) is checked after the last.
	if err := d.readFields(b); err != nil {
		return nil, err
	}
	info, size, err := d.header()
	if err != nil {
		return nil, err
	}
	if err := d.data(info, size); err != nil {
		return nil, err
	}
	return d.t, nil
}

// onnxDecoder is what the fields of one TensorProto have said so far.
type onnxDecoder struct {
	t                 *ONNXTensor
	dims              []int
	haveType, haveRaw bool
	raw               []byte // raw_data: a slice of the input
	rawOff            int    // where raw_data's bytes start, for its error
	// The typed value fields by number: where their values are, counted
	// and converted only once data_type says which one must hold them.
	typed map[pbwire.Number]*typedField
}

// onnxField is one field whose tag has been read: at is the tag's offset,
// off the value's, rest the input from off on.
type onnxField struct {
	num     pbwire.Number
	typ     pbwire.Type
	at, off int
	rest    []byte
}

// wrong is the error for a wire type that TensorProto does not give the
// field: the usual sign of another message, most often a whole model.
func (f onnxField) wrong(want string) error {
	return onnxErr(f.at, "field %d has wire type %d, not %s: not a TensorProto (an ONNX model? save the tensor with onnx.numpy_helper.from_array)", f.num, f.typ, want)
}

// readFields reads the message field by field, each length checked
// against the input before it is used.
func (d *onnxDecoder) readFields(b []byte) error {
	for off := 0; off < len(b); {
		num, typ, n := pbwire.ConsumeTag(b[off:])
		if n < 0 {
			return onnxErr(off, "malformed field tag (%v); is this an ONNX TensorProto?", pbwire.ParseError(n))
		}
		f := onnxField{num: num, typ: typ, at: off, off: off + n, rest: b[off+n:]}
		m, err := d.field(f)
		if err != nil {
			return err
		}
		off = f.off + m
	}
	return nil
}

// field reads the value of one field and says how many bytes it took.
func (d *onnxDecoder) field(f onnxField) (int, error) {
	switch f.num {
	case tpDims:
		return d.readDims(f)
	case tpDataType:
		return d.readDataType(f)
	case tpRawData, tpName, tpSegment, tpStringData, tpExternalData:
		return d.readBytes(f)
	case tpFloatData, tpInt32Data, tpInt64Data, tpDoubleData, tpUint64Data:
		return d.readTyped(f)
	case tpDataLocation:
		return readDataLocation(f)
	}
	// doc_string, metadata_props and fields of newer versions.
	m := pbwire.ConsumeFieldValue(f.num, f.typ, f.rest)
	if m < 0 {
		return 0, onnxErr(f.at, "malformed field %d (%v); is this an ONNX TensorProto?", f.num, pbwire.ParseError(m))
	}
	return m, nil
}

// readDims reads dims, one value or packed (writers use either).
func (d *onnxDecoder) readDims(f onnxField) (int, error) {
	switch f.typ {
	case pbwire.VarintType:
		v, m := pbwire.ConsumeVarint(f.rest)
		if m < 0 {
			return 0, onnxErr(f.off, "malformed dims value")
		}
		if err := d.addDim(v, f.off); err != nil {
			return 0, err
		}
		return m, nil
	case pbwire.BytesType:
		v, m := pbwire.ConsumeBytes(f.rest)
		if m < 0 {
			return 0, onnxErr(f.off, "dims: length runs past the end of the file")
		}
		for p := 0; p < len(v); {
			x, k := pbwire.ConsumeVarint(v[p:])
			if k < 0 {
				return 0, onnxErr(f.off, "malformed packed dims")
			}
			if err := d.addDim(x, f.off); err != nil {
				return 0, err
			}
			p += k
		}
		return m, nil
	}
	return 0, f.wrong("varint")
}

// addDim checks one dimension (onnxDim) and appends it.
func (d *onnxDecoder) addDim(v uint64, off int) error {
	x, err := onnxDim(v, off, len(d.dims))
	if err != nil {
		return err
	}
	d.dims = append(d.dims, x)
	return nil
}

// readDataType reads data_type, which must appear once and fit an int32
// (an enum).
func (d *onnxDecoder) readDataType(f onnxField) (int, error) {
	if f.typ != pbwire.VarintType {
		return 0, f.wrong("varint")
	}
	if d.haveType {
		return 0, onnxErr(f.at, "data_type appears twice")
	}
	v, m := pbwire.ConsumeVarint(f.rest)
	if m < 0 {
		return 0, onnxErr(f.off, "malformed data_type")
	}
	if int64(v) < math.MinInt32 || int64(v) > math.MaxInt32 {
		return 0, onnxErr(f.off, "data_type %d is out of range", int64(v))
	}
	d.t.DataType, d.haveType = int32(v), true
	return m, nil
}

// readBytes reads the length-delimited fields: raw_data and name are kept,
// the others are refused, each with what the user can do instead.
func (d *onnxDecoder) readBytes(f onnxField) (int, error) {
	if f.typ != pbwire.BytesType {
		return 0, f.wrong("length-delimited")
	}
	v, m := pbwire.ConsumeBytes(f.rest)
	if m < 0 {
		return 0, onnxErr(f.at, "field %d: length runs past the end of the file", f.num)
	}
	switch f.num {
	case tpRawData:
		if d.haveRaw {
			return 0, onnxErr(f.at, "raw_data appears twice")
		}
		d.raw, d.haveRaw, d.rawOff = v, true, f.off+m-len(v)
	case tpName:
		if !utf8.Valid(v) {
			return 0, onnxErr(f.at, "name is not valid UTF-8")
		}
		d.t.Name = string(v)
	case tpSegment:
		return 0, onnxErr(f.at, "segmented tensors (TensorProto.segment) are not supported")
	case tpStringData:
		return 0, onnxErr(f.at, "string_data: STRING tensors have no fixed-size numpy dtype and are not supported")
	case tpExternalData:
		loc := externalLocation(v)
		return 0, onnxErr(f.at, "the data is stored outside this file (external_data, location %q), which is not supported: load it with onnx and save the tensor with onnx.numpy_helper.from_array", loc)
	}
	return m, nil
}

// readTyped notes where a typed field's values are, packed or one value
// unpacked; a field may repeat, so each occurrence is a span.
func (d *onnxDecoder) readTyped(f onnxField) (int, error) {
	tf := d.typed[f.num]
	switch f.typ {
	case pbwire.BytesType:
		v, m := pbwire.ConsumeBytes(f.rest)
		if m < 0 {
			return 0, onnxErr(f.at, "%s: length runs past the end of the file", tf.name)
		}
		tf.spans = append(tf.spans, span{v, f.off + m - len(v)})
		return m, nil
	case tf.wire:
		m := pbwire.ConsumeFieldValue(f.num, f.typ, f.rest)
		if m < 0 {
			return 0, onnxErr(f.off, "malformed %s value", tf.name)
		}
		tf.spans = append(tf.spans, span{f.rest[:m], f.off})
		return m, nil
	}
	return 0, f.wrong("the type of " + tf.name)
}

// readDataLocation accepts DEFAULT only: EXTERNAL data is in another file.
func readDataLocation(f onnxField) (int, error) {
	if f.typ != pbwire.VarintType {
		return 0, f.wrong("varint")
	}
	v, m := pbwire.ConsumeVarint(f.rest)
	if m < 0 {
		return 0, onnxErr(f.off, "malformed data_location")
	}
	if v != 0 {
		return 0, onnxErr(f.at, "data_location is EXTERNAL: the data is stored outside this file, which is not supported")
	}
	return m, nil
}

// header checks data_type and dims, once all are read, and sets the
// tensor's dtype and shape; size is its data's size in bytes.
func (d *onnxDecoder) header() (info onnxType, size int64, err error) {
	t := d.t
	if !d.haveType || t.DataType == 0 {
		return info, 0, onnxErr(-1, "data_type is missing (UNDEFINED); is this an ONNX TensorProto?")
	}
	info, known := onnxTypes()[t.DataType]
	if !known {
		return info, 0, onnxErr(-1, "data_type %d is not an ONNX type depthspace knows", t.DataType)
	}
	if info.numpy == "" {
		return info, 0, onnxErr(-1, "data_type %s has no fixed-size numpy dtype and is not supported", info.name)
	}
	t.DType = format.NumpyNames()[info.numpy]
	t.Shape = d.dims
	if t.Shape == nil {
		t.Shape = []int{}
	}
	size = t.DataBytes()
	if size < 0 || t.Elements() < 0 {
		return info, 0, onnxErr(-1, "dims [%s] of %s are too large", format.ShapeString(d.dims), info.name)
	}
	return info, size, nil
}

// valueField is the typed field that holds values of the type named, and
// how many values make one element.
func valueField(typeName string) (field pbwire.Number, per int) {
	field, per = pbwire.Number(0), 1
	switch typeName {
	case "FLOAT":
		field = tpFloatData
	case "COMPLEX64":
		field, per = tpFloatData, 2
	case "INT32", "INT16", "INT8", "UINT16", "UINT8", "BOOL", "FLOAT16", "BFLOAT16":
		field = tpInt32Data
	case "INT64":
		field = tpInt64Data
	case "DOUBLE":
		field = tpDoubleData
	case "COMPLEX128":
		field, per = tpDoubleData, 2
	case "UINT32", "UINT64":
		field = tpUint64Data
	}
	return field, per
}

// data sets the tensor's data from the one place allowed to hold it:
// raw_data, or the typed field of its type, and refuses values anywhere
// else.
func (d *onnxDecoder) data(info onnxType, size int64) error {
	field, per := valueField(info.name)
	for num, f := range d.typed {
		if num != field && len(f.spans) > 0 {
			return onnxErr(f.spans[0].off, "%s holds values but data_type is %s", f.name, info.name)
		}
	}
	f := d.typed[field]
	switch {
	case d.haveRaw && len(f.spans) > 0:
		return onnxErr(f.spans[0].off, "both raw_data and %s hold data", f.name)
	case d.haveRaw:
		if int64(len(d.raw)) != size {
			return onnxErr(d.rawOff, "raw_data has %d bytes but dims [%s] of %s describe %d", len(d.raw), format.ShapeString(d.dims), info.name, size)
		}
		d.t.Data = d.raw
		return nil
	}
	return d.typedData(f, info, per, size)
}

// typedData converts the values of typed field f into the tensor's data,
// once their count matches dims.
func (d *onnxDecoder) typedData(f *typedField, info onnxType, per int, size int64) error {
	t := d.t
	want := int64(t.Elements()) * int64(per)
	count, err := f.count()
	if err != nil {
		return err
	}
	if count != want {
		if count == 0 {
			return onnxErr(-1, "no data: neither raw_data nor %s, but dims [%s] describe %d elements", f.name, format.ShapeString(d.dims), t.Elements())
		}
		return onnxErr(f.spans[0].off, "%s has %d values but dims [%s] of %s need %d", f.name, count, format.ShapeString(d.dims), info.name, want)
	}
	// count values are in the file, so size is bounded by the input.
	t.Data = make([]byte, size)
	return f.decode(t.Data, info.name, t.DType.Size/per)
}

func onnxDim(v uint64, off, i int) (int, error) {
	d := int64(v)
	if d < 0 {
		return 0, onnxErr(off, "dimension %d is negative (%d)", i, d)
	}
	if i >= 1024 {
		return 0, onnxErr(off, "more than 1024 dimensions")
	}
	if d > math.MaxInt64/2 {
		return 0, onnxErr(off, "dimension %d is too large (%d)", i, d)
	}
	return int(d), nil
}

// externalLocation finds the "location" entry of external_data (a
// StringStringEntryProto: key 1, value 2), for the error message.
func externalLocation(b []byte) string {
	var key, value string
	for len(b) > 0 {
		num, typ, n := pbwire.ConsumeTag(b)
		if n < 0 {
			return "?"
		}
		b = b[n:]
		if typ != pbwire.BytesType {
			m := pbwire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return "?"
			}
			b = b[m:]
			continue
		}
		v, m := pbwire.ConsumeBytes(b)
		if m < 0 {
			return "?"
		}
		b = b[m:]
		switch num {
		case 1:
			key = string(v)
		case 2:
			value = string(v)
		}
	}
	if key == "location" {
		return value
	}
	return "?"
}

// count is the number of values in the field's spans.
func (f *typedField) count() (int64, error) {
	var n int64
	for _, s := range f.spans {
		switch f.wire {
		case pbwire.Fixed32Type:
			if len(s.b)%4 != 0 {
				return 0, onnxErr(s.off, "%s: %d bytes is not a whole number of 4-byte values", f.name, len(s.b))
			}
			n += int64(len(s.b) / 4)
		case pbwire.Fixed64Type:
			if len(s.b)%8 != 0 {
				return 0, onnxErr(s.off, "%s: %d bytes is not a whole number of 8-byte values", f.name, len(s.b))
			}
			n += int64(len(s.b) / 8)
		default:
			if len(s.b) > 0 && s.b[len(s.b)-1]&0x80 != 0 {
				return 0, onnxErr(s.off+len(s.b)-1, "%s: the last varint is cut off", f.name)
			}
			for _, c := range s.b {
				if c&0x80 == 0 {
					n++
				}
			}
		}
	}
	return n, nil
}

// decode writes the values as little-endian elements of size bytes each
// (a complex element is two values of size bytes).
func (f *typedField) decode(dst []byte, typeName string, size int) error {
	at := 0
	for _, s := range f.spans {
		switch f.wire {
		case pbwire.Fixed32Type, pbwire.Fixed64Type:
			// IEEE floats, already little-endian on the wire.
			at += copy(dst[at:], s.b)
			continue
		}
		for p := 0; p < len(s.b); {
			v, k := pbwire.ConsumeVarint(s.b[p:])
			if k < 0 {
				return onnxErr(s.off+p, "%s: malformed varint", f.name)
			}
			if err := putTyped(dst[at:at+size], v, typeName); err != nil {
				return onnxErr(s.off+p, "%s: %v", f.name, err)
			}
			at += size
			p += k
		}
	}
	return nil
}

// putTyped stores one varint value of a typed field as the element bytes
// of typeName, refusing values the type cannot hold.
func putTyped(dst []byte, v uint64, typeName string) error {
	s := int64(v) // int32 and int64 fields are two's complement, sign-extended
	lo, hi := int64(0), int64(0)
	switch typeName {
	case "INT8":
		lo, hi = math.MinInt8, math.MaxInt8
	case "UINT8":
		lo, hi = 0, math.MaxUint8
	case "BOOL":
		lo, hi = 0, 1
	case "INT16":
		lo, hi = math.MinInt16, math.MaxInt16
	case "UINT16":
		lo, hi = 0, math.MaxUint16
	case "FLOAT16", "BFLOAT16":
		// The bit pattern, written as uint16 by onnx.helper; a writer that
		// sign-extended an int16 view is accepted too.
		lo, hi = math.MinInt16, math.MaxUint16
	case "INT32":
		lo, hi = math.MinInt32, math.MaxInt32
	case "UINT32":
		if v > math.MaxUint32 {
			return fmt.Errorf("value %d does not fit UINT32", v)
		}
		binary.LittleEndian.PutUint32(dst, uint32(v))
		return nil
	case "INT64", "UINT64":
		binary.LittleEndian.PutUint64(dst, v)
		return nil
	default:
		return errors.New("internal error: no varint field for " + typeName)
	}
	if s < lo || s > hi {
		return fmt.Errorf("value %d does not fit %s", s, typeName)
	}
	switch len(dst) {
	case 1:
		dst[0] = byte(s)
	case 2:
		binary.LittleEndian.PutUint16(dst, uint16(s))
	case 4:
		binary.LittleEndian.PutUint32(dst, uint32(s))
	}
	return nil
}

// ONNXDataType is the TensorProto.DataType of d, or why d cannot be
// written as an ONNX tensor. ONNX raw_data is little-endian by the spec and
// depthspace never converts bytes, so big-endian data is refused.
func ONNXDataType(d format.DType) (int32, error) {
	if d.Order == '>' && d.Size > 1 {
		return 0, fmt.Errorf("big-endian %s data cannot be written as ONNX: raw_data is little-endian and depthspace never converts bytes; convert it first (numpy: x.astype(x.dtype.newbyteorder('<'))) or write npy", d.Name())
	}
	want := d.Name()
	for code, t := range onnxTypes() {
		if t.numpy != "" && t.numpy == want {
			return code, nil
		}
	}
	if d.Kind == 'V' && d.Size == 2 {
		return 0, fmt.Errorf("%s is opaque: if it holds bfloat16, say --dtype bfloat16", d.Name())
	}
	return 0, fmt.Errorf("%s has no ONNX tensor type (ONNX strings are not fixed-size bytes)", d.Name())
}

// ONNXPreamble is every byte of a TensorProto (C-order, little-endian
// data) before its data: dims, data_type, name, and the raw_data tag and
// length, which the data bytes then follow. Writing raw_data last lets an
// output be written, or streamed, like an npy file: preamble, then data.
func ONNXPreamble(h format.Header, name string) ([]byte, error) {
	code, err := ONNXDataType(h.DType)
	if err != nil {
		return nil, err
	}
	size := h.DataBytes()
	if size < 0 {
		return nil, errors.New("the tensor is too large")
	}
	var b []byte
	for _, d := range h.Shape {
		b = pbwire.AppendTag(b, tpDims, pbwire.VarintType)
		b = pbwire.AppendVarint(b, uint64(d))
	}
	b = pbwire.AppendTag(b, tpDataType, pbwire.VarintType)
	b = pbwire.AppendVarint(b, uint64(code))
	if name != "" {
		b = pbwire.AppendTag(b, tpName, pbwire.BytesType)
		b = pbwire.AppendString(b, name)
	}
	b = pbwire.AppendTag(b, tpRawData, pbwire.BytesType)
	b = pbwire.AppendVarint(b, uint64(size))
	return b, nil
}

// ONNXTypeName is the ONNX name of a TensorProto.DataType.
func ONNXTypeName(code int32) string {
	if t, ok := onnxTypes()[code]; ok {
		return t.name
	}
	return strconv.Itoa(int(code))
}

func init() {
	format.Register(format.Format{Kind: KindONNX, Rank: 4, Doc: "an ONNX TensorProto (.pb, as in test_data_set directories)", Aliases: []string{"pb"}, Exts: []string{".pb"},
		Decode: func(b []byte, want *format.DType) (format.Header, []byte, string, error) {
			t, err := DecodeONNX(b)
			if err != nil {
				return format.Header{}, nil, "", err
			}
			if want != nil {
				if t.DType, err = want.Reinterpret(t.DType); err != nil {
					return format.Header{}, nil, "", err
				}
			}
			return t.Header, t.Data, t.Name, nil
		},
		Preamble: ONNXPreamble,
		CanWrite: func(h format.Header) error {
			_, err := ONNXDataType(h.DType)
			return err
		}})
}
