package format

import "encoding/binary"

// PutUint writes v as an element word of 1, 2, 4 or 8 bytes in the given
// byte order (big-endian when big).
func PutUint(b []byte, v uint64, big bool) {
	switch len(b) {
	case 1:
		b[0] = byte(v)
	case 2:
		if big {
			binary.BigEndian.PutUint16(b, uint16(v))
		} else {
			binary.LittleEndian.PutUint16(b, uint16(v))
		}
	case 4:
		if big {
			binary.BigEndian.PutUint32(b, uint32(v))
		} else {
			binary.LittleEndian.PutUint32(b, uint32(v))
		}
	case 8:
		if big {
			binary.BigEndian.PutUint64(b, v)
		} else {
			binary.LittleEndian.PutUint64(b, v)
		}
	}
}

// Uint reads an element word of 1, 2, 4 or 8 bytes in the given byte
// order (big-endian when big); any other length gives 0. Every package that
// interprets element bytes (JSON text, compare) reads them through here.
func Uint(b []byte, big bool) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		if big {
			return uint64(binary.BigEndian.Uint16(b))
		}
		return uint64(binary.LittleEndian.Uint16(b))
	case 4:
		if big {
			return uint64(binary.BigEndian.Uint32(b))
		}
		return uint64(binary.LittleEndian.Uint32(b))
	case 8:
		if big {
			return binary.BigEndian.Uint64(b)
		}
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
