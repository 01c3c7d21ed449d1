// Package pbwire reads and writes the protobuf wire format: the few
// functions of google.golang.org/protobuf/encoding/protowire that the ONNX
// TensorProto codec uses, with the same names, results and error codes.
//
// Why not protowire itself: importing it links google.golang.org/protobuf's
// internal packages, whose initializers (detrand hashes the executable to
// seed its deliberately unstable error texts) ran at the start of every
// command, ONNX or not (GODEBUG=inittrace=1: 0.44 ms of the start-up).
// protowire remains the oracle in the tests (pbwire_test.go).
package pbwire

import (
	"errors"
	"io"
)

// Number is a field number.
type Number int32

// MinValidNumber is the smallest field number.
const MinValidNumber Number = 1

// recursionLimit bounds nested groups, as protowire's DefaultRecursionLimit.
const recursionLimit = 10000

// Type is a wire type.
type Type int8

const (
	VarintType     Type = 0
	Fixed32Type    Type = 5
	Fixed64Type    Type = 1
	BytesType      Type = 2
	StartGroupType Type = 3
	EndGroupType   Type = 4
)

// Error codes: the negative lengths the Consume functions return.
const (
	_ = -iota
	errCodeTruncated
	errCodeFieldNumber
	errCodeOverflow
	errCodeReserved
	errCodeEndGroup
	errCodeRecursionDepth
)

var (
	errFieldNumber = errors.New("invalid field number")
	errOverflow    = errors.New("variable length integer overflow")
	errReserved    = errors.New("cannot parse reserved wire type")
	errEndGroup    = errors.New("mismatching end group marker")
	errParse       = errors.New("parse error")
)

// ParseError turns a negative length into an error; nil for n ≥ 0.
func ParseError(n int) error {
	switch {
	case n >= 0:
		return nil
	case n == errCodeTruncated:
		return io.ErrUnexpectedEOF
	case n == errCodeFieldNumber:
		return errFieldNumber
	case n == errCodeOverflow:
		return errOverflow
	case n == errCodeReserved:
		return errReserved
	case n == errCodeEndGroup:
		return errEndGroup
	}
	return errParse
}

// ConsumeVarint reads a varint of at most 10 bytes; the tenth may only
// hold the top bit.
func ConsumeVarint(b []byte) (v uint64, n int) {
	for i := 0; i < 10; i++ {
		if i >= len(b) {
			return 0, errCodeTruncated
		}
		c := b[i]
		if i == 9 && c >= 2 {
			return 0, errCodeOverflow
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v, i + 1
		}
	}
	return 0, errCodeOverflow
}

// ConsumeTag reads a field's tag: its number (≥ 1) and wire type.
func ConsumeTag(b []byte) (Number, Type, int) {
	v, n := ConsumeVarint(b)
	if n < 0 {
		return 0, 0, n
	}
	if v>>3 > 1<<31-1 || Number(v>>3) < MinValidNumber {
		return 0, 0, errCodeFieldNumber
	}
	num, typ := Number(v>>3), Type(v&7)
	return num, typ, n
}

// ConsumeBytes reads a length-prefixed value.
func ConsumeBytes(b []byte) (v []byte, n int) {
	m, n := ConsumeVarint(b)
	if n < 0 {
		return nil, n
	}
	if m > uint64(len(b)-n) {
		return nil, errCodeTruncated
	}
	return b[n : n+int(m)], n + int(m)
}

// ConsumeFieldValue skips the value of a field whose tag was read,
// returning its length (groups include their end marker).
func ConsumeFieldValue(num Number, typ Type, b []byte) int {
	return consumeFieldValue(num, typ, b, recursionLimit)
}

func consumeFieldValue(num Number, typ Type, b []byte, depth int) int {
	switch typ {
	case VarintType:
		_, n := ConsumeVarint(b)
		return n
	case Fixed32Type:
		if len(b) < 4 {
			return errCodeTruncated
		}
		return 4
	case Fixed64Type:
		if len(b) < 8 {
			return errCodeTruncated
		}
		return 8
	case BytesType:
		_, n := ConsumeBytes(b)
		return n
	case StartGroupType:
		if depth < 0 {
			return errCodeRecursionDepth
		}
		n0 := len(b)
		for {
			num2, typ2, n := ConsumeTag(b)
			if n < 0 {
				return n
			}
			b = b[n:]
			if typ2 == EndGroupType {
				if num != num2 {
					return errCodeEndGroup
				}
				return n0 - len(b)
			}
			n = consumeFieldValue(num2, typ2, b, depth-1)
			if n < 0 {
				return n
			}
			b = b[n:]
		}
	case EndGroupType:
		return errCodeEndGroup
	}
	return errCodeReserved
}

// AppendVarint appends v as a varint.
func AppendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

// AppendTag appends a field's tag.
func AppendTag(b []byte, num Number, typ Type) []byte {
	return AppendVarint(b, uint64(num)<<3|uint64(typ&7))
}

// AppendBytes appends a length-prefixed value.
func AppendBytes(b, v []byte) []byte {
	return append(AppendVarint(b, uint64(len(v))), v...)
}

// AppendString appends a length-prefixed string.
func AppendString(b []byte, v string) []byte {
	return append(AppendVarint(b, uint64(len(v))), v...)
}

// AppendFixed32 appends v little-endian.
func AppendFixed32(b []byte, v uint32) []byte {
	return append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
}
