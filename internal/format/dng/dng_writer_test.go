package dng

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// A DNG writer for the tests: uncompressed (any depth 8..16, packed MSB
// first) or lossless JPEG (ljpegEncode), strips or tiles, in IFD 0 or in
// a SubIFD behind an 8-bit RGB preview, either byte order. The peers
// (LibRaw, dcraw) check that what it writes is a DNG as they read it.

type testDNG struct {
	bo          binary.ByteOrder
	w, h, spp   int
	bps         int
	linear      bool     // LinearRaw instead of CFA
	pattern     []byte   // CFAPattern (nil: no tag); default RGGB
	patternDim  [2]int   // default 2x2
	compression int      // 1 or 7
	tile        [2]int   // tile width, length; zero: strips
	rps         int      // rows per strip (0: the whole image)
	subIFD      bool     // raw image in a SubIFD behind a preview
	activeArea  []uint32 // top, left, bottom, right
	black       []uint32
	white       uint32
	cropOrigin  []uint32
	cropSize    []uint32
	// ljpeg options
	pred, pt   int
	comps      int // JPEG components a tile (1, 2 or 4); 0: 2 when the width allows, else 1
	restart    int // restart interval in rows (0: none)
	tablePer   bool
	fixedTable bool
	noDNGVer   bool
	// extra entries for the raw IFD (hostile tests)
	extra []tiffTestEntry
}

type tiffTestEntry struct {
	tag, typ uint16
	count    uint32
	data     []byte // value bytes in the file's order (any length)
}

// samples: H·W·spp values, C order.
func (d testDNG) build(samples []uint16) []byte {
	bo := d.bo
	if bo == nil {
		bo = binary.LittleEndian
	}
	out := make([]byte, 8)
	if bo == binary.LittleEndian {
		copy(out, "II*\x00")
	} else {
		copy(out, "MM\x00*")
	}
	align := func() {
		for len(out)%4 != 0 {
			out = append(out, 0)
		}
	}
	tw, th := d.w, d.rps
	if th == 0 {
		th = d.h
	}
	tiled := d.tile[0] > 0
	if tiled {
		tw, th = d.tile[0], d.tile[1]
	}
	across, down := (d.w+tw-1)/tw, (d.h+th-1)/th
	var offs, cnts []uint32
	for ty := 0; ty < down; ty++ {
		for tx := 0; tx < across; tx++ {
			rows := th
			if !tiled {
				rows = min(th, d.h-ty*th)
			}
			// The chunk's samples, padded with its edge values.
			cs := make([]uint16, tw*rows*d.spp)
			for y := 0; y < rows; y++ {
				for x := 0; x < tw; x++ {
					sy, sx := min(ty*th+y, d.h-1), min(tx*tw+x, d.w-1)
					copy(cs[(y*tw+x)*d.spp:(y*tw+x+1)*d.spp], samples[(sy*d.w+sx)*d.spp:])
				}
			}
			var data []byte
			if d.compression == 7 {
				nc := d.comps
				if nc == 0 {
					nc = 1
					if tw*d.spp%2 == 0 {
						nc = 2
					}
				}
				jw, jh := tw*d.spp/nc, rows
				if nc == 4 {
					jw, jh = tw*d.spp/2, rows/2
				}
				data = ljpegEncode(cs, jw, jh, nc, ljpegOpts{prec: d.bps, pred: d.pred, pt: d.pt, restartRows: d.restart, tablePer: d.tablePer, fixed: d.fixedTable})
			} else {
				data = packSamples(cs, tw*d.spp, rows, d.bps, bo)
			}
			align()
			offs = append(offs, uint32(len(out)))
			cnts = append(cnts, uint32(len(data)))
			out = append(out, data...)
		}
	}
	var raw []tiffTestEntry
	u16 := func(tag uint16, v ...uint32) {
		b := make([]byte, 2*len(v))
		for i, x := range v {
			bo.PutUint16(b[2*i:], uint16(x))
		}
		raw = append(raw, tiffTestEntry{tag, 3, uint32(len(v)), b})
	}
	u32 := func(tag uint16, v ...uint32) {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			bo.PutUint32(b[4*i:], x)
		}
		raw = append(raw, tiffTestEntry{tag, 4, uint32(len(v)), b})
	}
	u32(tagNewSubFileType, 0)
	u32(tagImageWidth, uint32(d.w))
	u32(tagImageLength, uint32(d.h))
	bpsv := make([]uint32, d.spp)
	for i := range bpsv {
		bpsv[i] = uint32(d.bps)
	}
	u16(tagBitsPerSample, bpsv...)
	u16(tagCompression, uint32(max(d.compression, 1)))
	if d.linear {
		u16(tagPhotometric, photometricLinearRaw)
	} else {
		u16(tagPhotometric, photometricCFA)
	}
	u16(tagSamplesPerPixel, uint32(d.spp))
	u16(tagPlanarConfig, 1)
	if tiled {
		u32(tagTileWidth, uint32(tw))
		u32(tagTileLength, uint32(th))
		u32(tagTileOffsets, offs...)
		u32(tagTileByteCounts, cnts...)
	} else {
		u32(tagStripOffsets, offs...)
		u32(tagRowsPerStrip, uint32(th))
		u32(tagStripByteCounts, cnts...)
	}
	if !d.linear {
		dim := d.patternDim
		if dim[0] == 0 {
			dim = [2]int{2, 2}
		}
		pat := d.pattern
		if pat == nil {
			pat = []byte{0, 1, 1, 2}
		}
		u16(tagCFARepeatDim, uint32(dim[0]), uint32(dim[1]))
		raw = append(raw, tiffTestEntry{tagCFAPattern, 1, uint32(len(pat)), pat})
		u16(tagCFALayout, 1)
	}
	if d.black != nil {
		u32(tagBlackLevel, d.black...)
	}
	if d.white != 0 {
		u32(tagWhiteLevel, d.white)
	}
	if d.activeArea != nil {
		u32(tagActiveArea, d.activeArea...)
	}
	if d.cropOrigin != nil {
		u32(tagDefaultCropOrigin, d.cropOrigin...)
		u32(tagDefaultCropSize, d.cropSize...)
	}
	raw = append(raw, d.extra...)
	dng := []tiffTestEntry{{tagDNGVersion, 1, 4, []byte{1, 4, 0, 0}}, {50708, 2, 9, []byte("Test Cam\x00")}}
	cm := make([]byte, 9*8) // ColorMatrix1: identity
	for i := 0; i < 9; i++ {
		if i%4 == 0 {
			bo.PutUint32(cm[8*i:], 1)
		}
		bo.PutUint32(cm[8*i+4:], 1)
	}
	dng = append(dng, tiffTestEntry{50721, 10, 9, cm})
	make_ := tiffTestEntry{271, 2, 5, []byte("Test\x00")}
	model := tiffTestEntry{272, 2, 4, []byte("Cam\x00")}
	if d.noDNGVer {
		dng = dng[1:]
	}
	if !d.subIFD {
		raw = append(raw, dng...)
		raw = append(raw, make_, model)
		align()
		at := writeTestIFD(&out, bo, raw, 0)
		bo.PutUint32(out[4:], at)
		return out
	}
	// A preview in IFD 0 (8-bit RGB, 4x4), the raw image in its SubIFD.
	align()
	prevOff := uint32(len(out))
	out = append(out, make([]byte, 4*4*3)...)
	align()
	rawAt := writeTestIFD(&out, bo, raw, 0)
	var ifd0 []tiffTestEntry
	raw = nil
	u32(tagNewSubFileType, 1)
	u32(tagImageWidth, 4)
	u32(tagImageLength, 4)
	u16(tagBitsPerSample, 8, 8, 8)
	u16(tagCompression, 1)
	u16(tagPhotometric, 2)
	u32(tagStripOffsets, prevOff)
	u16(tagSamplesPerPixel, 3)
	u32(tagRowsPerStrip, 4)
	u32(tagStripByteCounts, 48)
	u16(tagPlanarConfig, 1)
	u32(tagSubIFDs, rawAt)
	ifd0 = append(raw, dng...)
	ifd0 = append(ifd0, make_, model)
	align()
	at := writeTestIFD(&out, bo, ifd0, 0)
	bo.PutUint32(out[4:], at)
	return out
}

// writeTestIFD appends an IFD (entries sorted by tag) and its values.
func writeTestIFD(out *[]byte, bo binary.ByteOrder, es []tiffTestEntry, next uint32) uint32 {
	sort.SliceStable(es, func(i, j int) bool { return es[i].tag < es[j].tag })
	at := uint32(len(*out))
	n := len(es)
	ifd := make([]byte, 2+12*n+4)
	bo.PutUint16(ifd, uint16(n))
	valAt := at + uint32(len(ifd))
	var vals []byte
	for i, e := range es {
		p := ifd[2+12*i:]
		bo.PutUint16(p, e.tag)
		bo.PutUint16(p[2:], e.typ)
		bo.PutUint32(p[4:], e.count)
		if len(e.data) <= 4 {
			copy(p[8:12], e.data)
		} else {
			bo.PutUint32(p[8:], valAt+uint32(len(vals)))
			vals = append(vals, e.data...)
			for len(vals)%2 != 0 {
				vals = append(vals, 0)
			}
		}
	}
	bo.PutUint32(ifd[2+12*n:], next)
	*out = append(*out, ifd...)
	*out = append(*out, vals...)
	return at
}

// packSamples writes rows of n samples: 8 bits as bytes, 16 in the
// file's byte order, others packed MSB first, each row from a new byte.
func packSamples(s []uint16, n, rows, bps int, bo binary.ByteOrder) []byte {
	var out []byte
	for r := 0; r < rows; r++ {
		row := s[r*n : (r+1)*n]
		switch bps {
		case 8:
			for _, v := range row {
				out = append(out, byte(v))
			}
		case 16:
			for _, v := range row {
				out = bo.(binary.AppendByteOrder).AppendUint16(out, v)
			}
		default:
			var acc uint64
			nb := 0
			for _, v := range row {
				acc = acc<<bps | uint64(v)
				nb += bps
				for nb >= 8 {
					nb -= 8
					out = append(out, byte(acc>>nb))
				}
			}
			if nb > 0 {
				out = append(out, byte(acc<<(8-nb)))
			}
		}
	}
	return out
}

type ljpegOpts struct {
	prec, pred, pt int
	restartRows    int
	tablePer       bool // a table a component (else one shared)
	fixed          bool // a fixed table instead of one made from the data
}

// ljpegEncode writes samples (h lines of w·nc, components interleaved)
// as a lossless JPEG: SOF3, DHT, DRI, SOS, Huffman-coded differences.
func ljpegEncode(s []uint16, w, h, nc int, o ljpegOpts) []byte {
	if o.pred == 0 {
		o.pred = 1
	}
	ws := w * nc
	diffs := make([]int, len(s))
	initial := 1 << (o.prec - o.pt - 1)
	for y := 0; y < h; y++ {
		first := y == 0 || (o.restartRows > 0 && y%o.restartRows == 0)
		for i := 0; i < ws; i++ {
			var pred int
			cur := s[y*ws:]
			switch {
			case i < nc && first:
				pred = initial
			case i < nc:
				pred = int(s[(y-1)*ws+i])
			case first:
				pred = int(cur[i-nc])
			default:
				ra, rb, rc := int(cur[i-nc]), int(s[(y-1)*ws+i]), int(s[(y-1)*ws+i-nc])
				switch o.pred {
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
			d := int(int16(uint16(int(cur[i]) - pred)))
			diffs[y*ws+i] = d
		}
	}
	cat := func(d int) int {
		if d == -32768 {
			return 16
		}
		if d < 0 {
			d = -d
		}
		n := 0
		for d > 0 {
			n++
			d >>= 1
		}
		return n
	}
	ntab := 1
	if o.tablePer {
		ntab = nc
	}
	var tables [][2][]byte // bits, vals
	for t := 0; t < ntab; t++ {
		var freq [17]int
		for i, d := range diffs {
			if ntab == 1 || i%nc == t {
				freq[cat(d)]++
			}
		}
		if o.fixed {
			for i := range freq {
				freq[i] = 1
			}
		}
		tables = append(tables, makeHuffTable(freq[:]))
	}
	type code struct{ c, l int }
	codes := make([][17]code, ntab)
	for t, tb := range tables {
		c, k := 0, 0
		for l := 1; l <= 16; l++ {
			for i := 0; i < int(tb[0][l-1]); i++ {
				codes[t][tb[1][k]] = code{c, l}
				c++
				k++
			}
			c <<= 1
		}
	}
	var out []byte
	seg := func(m byte, body []byte) {
		out = append(out, 0xff, m, byte((len(body)+2)>>8), byte(len(body)+2))
		out = append(out, body...)
	}
	out = append(out, 0xff, 0xd8)
	sof := []byte{byte(o.prec), byte(h >> 8), byte(h), byte(w >> 8), byte(w), byte(nc)}
	for c := 0; c < nc; c++ {
		sof = append(sof, byte(c+1), 0x11, 0)
	}
	seg(0xc3, sof)
	var dht []byte
	for t, tb := range tables {
		dht = append(dht, byte(t))
		dht = append(dht, tb[0]...)
		dht = append(dht, tb[1]...)
	}
	seg(0xc4, dht)
	if o.restartRows > 0 {
		seg(0xdd, []byte{byte(o.restartRows * w >> 8), byte(o.restartRows * w)})
	}
	sos := []byte{byte(nc)}
	for c := 0; c < nc; c++ {
		t := 0
		if o.tablePer {
			t = c
		}
		sos = append(sos, byte(c+1), byte(t<<4))
	}
	sos = append(sos, byte(o.pred), 0, byte(o.pt))
	seg(0xda, sos)
	var acc uint64
	nb := 0
	put := func(v, n int) {
		acc = acc<<n | uint64(v)&(1<<n-1)
		nb += n
		for nb >= 8 {
			nb -= 8
			b := byte(acc >> nb)
			out = append(out, b)
			if b == 0xff {
				out = append(out, 0)
			}
		}
	}
	flush := func() {
		if nb > 0 {
			put(0x7f, 8-nb) // pad with ones
		}
	}
	rst := 0
	for y := 0; y < h; y++ {
		if o.restartRows > 0 && y > 0 && y%o.restartRows == 0 {
			flush()
			out = append(out, 0xff, 0xd0+byte(rst&7))
			rst++
		}
		for i := 0; i < ws; i++ {
			d := diffs[y*ws+i]
			t := 0
			if o.tablePer {
				t = i % nc
			}
			s := cat(d)
			put(codes[t][s].c, codes[t][s].l)
			if s > 0 && s < 16 {
				v := d
				if d < 0 {
					v = d + (1 << s) - 1
				}
				put(v, s)
			}
		}
	}
	flush()
	out = append(out, 0xff, 0xd9)
	return out
}

// makeHuffTable makes a JPEG Huffman table (T.81 K.2: code lengths from
// the frequencies, at most 16 bits, the all-ones code reserved) for the
// symbols with a non-zero frequency: its 16 counts and its values.
func makeHuffTable(freq []int) [2][]byte {
	n := len(freq)
	f := make([]int, n+1)
	copy(f, freq)
	f[n] = 1 // reserves the all-ones code
	size := make([]int, n+1)
	others := make([]int, n+1)
	for i := range others {
		others[i] = -1
	}
	for {
		c1, c2 := -1, -1
		for i, v := range f {
			if v > 0 && (c1 < 0 || v <= f[c1]) {
				c1 = i
			}
		}
		for i, v := range f {
			if v > 0 && i != c1 && (c2 < 0 || v <= f[c2]) {
				c2 = i
			}
		}
		if c2 < 0 {
			break
		}
		f[c1] += f[c2]
		f[c2] = 0
		size[c1]++
		for others[c1] >= 0 {
			c1 = others[c1]
			size[c1]++
		}
		others[c1] = c2
		size[c2]++
		for others[c2] >= 0 {
			c2 = others[c2]
			size[c2]++
		}
	}
	bits := make([]int, 33)
	for _, s := range size {
		if s > 0 {
			bits[s]++
		}
	}
	for i := 32; i > 16; i-- {
		for bits[i] > 0 {
			j := i - 2
			for bits[j] == 0 {
				j--
			}
			bits[i] -= 2
			bits[i-1]++
			bits[j+1] += 2
			bits[j]--
		}
	}
	i := 16
	for bits[i] == 0 {
		i--
	}
	bits[i]-- // the reserved code
	var vals []byte
	for l := 1; l <= 32; l++ {
		for s := 0; s < n; s++ {
			if size[s] == l {
				vals = append(vals, byte(s))
			}
		}
	}
	counts := make([]byte, 16)
	for l := 1; l <= 16; l++ {
		counts[l-1] = byte(bits[l])
	}
	return [2][]byte{counts, vals}
}

// randomMosaic is a smooth-ish random image of bps-bit samples.
func randomMosaic(rng *rand.Rand, n, bps int) []uint16 {
	s := make([]uint16, n)
	max := 1<<bps - 1
	v := rng.Intn(max + 1)
	for i := range s {
		switch rng.Intn(10) {
		case 0:
			v = rng.Intn(max + 1)
		default:
			v += rng.Intn(65) - 32
		}
		v = min(max, v)
		v = max0(v)
		s[i] = uint16(v)
	}
	return s
}

func max0(v int) int {
	if v < 0 {
		return 0
	}
	return v
}

// TestDNGBenchFiles writes the DNGs bench/dng.sh times, when
// DEPTHSPACE_DNG_BENCH is "DIR N": N camera-sized (6048x4024, 14-bit)
// lossless JPEG DNGs (256x256 tiles, JPEGs of two components, predictor
// 1, tables from the data, as Adobe's converter writes them) under
// DIR/ljpeg and N uncompressed ones (16-bit strips) under DIR/plain.
func TestDNGBenchFiles(t *testing.T) {
	spec := os.Getenv("DEPTHSPACE_DNG_BENCH")
	if spec == "" {
		t.Skip("DEPTHSPACE_DNG_BENCH is not set (bench/dng.sh sets it)")
	}
	var dir string
	var n int
	if _, err := fmt.Sscan(spec, &dir, &n); err != nil {
		t.Fatalf("DEPTHSPACE_DNG_BENCH=%q: want DIR N", spec)
	}
	const w, h = 6048, 4024
	for _, sub := range []string{"ljpeg", "plain"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < n; i++ {
		rng := rand.New(rand.NewSource(int64(i)))
		s := cameraMosaic(rng, w, h, 14)
		lj := testDNG{w: w, h: h, spp: 1, bps: 14, compression: 7, tile: [2]int{256, 256}, pred: 1, subIFD: true,
			activeArea: []uint32{0, 0, h, w}, black: []uint32{512}, white: 16383}
		pl := testDNG{w: w, h: h, spp: 1, bps: 16, compression: 1, rps: 64, subIFD: true}
		for _, f := range []struct {
			sub string
			d   testDNG
		}{{"ljpeg", lj}, {"plain", pl}} {
			name := filepath.Join(dir, f.sub, fmt.Sprintf("IMG_%04d.dng", i))
			if err := os.WriteFile(name, f.d.build(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// cameraMosaic is a photo-like mosaic: smooth shading per colour site and
// sensor noise, black level 512.
func cameraMosaic(rng *rand.Rand, w, h, bps int) []uint16 {
	s := make([]uint16, w*h)
	top := float64(int(1)<<bps - 1)
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			base := 512 + 3000*(1+math.Sin(float64(x)/700+float64(y%2))*math.Cos(float64(y)/500+float64(x%2)))
			v := base + rng.NormFloat64()*40
			s[y*w+x] = uint16(math.Max(0, math.Min(top, v)))
		}
	}
	return s
}
