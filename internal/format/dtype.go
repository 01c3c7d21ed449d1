package format

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// DType describes one element: its numpy kind, its size in bytes and its
// byte order. depthspace never converts values, so the dtype matters for
// three things only: the element size the kernel moves, the npy descr that is
// written back unchanged, and the text form of a value in JSON.
type DType struct {
	Kind  byte // 'b' bool, 'i' int, 'u' uint, 'f' float, 'c' complex, 'S' bytes, 'U' UCS-4 text, 'V' opaque
	Size  int  // bytes per element
	Order byte // '<' little, '>' big, '|' not applicable
	// BFloat16 marks a V2 element read as bfloat16 in JSON. In npy it is
	// stored as ml_dtypes stores it: an opaque "<V2".
	BFloat16 bool
	// Tag names an opaque type that safetensors knows by name (F8_E4M3,
	// F8_E5M2, F8_E8M0): moved as bytes (npy |V1), written back under
	// its name (the safetensors package).
	Tag string
	// descr is the npy descr exactly as read from a file, kept so that an
	// output "keeps the input's descr" byte for byte (SPEC, Formats).
	descr string
}

// Descr is the numpy descr string written into an npy header.
func (d DType) Descr() string {
	if d.descr != "" {
		return d.descr
	}
	switch d.Kind {
	case 'S', 'V':
		if d.BFloat16 {
			return "<V2"
		}
		return "|" + string(d.Kind) + strconv.Itoa(d.Size)
	case 'U':
		return string(d.Order) + "U" + strconv.Itoa(d.Size/4)
	}
	return string(d.Order) + string(d.Kind) + strconv.Itoa(d.Size)
}

// Name is the numpy name of the dtype (float32, uint8, S8, bfloat16, …),
// prefixed by '>' for big-endian data so that a JSON round trip keeps it.
func (d DType) Name() string {
	var n string
	switch d.Kind {
	case 'b':
		n = "bool"
	case 'i':
		n = "int" + strconv.Itoa(8*d.Size)
	case 'u':
		n = "uint" + strconv.Itoa(8*d.Size)
	case 'f':
		n = "float" + strconv.Itoa(8*d.Size)
	case 'c':
		n = "complex" + strconv.Itoa(8*d.Size)
	case 'S':
		return "S" + strconv.Itoa(d.Size)
	case 'U':
		n = "U" + strconv.Itoa(d.Size/4)
	case 'V':
		if d.BFloat16 {
			return "bfloat16"
		}
		return "V" + strconv.Itoa(d.Size)
	}
	if d.Order == '>' {
		return ">" + d.shortCode()
	}
	return n
}

func (d DType) shortCode() string {
	if d.Kind == 'U' {
		return "U" + strconv.Itoa(d.Size/4)
	}
	return string(d.Kind) + strconv.Itoa(d.Size)
}

func (d DType) String() string { return d.Name() }

// SameLayout reports whether two dtypes describe the same bytes (kind, size
// and byte order), ignoring how the descr was spelled.
func (d DType) SameLayout(o DType) bool {
	return d.Kind == o.Kind && d.Size == o.Size && d.Order == o.Order && d.BFloat16 == o.BFloat16
}

// maxTextLen bounds S<n>, U<n> and V<n> so that a hostile descr cannot ask for
// an absurd element size; numpy itself refuses sizes past 2^31.
const MaxElemSize = 1 << 30

// NumpyNames and the other tables of names (here, onnx.go,
// safetensors.go, dng.go) are built on first use: a package-level map is
// built when the program starts, by every run, whether it reads one or
// not.
var NumpyNames = sync.OnceValue(func() map[string]DType {
	return map[string]DType{
		"bool":       {Kind: 'b', Size: 1, Order: '|'},
		"int8":       {Kind: 'i', Size: 1, Order: '|'},
		"uint8":      {Kind: 'u', Size: 1, Order: '|'},
		"int16":      {Kind: 'i', Size: 2, Order: '<'},
		"uint16":     {Kind: 'u', Size: 2, Order: '<'},
		"int32":      {Kind: 'i', Size: 4, Order: '<'},
		"uint32":     {Kind: 'u', Size: 4, Order: '<'},
		"int64":      {Kind: 'i', Size: 8, Order: '<'},
		"uint64":     {Kind: 'u', Size: 8, Order: '<'},
		"float16":    {Kind: 'f', Size: 2, Order: '<'},
		"float32":    {Kind: 'f', Size: 4, Order: '<'},
		"float64":    {Kind: 'f', Size: 8, Order: '<'},
		"complex64":  {Kind: 'c', Size: 8, Order: '<'},
		"complex128": {Kind: 'c', Size: 16, Order: '<'},
		"bfloat16":   {Kind: 'V', Size: 2, Order: '|', BFloat16: true},
		// numpy's other spellings of the same types
		"bool_":  {Kind: 'b', Size: 1, Order: '|'},
		"byte":   {Kind: 'i', Size: 1, Order: '|'},
		"ubyte":  {Kind: 'u', Size: 1, Order: '|'},
		"short":  {Kind: 'i', Size: 2, Order: '<'},
		"ushort": {Kind: 'u', Size: 2, Order: '<'},
		"intc":   {Kind: 'i', Size: 4, Order: '<'},
		"uintc":  {Kind: 'u', Size: 4, Order: '<'},
		"int":    {Kind: 'i', Size: 8, Order: '<'},
		"int_":   {Kind: 'i', Size: 8, Order: '<'},
		"uint":   {Kind: 'u', Size: 8, Order: '<'},
		"half":   {Kind: 'f', Size: 2, Order: '<'},
		"single": {Kind: 'f', Size: 4, Order: '<'},
		"double": {Kind: 'f', Size: 8, Order: '<'},
		"cfloat": {Kind: 'c', Size: 16, Order: '<'},
	}
})

// numpy's one-letter type codes (case matters: 'b' is int8, 'B' uint8).
var numpyChars = sync.OnceValue(func() map[byte]DType {
	return map[byte]DType{
		'?': {Kind: 'b', Size: 1}, 'b': {Kind: 'i', Size: 1}, 'B': {Kind: 'u', Size: 1},
		'h': {Kind: 'i', Size: 2}, 'H': {Kind: 'u', Size: 2},
		'i': {Kind: 'i', Size: 4}, 'I': {Kind: 'u', Size: 4},
		'l': {Kind: 'i', Size: 8}, 'L': {Kind: 'u', Size: 8},
		'q': {Kind: 'i', Size: 8}, 'Q': {Kind: 'u', Size: 8},
		'e': {Kind: 'f', Size: 2}, 'f': {Kind: 'f', Size: 4}, 'd': {Kind: 'f', Size: 8},
		'F': {Kind: 'c', Size: 8}, 'D': {Kind: 'c', Size: 16},
	}
})

// ONNX TensorProto.DataType and DirectML DML_TENSOR_DATA_TYPE names, matched
// case-insensitively. STRING and the 4-bit/8-bit float types have no
// fixed-size numpy equivalent and are refused by name.
var frameworkNames = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"FLOAT": "float32", "FLOAT32": "float32", "DOUBLE": "float64", "FLOAT64": "float64",
		"FLOAT16": "float16", "BFLOAT16": "bfloat16", "BOOL": "bool", "BOOLEAN": "bool",
		"INT8": "int8", "INT16": "int16", "INT32": "int32", "INT64": "int64",
		"UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "UINT64": "uint64",
		"COMPLEX64": "complex64", "COMPLEX128": "complex128",
	}
})

// ParseDType reads a dtype name as a user types it: numpy's names and codes
// (float32, f4, <f4, >i2, uint8, bool, complex64, S8, U3, V2), bfloat16, and,
// case-insensitively, ONNX's (FLOAT, DOUBLE, FLOAT16, INT64, …) and
// DirectML's (DML_TENSOR_DATA_TYPE_UINT32 or the bare UINT32).
func ParseDType(name string) (DType, error) {
	if d, ok := NumpyNames()[name]; ok {
		return d, nil
	}
	d, codeErr := parseCode(name)
	if codeErr == nil {
		return d, nil
	}
	if _, unknown := codeErr.(unknownCode); !unknown {
		return DType{}, codeErr // a code with a specific fault: say which
	}
	up := strings.ToUpper(name)
	if name == "float" || (up == "FLOAT" && name != "FLOAT") {
		return DType{}, fmt.Errorf("dtype %q is ambiguous: numpy reads it as float64, ONNX as float32; say float32 or float64", name)
	}
	up = strings.TrimPrefix(up, "DML_TENSOR_DATA_TYPE_")
	up = strings.TrimPrefix(up, "TENSORPROTO.")
	if n, ok := frameworkNames()[up]; ok {
		return NumpyNames()[n], nil
	}
	if d, ok := NumpyNames()[strings.ToLower(name)]; ok {
		return d, nil
	}
	switch strings.ToLower(name) {
	case "o", "object", "|o", "<o", ">o":
		return DType{}, fmt.Errorf("dtype %q: object arrays (pickles) are not supported", name)
	case "string", "str":
		return DType{}, fmt.Errorf("dtype %q has no fixed size; use S<n> (bytes) or U<n> (text)", name)
	}
	return DType{}, fmt.Errorf("unknown dtype %q (try float32, uint8, f4, <i2, bfloat16, FLOAT16, S8)", name)
}

// ParseDescr reads the descr of an npy header strictly: an optional byte
// order, a kind and a size, as numpy writes them.
func ParseDescr(descr string) (DType, error) {
	d, err := parseCode(descr)
	if err != nil {
		return DType{}, err
	}
	d.descr = descr
	return d, nil
}

// parseCode reads "<f4", "|u1", "f4", "?", "S8", "<U3", "|V2", ">c16".
func parseCode(s string) (DType, error) {
	if s == "" {
		return DType{}, unknownCode(s)
	}
	order := byte(0)
	switch s[0] {
	case '<', '>', '|', '=':
		order = s[0]
		s = s[1:]
	}
	if order == '=' {
		order = '<' // every platform we build for is little-endian
	}
	if s == "" {
		return DType{}, fmt.Errorf("dtype has a byte order but no type")
	}
	var d DType
	if len(s) == 1 {
		c, ok := numpyChars()[s[0]]
		if !ok {
			return DType{}, badCode(s)
		}
		d = c
	} else {
		kind := s[0]
		if kind == 'a' {
			kind = 'S'
		}
		n, err := strconv.Atoi(s[1:])
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return DType{}, fmt.Errorf("dtype %q: element size is too large", s)
		}
		if err != nil || n <= 0 || s[1] == '+' || s[1] == '0' {
			return DType{}, badCode(s)
		}
		switch kind {
		case 'b':
			if n != 1 {
				return DType{}, badCode(s)
			}
		case 'i', 'u':
			if n != 1 && n != 2 && n != 4 && n != 8 {
				return DType{}, badCode(s)
			}
		case 'f':
			if n != 2 && n != 4 && n != 8 {
				return DType{}, badCode(s)
			}
		case 'c':
			if n != 8 && n != 16 {
				return DType{}, badCode(s)
			}
		case 'S', 'V':
		case 'U':
			if n > MaxElemSize/4 {
				return DType{}, fmt.Errorf("dtype %q: element size is too large", s)
			}
			n *= 4
		case 'O':
			return DType{}, fmt.Errorf("dtype %q: object arrays (pickles) are refused, never unpickled", s)
		default:
			return DType{}, badCode(s)
		}
		if n > MaxElemSize {
			return DType{}, fmt.Errorf("dtype %q: element size is too large", s)
		}
		d = DType{Kind: kind, Size: n}
	}
	switch {
	case d.Kind == 'S' || d.Kind == 'V' || d.Size == 1:
		d.Order = '|'
	case order == '>' || order == '<':
		d.Order = order
	case order == '|':
		return DType{}, fmt.Errorf("dtype %q: a multi-byte type needs a byte order '<' or '>', not '|'", s)
	default:
		d.Order = '<'
	}
	return d, nil
}

func badCode(s string) error {
	if s == "O" || strings.HasPrefix(s, "O") {
		return fmt.Errorf("dtype %q: object arrays (pickles) are refused, never unpickled", s)
	}
	return unknownCode(s)
}

// unknownCode is a name that is not a numpy type code at all.
type unknownCode string

func (u unknownCode) Error() string { return fmt.Sprintf("unknown dtype %q", string(u)) }

// WithOrder returns d with its byte order set, as '--dtype >i4' asks.
func (d DType) WithOrder(order byte) DType {
	if d.Size > 1 && d.Kind != 'S' && d.Kind != 'V' {
		d.Order = order
	}
	d.descr = ""
	return d
}

// Reinterpret gives the bytes of a file whose dtype is file a new meaning d
// (only an opaque V<n> can be read as another type of the same size, e.g.
// "<V2" as bfloat16). The file's descr is kept for npy output.
func (d DType) Reinterpret(file DType) (DType, error) {
	if d.SameLayout(file) {
		return file, nil
	}
	if file.Kind == 'V' && d.Size == file.Size {
		d.descr = file.Descr()
		return d, nil
	}
	return DType{}, fmt.Errorf("--dtype %s does not match the file's dtype %s", d.Name(), file.Name())
}
