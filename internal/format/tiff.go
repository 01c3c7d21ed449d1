package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The TIFF structure under a DNG file (dng.go): the header, the chain of
// IFDs and the SubIFDs below them. Everything is checked against the
// file's bytes before it is used: an offset or a count that runs past the
// end, an IFD that points back at one already read (a loop) and absurd
// numbers of IFDs or entries are errors, never reads out of bounds.

// TIFF tags the DNG reader uses.
const (
	tagNewSubFileType    = 254
	tagImageWidth        = 256
	tagImageLength       = 257
	tagBitsPerSample     = 258
	tagCompression       = 259
	tagPhotometric       = 262
	tagStripOffsets      = 273
	tagSamplesPerPixel   = 277
	tagRowsPerStrip      = 278
	tagStripByteCounts   = 279
	tagPlanarConfig      = 284
	tagTileWidth         = 322
	tagTileLength        = 323
	tagTileOffsets       = 324
	tagTileByteCounts    = 325
	tagSubIFDs           = 330
	tagSampleFormat      = 339
	tagCFARepeatDim      = 33421
	tagCFAPattern        = 33422
	tagDNGVersion        = 50706
	tagCFAPlaneColor     = 50710
	tagCFALayout         = 50711
	tagLinearization     = 50712
	tagBlackLevelRepeat  = 50713
	tagBlackLevel        = 50714
	tagWhiteLevel        = 50717
	tagDefaultCropOrigin = 50719
	tagDefaultCropSize   = 50720
	tagActiveArea        = 50829
)

// maxIFDs bounds the IFDs read from one file, and maxSubIFDDepth how deep
// SubIFDs nest: real files have a handful and one level.
const (
	maxIFDs        = 256
	maxSubIFDDepth = 4
)

// tiffTypeSize is the size of one value of each TIFF field type (0:
// unknown type, whose values are not read).
var tiffTypeSize = [...]int{1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8, 17: 8, 18: 8}

// tiffEntry is one IFD entry: its type, count and value bytes (in the
// file's byte order), checked to lie inside the file.
type tiffEntry struct {
	typ   uint16
	count uint32
	val   []byte // nil for an unknown type
}

// tiffIFD is one image file directory.
type tiffIFD struct {
	off     int64
	where   string // "IFD 0", "SubIFD 1 of IFD 0", for messages and info
	entries map[uint16]tiffEntry
}

// tiffFile is a parsed TIFF file: its byte order and every IFD, in the
// order a reader meets them (IFD 0, its SubIFDs, IFD 1, ...).
type tiffFile struct {
	b    []byte
	bo   binary.ByteOrder
	ifds []*tiffIFD
}

// tiffError is a malformed TIFF/DNG file.
func tiffError(format string, a ...any) error {
	return errors.New("dng: " + fmt.Sprintf(format, a...))
}

// sniffTIFFHeader reports the byte order of a classic TIFF header.
func sniffTIFFHeader(b []byte) (binary.ByteOrder, bool) {
	if len(b) < 8 {
		return nil, false
	}
	switch string(b[:4]) {
	case "II*\x00":
		return binary.LittleEndian, true
	case "MM\x00*":
		return binary.BigEndian, true
	}
	return nil, false
}

// parseTIFF reads the header and every IFD of a TIFF file (SubIFDs
// included, to maxSubIFDDepth).
func parseTIFF(b []byte) (*tiffFile, error) {
	bo, ok := sniffTIFFHeader(b)
	if !ok {
		if len(b) >= 4 && (string(b[:4]) == "II+\x00" || string(b[:4]) == "MM\x00+") {
			return nil, tiffError("a BigTIFF file, not a DNG (DNG files are classic TIFF)")
		}
		return nil, tiffError("not a TIFF file (no II*/MM* header)")
	}
	f := &tiffFile{b: b, bo: bo}
	seen := map[int64]bool{}
	off := int64(bo.Uint32(b[4:8]))
	if off == 0 {
		return nil, tiffError("the header points at no IFD")
	}
	for n := 0; off != 0; n++ {
		next, err := f.walk(off, fmt.Sprintf("IFD %d", n), 0, seen)
		if err != nil {
			return nil, err
		}
		off = next
	}
	return f, nil
}

// walk reads the IFD at off and, depth first, its SubIFDs (a SubIFD's own
// chain is not followed: DNG has none); it returns the next IFD's offset.
func (f *tiffFile) walk(off int64, name string, depth int, seen map[int64]bool) (int64, error) {
	if seen[off] {
		return 0, tiffError("%s at offset %d is an IFD already read (a loop)", name, off)
	}
	seen[off] = true
	if len(f.ifds) >= maxIFDs {
		return 0, tiffError("more than %d IFDs", maxIFDs)
	}
	ifd, next, err := f.readIFD(off, name)
	if err != nil {
		return 0, err
	}
	f.ifds = append(f.ifds, ifd)
	if e, ok := ifd.entries[tagSubIFDs]; ok && depth < maxSubIFDDepth {
		subs, err := f.uints(e)
		if err != nil {
			return 0, tiffError("%s: SubIFDs: %v", name, err)
		}
		for i, s := range subs {
			if s == 0 {
				continue
			}
			if _, err := f.walk(int64(s), fmt.Sprintf("SubIFD %d of %s", i, name), depth+1, seen); err != nil {
				return 0, err
			}
		}
	}
	return next, nil
}

// readIFD reads the IFD at off: its entries and the next IFD's offset.
func (f *tiffFile) readIFD(off int64, name string) (*tiffIFD, int64, error) {
	b := f.b
	if off < 8 || off > int64(len(b))-2 {
		return nil, 0, tiffError("%s offset %d is outside the file (%d bytes)", name, off, len(b))
	}
	n := int64(f.bo.Uint16(b[off:]))
	end := off + 2 + 12*n
	if end+4 > int64(len(b)) {
		return nil, 0, tiffError("%s at offset %d claims %d entries, past the end of the file (%d bytes)", name, off, n, len(b))
	}
	ifd := &tiffIFD{off: off, where: name, entries: make(map[uint16]tiffEntry, n)}
	for i := int64(0); i < n; i++ {
		p := b[off+2+12*i:]
		tag, typ, count := f.bo.Uint16(p), f.bo.Uint16(p[2:]), f.bo.Uint32(p[4:])
		e := tiffEntry{typ: typ, count: count}
		if int(typ) < len(tiffTypeSize) && tiffTypeSize[typ] != 0 {
			size := uint64(count) * uint64(tiffTypeSize[typ])
			if size <= 4 {
				e.val = p[8 : 8+size]
			} else {
				vo := uint64(f.bo.Uint32(p[8:]))
				if vo+size > uint64(len(b)) {
					return nil, 0, tiffError("%s: tag %d has %d values at offset %d, past the end of the file (%d bytes)", name, tag, count, vo, len(b))
				}
				e.val = b[vo : vo+size]
			}
		}
		ifd.entries[tag] = e
	}
	return ifd, int64(f.bo.Uint32(b[end:])), nil
}

// uints reads an entry's values as unsigned integers (BYTE, SHORT, LONG,
// IFD, LONG8 and their signed forms, which must not be negative).
func (f *tiffFile) uints(e tiffEntry) ([]uint64, error) {
	size := 0
	if int(e.typ) < len(tiffTypeSize) {
		size = tiffTypeSize[e.typ]
	}
	switch e.typ {
	case 1, 3, 4, 6, 7, 8, 9, 13, 16, 17:
	default:
		return nil, fmt.Errorf("type %d is not an integer type", e.typ)
	}
	out := make([]uint64, e.count)
	for i := range out {
		p := e.val[i*size:]
		var v uint64
		neg := false
		switch e.typ {
		case 1, 7:
			v = uint64(p[0])
		case 6:
			v, neg = uint64(int8(p[0])), int8(p[0]) < 0
		case 3:
			v = uint64(f.bo.Uint16(p))
		case 8:
			v, neg = uint64(int16(f.bo.Uint16(p))), int16(f.bo.Uint16(p)) < 0
		case 4, 13:
			v = uint64(f.bo.Uint32(p))
		case 9:
			v, neg = uint64(int32(f.bo.Uint32(p))), int32(f.bo.Uint32(p)) < 0
		case 16:
			v = f.bo.Uint64(p)
		case 17:
			v, neg = f.bo.Uint64(p), int64(f.bo.Uint64(p)) < 0
		}
		if neg {
			return nil, fmt.Errorf("value %d is negative", int64(v))
		}
		out[i] = v
	}
	return out, nil
}

// numbers reads an entry's values as text: integers as they are,
// rationals as their decimal value (shortest form).
func (f *tiffFile) numbers(e tiffEntry) ([]string, error) {
	switch e.typ {
	case 5, 10:
		out := make([]string, e.count)
		for i := range out {
			p := e.val[8*i:]
			n, d := float64(f.bo.Uint32(p)), float64(f.bo.Uint32(p[4:]))
			if e.typ == 10 {
				n, d = float64(int32(f.bo.Uint32(p))), float64(int32(f.bo.Uint32(p[4:])))
			}
			if d == 0 {
				out[i] = "NaN"
				continue
			}
			out[i] = strconv.FormatFloat(n/d, 'g', -1, 64)
		}
		return out, nil
	case 11, 12:
		out := make([]string, e.count)
		for i := range out {
			v := float64(math.Float32frombits(f.bo.Uint32(e.val[4*i:])))
			if e.typ == 12 {
				v = math.Float64frombits(f.bo.Uint64(e.val[8*i:]))
			}
			out[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		return out, nil
	case 6, 8, 9, 17:
		size := tiffTypeSize[e.typ]
		out := make([]string, e.count)
		for i := range out {
			p := e.val[i*size:]
			var v int64
			switch e.typ {
			case 6:
				v = int64(int8(p[0]))
			case 8:
				v = int64(int16(f.bo.Uint16(p)))
			case 9:
				v = int64(int32(f.bo.Uint32(p)))
			case 17:
				v = int64(f.bo.Uint64(p))
			}
			out[i] = strconv.FormatInt(v, 10)
		}
		return out, nil
	}
	us, err := f.uints(e)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(us))
	for i, v := range us {
		out[i] = strconv.FormatUint(v, 10)
	}
	return out, nil
}

// has reports whether the IFD has a tag.
func (d *tiffIFD) has(tag uint16) bool { _, ok := d.entries[tag]; return ok }

// uint reads a tag of one integer value, or def when absent.
func (f *tiffFile) uint(d *tiffIFD, tag uint16, name string, def uint64) (uint64, error) {
	e, ok := d.entries[tag]
	if !ok {
		return def, nil
	}
	vs, err := f.uints(e)
	if err != nil {
		return 0, tiffError("%s: %s: %v", d.where, name, err)
	}
	if len(vs) == 0 {
		return 0, tiffError("%s: %s has no value", d.where, name)
	}
	return vs[0], nil
}

// list reads a tag of integer values (nil when absent).
func (f *tiffFile) list(d *tiffIFD, tag uint16, name string) ([]uint64, error) {
	e, ok := d.entries[tag]
	if !ok {
		return nil, nil
	}
	vs, err := f.uints(e)
	if err != nil {
		return nil, tiffError("%s: %s: %v", d.where, name, err)
	}
	return vs, nil
}

// text is a tag's values joined by commas, or "" when absent.
func (f *tiffFile) text(d *tiffIFD, tag uint16) string {
	e, ok := d.entries[tag]
	if !ok || e.val == nil {
		return ""
	}
	vs, err := f.numbers(e)
	if err != nil {
		return ""
	}
	return strings.Join(vs, ",")
}
