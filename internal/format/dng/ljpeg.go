package dng

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Lossless JPEG (ITU-T T.81, process 14: SOF3, Huffman coding, predictors
// 1 to 7), as DNG compression 7 stores strips and tiles. What a DNG reader
// does where T.81 leaves room or DNG files differ from it follows Adobe's
// DNG SDK, as dcraw and LibRaw do: the decoded samples are not shifted
// left by the point transform (Pt only lowers the first predictor to
// 2^(P-Pt-1)); sums wrap modulo 2^16; a difference category of 16 is
// -32768 (as 32768 modulo 2^16). A restart interval must be a whole number
// of rows, and the row after a restart is predicted as a first row.
//
// The decoder is strict where a broken file would otherwise be decoded
// as garbage: a code not in its Huffman table, entropy data that end
// before the last sample, a missing or misnumbered restart marker are
// errors. Memory is two rows.

// ljpegFrame is a parsed lossless JPEG: the frame, the scan's tables and
// where its entropy-coded data start.
type ljpegFrame struct {
	prec     int // P, bits a sample
	w, h, nc int // samples a line, lines, components
	pred     int // predictor selection value, 1..7
	pt       int // point transform
	restart  int // restart interval in MCUs (0: none)
	tables   [4]*huffTable
	data     []byte // from the first entropy-coded byte to the end
}

// huffTable is a DC Huffman table prepared for decoding.
type huffTable struct {
	// fast[code] for the next lutBits bits: the difference and the bits
	// it takes (code and extra bits), when they fit in lutBits
	// (n = v & 0xff, diff = v >> 8), else 0.
	fast [1 << lutBits]int32
	// sym[code]: the symbol and its code length (len<<8 | sym) for codes
	// of lutBits bits or fewer, else 0.
	sym [1 << lutBits]uint16
	// For longer codes (T.81 F.16): maxcode, valptr and mincode by length.
	maxcode [18]int32
	valptr  [17]int32
	mincode [17]int32
	vals    []byte
}

const lutBits = 11

// buildHuff prepares a table from a DHT's 16 counts and its values.
func buildHuff(counts []byte, vals []byte) (*huffTable, error) {
	t := &huffTable{vals: vals}
	code, k := int32(0), 0
	for l := 1; l <= 16; l++ {
		n := int(counts[l-1])
		t.valptr[l] = int32(k)
		t.mincode[l] = code
		if n == 0 {
			t.maxcode[l] = -1
		} else {
			t.maxcode[l] = code + int32(n) - 1
		}
		for i := 0; i < n; i++ {
			// Every code of this length must fit in l bits (the all-ones
			// code included: T.81 reserves it, but decoders accept it),
			// checked before the code indexes the tables below.
			if code >= 1<<l {
				return nil, errors.New("the Huffman table has more codes than the lengths allow")
			}
			s := vals[k]
			if s > 16 {
				return nil, fmt.Errorf("the Huffman table: symbol %d is not a lossless difference category (0 to 16)", s)
			}
			if l <= lutBits {
				lo := code << (lutBits - l)
				for j := int32(0); j < 1<<(lutBits-l); j++ {
					t.sym[lo+j] = uint16(l)<<8 | uint16(s)
				}
				if s == 16 || l+int(s) <= lutBits {
					extra := int(s)
					if s == 16 {
						extra = 0
					}
					for x := 0; x < 1<<extra; x++ {
						diff := int32(extendDiff(x, int(s)))
						lo := (code<<extra | int32(x)) << (lutBits - l - extra)
						for j := int32(0); j < 1<<(lutBits-l-extra); j++ {
							t.fast[lo+j] = diff<<8 | int32(l+extra)
						}
					}
				}
			}
			code++
			k++
		}
		code <<= 1
	}
	t.maxcode[17] = 1 << 30
	return t, nil
}

// extendDiff is T.81's EXTEND of x, s bits read, for a category s; 16 is
// -32768.
func extendDiff(x, s int) int {
	switch {
	case s == 0:
		return 0
	case s == 16:
		return -32768
	case x < 1<<(s-1):
		return x - (1 << s) + 1
	}
	return x
}

// parseLJPEG reads the markers of a lossless JPEG up to its scan.
func parseLJPEG(b []byte) (*ljpegFrame, error) {
	if len(b) < 2 || b[0] != 0xff || b[1] != 0xd8 {
		return nil, errors.New("lossless JPEG: no SOI marker at the start")
	}
	fr := &ljpegFrame{}
	var dht [4]*huffTable
	var compIDs [4]int
	gotFrame := false
	p := 2
	for markers := 0; ; markers++ {
		if markers > 1024 {
			return nil, errors.New("lossless JPEG: more than 1024 markers before the scan")
		}
		// Fill bytes (0xff) may precede a marker.
		for p+1 < len(b) && b[p] == 0xff && b[p+1] == 0xff {
			p++
		}
		if p+4 > len(b) {
			return nil, errors.New("lossless JPEG: truncated before the scan (no SOS marker)")
		}
		if b[p] != 0xff {
			return nil, fmt.Errorf("lossless JPEG: byte %d: 0x%02x where a marker should be", p, b[p])
		}
		m := b[p+1]
		n := int(binary.BigEndian.Uint16(b[p+2:]))
		if n < 2 || p+2+n > len(b) {
			return nil, fmt.Errorf("lossless JPEG: marker 0x%02x at byte %d has a length (%d) that runs past the end", m, p, n)
		}
		seg := b[p+4 : p+2+n]
		p += 2 + n
		switch {
		case m == 0xc3:
			if gotFrame {
				return nil, errors.New("lossless JPEG: two frames (SOF)")
			}
			gotFrame = true
			if len(seg) < 6 {
				return nil, errors.New("lossless JPEG: SOF3 is too short")
			}
			fr.prec = int(seg[0])
			fr.h = int(binary.BigEndian.Uint16(seg[1:]))
			fr.w = int(binary.BigEndian.Uint16(seg[3:]))
			fr.nc = int(seg[5])
			if fr.prec < 2 || fr.prec > 16 {
				return nil, fmt.Errorf("lossless JPEG: precision %d (want 2 to 16 bits)", fr.prec)
			}
			if fr.nc < 1 || fr.nc > 4 {
				return nil, fmt.Errorf("lossless JPEG: %d components (want 1 to 4)", fr.nc)
			}
			if fr.w == 0 || fr.h == 0 {
				return nil, fmt.Errorf("lossless JPEG: a %dx%d frame (a height defined by DNL is not supported)", fr.w, fr.h)
			}
			if len(seg) < 6+3*fr.nc {
				return nil, errors.New("lossless JPEG: SOF3 is too short for its components")
			}
			for i := 0; i < fr.nc; i++ {
				c := seg[6+3*i:]
				compIDs[i] = int(c[0])
				if c[1] != 0x11 {
					return nil, fmt.Errorf("lossless JPEG: component %d is subsampled (factors 0x%02x); DNG's are not", i, c[1])
				}
			}
		case m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc:
			return nil, fmt.Errorf("lossless JPEG: frame type SOF%d is not lossless Huffman JPEG (SOF3)", m-0xc0)
		case m == 0xc4:
			for q := 0; q < len(seg); {
				if q+17 > len(seg) {
					return nil, errors.New("lossless JPEG: DHT is too short")
				}
				tc, th := seg[q]>>4, seg[q]&15
				if tc != 0 || th > 3 {
					return nil, fmt.Errorf("lossless JPEG: DHT defines table class %d, id %d (want a DC table 0 to 3)", tc, th)
				}
				counts := seg[q+1 : q+17]
				total := 0
				for _, c := range counts {
					total += int(c)
				}
				if total > 256 || q+17+total > len(seg) {
					return nil, errors.New("lossless JPEG: DHT's counts run past its end")
				}
				t, err := buildHuff(counts, seg[q+17:q+17+total])
				if err != nil {
					return nil, fmt.Errorf("lossless JPEG: %v", err)
				}
				dht[th] = t
				q += 17 + total
			}
		case m == 0xdd:
			if len(seg) < 2 {
				return nil, errors.New("lossless JPEG: DRI is too short")
			}
			fr.restart = int(binary.BigEndian.Uint16(seg))
		case m == 0xda:
			if !gotFrame {
				return nil, errors.New("lossless JPEG: a scan before the frame (SOS before SOF3)")
			}
			if len(seg) < 1 || int(seg[0]) != fr.nc || len(seg) < 1+2*fr.nc+3 {
				return nil, errors.New("lossless JPEG: the scan does not hold every component of the frame")
			}
			for i := 0; i < fr.nc; i++ {
				id, td := int(seg[1+2*i]), int(seg[2+2*i]>>4)
				if id != compIDs[i] {
					return nil, fmt.Errorf("lossless JPEG: scan component %d has id %d, the frame's has %d", i, id, compIDs[i])
				}
				if td > 3 || dht[td] == nil {
					return nil, fmt.Errorf("lossless JPEG: component %d uses Huffman table %d, which is not defined", i, td)
				}
				fr.tables[i] = dht[td]
			}
			s := seg[1+2*fr.nc:]
			fr.pred, fr.pt = int(s[0]), int(s[2]&15)
			if fr.pred < 1 || fr.pred > 7 {
				return nil, fmt.Errorf("lossless JPEG: predictor %d (want 1 to 7)", fr.pred)
			}
			if fr.pt >= fr.prec {
				return nil, fmt.Errorf("lossless JPEG: point transform %d for %d-bit samples", fr.pt, fr.prec)
			}
			if fr.restart > 0 && fr.restart%fr.w != 0 {
				return nil, fmt.Errorf("lossless JPEG: restart interval %d is not a whole number of rows of %d", fr.restart, fr.w)
			}
			fr.data = b[p:]
			return fr, nil
		case m == 0xd9:
			return nil, errors.New("lossless JPEG: end of image before any scan")
		case m >= 0xd0 && m <= 0xd8 || m == 0x01:
			return nil, fmt.Errorf("lossless JPEG: unexpected marker 0x%02x before the scan", m)
		default:
			// APPn, COM, DQT and the like: skipped.
		}
	}
}

// bitReader reads entropy-coded bits: 0xff 0x00 is 0xff; a marker or the
// end of the data yields zero bits, counted in fake so that reading them
// is seen as truncation.
type bitReader struct {
	b    []byte
	pos  int
	acc  uint64 // bits, most significant first
	n    uint   // valid bits in acc
	fake uint   // zero bits added past the end of the segment
}

// fill tops acc up to more than 56 bits.
func (r *bitReader) fill() {
	for r.n <= 56 {
		if r.pos+4 <= len(r.b) && r.n <= 32 {
			v := binary.BigEndian.Uint32(r.b[r.pos:])
			if x := ^v; (x-0x01010101)&^x&0x80808080 == 0 { // no 0xff byte
				r.acc |= uint64(v) << (32 - r.n)
				r.n += 32
				r.pos += 4
				continue
			}
		}
		var c byte
		switch {
		case r.pos >= len(r.b):
			r.fake += 8
		case r.b[r.pos] != 0xff:
			c = r.b[r.pos]
			r.pos++
		case r.pos+1 < len(r.b) && r.b[r.pos+1] == 0:
			c = 0xff
			r.pos += 2
		default: // a marker: stay before it
			r.fake += 8
		}
		r.acc |= uint64(c) << (56 - r.n)
		r.n += 8
	}
}

// overrun reports whether bits past the end of the data were consumed.
func (r *bitReader) overrun() bool { return r.fake > r.n }

// restart discards the bits left and reads the restart marker RSTk.
func (r *bitReader) restart(k int) error {
	// Bytes already taken into acc beyond the padding are not possible:
	// acc stops at a marker. Drop what it holds.
	if r.overrun() {
		return errTruncatedLJPEG
	}
	r.acc, r.n, r.fake = 0, 0, 0
	for r.pos+1 < len(r.b) && r.b[r.pos] == 0xff && r.b[r.pos+1] == 0xff {
		r.pos++
	}
	if r.pos+1 >= len(r.b) || r.b[r.pos] != 0xff || r.b[r.pos+1] != 0xd0+byte(k&7) {
		return fmt.Errorf("lossless JPEG: restart marker RST%d missing at byte %d", k&7, r.pos)
	}
	r.pos += 2
	return nil
}

var (
	errTruncatedLJPEG = errors.New("lossless JPEG: the entropy-coded data end before the last sample (truncated)")
	errBadHuffman     = errors.New("lossless JPEG: a Huffman code that is not in its table (corrupt data)")
)

// slowDiff decodes a difference whose code (or code and extra bits) is
// longer than the lookup tables; acc has at least 32 valid bits.
func (r *bitReader) slowDiff(t *huffTable) (int, bool) {
	var l int
	var s int
	if e := t.sym[r.acc>>(64-lutBits)]; e != 0 {
		l, s = int(e>>8), int(e&0xff)
	} else {
		code := int32(r.acc >> (64 - lutBits))
		l = lutBits
		for code > t.maxcode[l] {
			l++
			if l > 16 {
				return 0, false
			}
			code = int32(r.acc >> (64 - uint(l)))
		}
		idx := t.valptr[l] + code - t.mincode[l]
		if code < t.mincode[l] || int(idx) >= len(t.vals) {
			return 0, false
		}
		s = int(t.vals[idx])
	}
	r.acc <<= uint(l)
	r.n -= uint(l)
	if s == 0 || s == 16 {
		return extendDiff(0, s), true
	}
	x := int(r.acc >> (64 - uint(s)))
	r.acc <<= uint(s)
	r.n -= uint(s)
	return extendDiff(x, s), true
}

// decode decodes every sample, handing sink each line (w·nc samples,
// components interleaved) in order; the slice is reused.
func (fr *ljpegFrame) decode(sink func([]uint16)) error {
	w, nc := fr.w, fr.nc
	ws := w * nc
	rows := [2][]uint16{make([]uint16, ws), make([]uint16, ws)}
	r := &bitReader{b: fr.data}
	restartRows := 0
	if fr.restart > 0 {
		restartRows = fr.restart / w
	}
	tabs := fr.tables
	initial := 1 << (fr.prec - fr.pt - 1)
	rst := 0
	for y := 0; y < fr.h; y++ {
		cur, prev := rows[y&1], rows[(y+1)&1]
		first := y == 0
		if restartRows > 0 && y > 0 && y%restartRows == 0 {
			if err := r.restart(rst); err != nil {
				return err
			}
			rst++
			first = true
		}
		for i := 0; i < ws; i++ {
			if r.n < 32 {
				r.fill()
			}
			t := tabs[i%nc]
			var diff int
			if e := t.fast[r.acc>>(64-lutBits)]; e != 0 {
				k := uint(e & 0xff)
				r.acc <<= k
				r.n -= k
				diff = int(e >> 8)
			} else {
				var ok bool
				if diff, ok = r.slowDiff(t); !ok {
					return errBadHuffman
				}
			}
			var pred int
			switch {
			case i < nc: // the first column
				if first {
					pred = initial
				} else {
					pred = int(prev[i])
				}
			case first:
				pred = int(cur[i-nc])
			default:
				ra, rb, rc := int(cur[i-nc]), int(prev[i]), int(prev[i-nc])
				switch fr.pred {
				case 1:
					pred = ra
				case 2:
					pred = rb
				case 3:
					pred = rc
				case 4:
					pred = ra + rb - rc
				case 5:
					pred = ra + (rb-rc)>>1
				case 6:
					pred = rb + (ra-rc)>>1
				case 7:
					pred = (ra + rb) >> 1
				}
			}
			cur[i] = uint16(pred + diff)
		}
		if r.overrun() {
			return errTruncatedLJPEG
		}
		sink(cur)
	}
	return nil
}
