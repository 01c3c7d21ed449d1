package dng

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
	size    int64  // the entry count, the entries and the next IFD's offset
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
		if e.count > maxIFDs {
			return 0, tiffError("%s: SubIFDs has %s values: more than %d IFDs", name, thousands(uint64(e.count)), maxIFDs)
		}
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
	ifd := &tiffIFD{off: off, size: end + 4 - off, where: name, entries: make(map[uint16]tiffEntry, n)}
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
					return nil, 0, tiffError("%s: tag %d has %s values at offset %d, past the end of the file (%d bytes)", name, tag, thousands(uint64(count)), vo, len(b))
				}
				e.val = b[vo : vo+size]
			}
		}
		ifd.entries[tag] = e
	}
	return ifd, int64(f.bo.Uint32(b[end:])), nil
}

// isIntType says whether a TIFF field type holds integers (BYTE, SHORT,
// LONG, IFD, LONG8 and their signed forms).
func isIntType(typ uint16) bool {
	switch typ {
	case 1, 3, 4, 6, 7, 8, 9, 13, 16, 17:
		return true
	}
	return false
}

// at reads value i of an integer entry (i < e.count, e.val checked to
// hold them when the IFD was read), which must not be negative.
func (f *tiffFile) at(e tiffEntry, i int) (uint64, error) {
	if !isIntType(e.typ) {
		return 0, fmt.Errorf("type %d is not an integer type", e.typ)
	}
	p := e.val[i*tiffTypeSize[e.typ]:]
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
		return 0, fmt.Errorf("value %d is negative", int64(v))
	}
	return v, nil
}

// uints reads an entry's values as unsigned integers. The caller bounds
// the count first (list's max): a tag's values lie in the file, but as
// []uint64 a BYTE tag takes eight times the bytes it has there.
func (f *tiffFile) uints(e tiffEntry) ([]uint64, error) {
	if !isIntType(e.typ) {
		return nil, fmt.Errorf("type %d is not an integer type", e.typ)
	}
	out := make([]uint64, e.count)
	for i := range out {
		v, err := f.at(e, i)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// shownValues is how many values info shows of a long tag: the first
// few, then how many there are (a 20 MB BlackLevel tag is not a 40 MB
// line).
const shownValues = 3

// numbers reads up to max of an entry's values as text: integers as they
// are, rationals as their decimal value (shortest form).
func (f *tiffFile) numbers(e tiffEntry, max int) ([]string, error) {
	n := min(int(e.count), max)
	out := make([]string, n)
	for i := range out {
		switch e.typ {
		case 5, 10:
			p := e.val[8*i:]
			num, den := float64(f.bo.Uint32(p)), float64(f.bo.Uint32(p[4:]))
			if e.typ == 10 {
				num, den = float64(int32(f.bo.Uint32(p))), float64(int32(f.bo.Uint32(p[4:])))
			}
			if den == 0 {
				out[i] = "NaN"
				continue
			}
			out[i] = strconv.FormatFloat(num/den, 'g', -1, 64)
		case 11:
			out[i] = strconv.FormatFloat(float64(math.Float32frombits(f.bo.Uint32(e.val[4*i:]))), 'g', -1, 64)
		case 12:
			out[i] = strconv.FormatFloat(math.Float64frombits(f.bo.Uint64(e.val[8*i:])), 'g', -1, 64)
		case 6, 8, 9, 17:
			p := e.val[i*tiffTypeSize[e.typ]:]
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
		default:
			v, err := f.at(e, i)
			if err != nil {
				return nil, err
			}
			out[i] = strconv.FormatUint(v, 10)
		}
	}
	return out, nil
}

// float reads value i of a numeric entry (integer or rational) as a
// float64; ok is false for other types and a rational over 0.
func (f *tiffFile) float(e tiffEntry, i int) (float64, bool) {
	switch e.typ {
	case 5:
		p := e.val[8*i:]
		num, den := f.bo.Uint32(p), f.bo.Uint32(p[4:])
		return float64(num) / float64(den), den != 0
	case 10:
		p := e.val[8*i:]
		num, den := int32(f.bo.Uint32(p)), int32(f.bo.Uint32(p[4:]))
		return float64(num) / float64(den), den != 0
	}
	v, err := f.at(e, i)
	return float64(v), err == nil
}

// has reports whether the IFD has a tag.
func (d *tiffIFD) has(tag uint16) bool { _, ok := d.entries[tag]; return ok }

// uint reads a tag of one integer value, or def when absent.
func (f *tiffFile) uint(d *tiffIFD, tag uint16, name string, def uint64) (uint64, error) {
	e, ok := d.entries[tag]
	if !ok {
		return def, nil
	}
	if e.count == 0 {
		return 0, tiffError("%s: %s has no value", d.where, name)
	}
	v, err := f.at(e, 0)
	if err != nil {
		return 0, tiffError("%s: %s: %v", d.where, name, err)
	}
	return v, nil
}

// list reads a tag of at most max integer values (nil when absent); more
// is an error, said before anything is allocated for them.
func (f *tiffFile) list(d *tiffIFD, tag uint16, name string, max int) ([]uint64, error) {
	e, ok := d.entries[tag]
	if !ok {
		return nil, nil
	}
	if uint64(e.count) > uint64(max) {
		return nil, tiffError("%s: %s has %s values (at most %d make sense)", d.where, name, thousands(uint64(e.count)), max)
	}
	vs, err := f.uints(e)
	if err != nil {
		return nil, tiffError("%s: %s: %v", d.where, name, err)
	}
	return vs, nil
}

// text is a tag's values joined by commas, or "" when absent. Of a tag
// with more than a few values it shows the first ones and the count:
// "0, 0, 0, … (20,000,000 values)".
func (f *tiffFile) text(d *tiffIFD, tag uint16) string {
	e, ok := d.entries[tag]
	if !ok || e.val == nil {
		return ""
	}
	long := e.count > 2*shownValues
	vs, err := f.numbers(e, map[bool]int{true: shownValues, false: int(e.count)}[long])
	if err != nil {
		return ""
	}
	if long {
		return strings.Join(vs, ", ") + ", … (" + thousands(uint64(e.count)) + " values)"
	}
	return strings.Join(vs, ",")
}

// thousands writes n with commas between groups of three digits.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
