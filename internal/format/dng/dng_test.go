package dng

import (
	"encoding/binary"
	"fmt"
	"math/rand"
	"runtime"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
)

// le16 reads a decoded tensor's little-endian uint16s.
func le16(b []byte) []uint16 {
	out := make([]uint16, len(b)/2)
	for i := range out {
		out[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	return out
}

// dngCases are the files every test below writes: both byte orders,
// strips and tiles, depths 8 to 16 (packed ones), IFD 0 and a SubIFD,
// uncompressed and lossless JPEG with every predictor.
func dngCases() []testDNG {
	var cs []testDNG
	for _, bo := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		for _, bps := range []int{8, 10, 12, 14, 16} {
			cs = append(cs,
				testDNG{bo: bo, w: 48, h: 40, spp: 1, bps: bps, compression: 1, rps: 7},
				testDNG{bo: bo, w: 50, h: 38, spp: 1, bps: bps, compression: 1, tile: [2]int{16, 16}, subIFD: true},
			)
		}
		for pred := 1; pred <= 7; pred++ {
			cs = append(cs, testDNG{bo: bo, w: 96, h: 48, spp: 1, bps: 12 + pred%3, compression: 7, pred: pred, tile: [2]int{32, 16}, subIFD: pred%2 == 0})
		}
		cs = append(cs,
			testDNG{bo: bo, w: 64, h: 44, spp: 1, bps: 14, compression: 7, pred: 1, rps: 44},
			testDNG{bo: bo, w: 60, h: 46, spp: 1, bps: 16, compression: 7, pred: 4, tile: [2]int{32, 32}, tablePer: true},
			testDNG{bo: bo, w: 64, h: 48, spp: 1, bps: 12, compression: 7, pred: 6, tile: [2]int{32, 32}, comps: 4, fixedTable: true},
			testDNG{bo: bo, w: 64, h: 48, spp: 1, bps: 12, compression: 7, pred: 1, tile: [2]int{32, 32}, comps: 1, restart: 4},
			testDNG{bo: bo, w: 64, h: 48, spp: 1, bps: 10, compression: 7, pred: 1, tile: [2]int{64, 48}, pt: 2},
		)
	}
	return cs
}

func (d testDNG) String() string {
	bo := "LE"
	if d.bo == binary.BigEndian {
		bo = "BE"
	}
	s := fmt.Sprintf("%s-%dx%d-%dbit-c%d", bo, d.w, d.h, d.bps, d.compression)
	if d.tile[0] > 0 {
		s += fmt.Sprintf("-tiles%dx%d", d.tile[0], d.tile[1])
	} else {
		s += fmt.Sprintf("-strips%d", d.rps)
	}
	if d.compression == 7 {
		s += fmt.Sprintf("-pred%d-comps%d-rst%d-pt%d", d.pred, d.comps, d.restart, d.pt)
	}
	if d.subIFD {
		s += "-subifd"
	}
	return s
}

func (d testDNG) samples(seed int64) []uint16 {
	rng := rand.New(rand.NewSource(seed))
	return randomMosaic(rng, d.w*d.h*d.spp, d.bps-d.pt)
}

func TestDNGDecodeRoundTrip(t *testing.T) {
	for i, c := range append(dngCases(),
		testDNG{w: 30, h: 22, spp: 3, bps: 16, linear: true, compression: 1, rps: 5},
		testDNG{w: 32, h: 24, spp: 3, bps: 12, linear: true, compression: 7, tile: [2]int{16, 16}, comps: 3, pred: 1},
	) {
		t.Run(c.String(), func(t *testing.T) {
			want := c.samples(int64(i))
			file := c.build(want)
			if !SniffDNG(file) || format.Sniff(file) != KindDNG {
				t.Fatal("not sniffed as a DNG")
			}
			h, data, err := DecodeDNG(file)
			if err != nil {
				t.Fatal(err)
			}
			wantShape := []int{c.h, c.w}
			if c.linear {
				wantShape = append(wantShape, c.spp)
			}
			if format.ShapeString(h.Shape) != format.ShapeString(wantShape) || h.DType.Name() != "uint16" {
				t.Fatalf("got %s %s, want %s uint16", format.ShapeString(h.Shape), h.DType.Name(), format.ShapeString(wantShape))
			}
			got := le16(data)
			for j := range want {
				if got[j] != want[j] {
					t.Fatalf("sample %d (row %d, col %d): got %d, want %d", j, j/c.spp/c.w, j/c.spp%c.w, got[j], want[j])
				}
			}
		})
	}
}

func TestDNGCFA(t *testing.T) {
	s := make([]uint16, 24*24)
	for _, c := range []struct {
		pattern []byte
		dim     [2]int
		area    []uint32
		linear  bool
		want    string // or "error: ..." substring
	}{
		{[]byte{0, 1, 1, 2}, [2]int{}, nil, false, "rggb"},
		{[]byte{2, 1, 1, 0}, [2]int{}, nil, false, "bggr"},
		{[]byte{1, 0, 2, 1}, [2]int{}, nil, false, "grbg"},
		{[]byte{1, 2, 0, 1}, [2]int{}, nil, false, "gbrg"},
		{[]byte{0, 1, 1, 2}, [2]int{}, []uint32{1, 0, 23, 24}, false, "gbrg"},
		{[]byte{0, 1, 1, 2}, [2]int{}, []uint32{0, 1, 24, 23}, false, "grbg"},
		{[]byte{0, 1, 1, 2}, [2]int{}, []uint32{3, 5, 23, 23}, false, "bggr"},
		{[]byte{0, 1, 1, 2}, [2]int{}, []uint32{2, 4, 24, 24}, false, "rggb"},
		{[]byte("\x01\x01\x00\x01\x01\x02\x01\x01\x02\x01\x01\x00\x02\x00\x01\x00\x02\x01\x01\x01\x02\x01\x01\x00\x01\x01\x00\x01\x01\x02\x00\x02\x01\x02\x00\x01"), [2]int{6, 6}, nil, false, "error: an X-Trans 6x6 CFA pattern (GGRGGB/"},
		{[]byte{0, 0, 1, 1, 0, 0, 1, 1, 1, 1, 2, 2, 1, 1, 2, 2}, [2]int{4, 4}, nil, false, "error: a quad Bayer 4x4 CFA pattern (RRGG/RRGG/GGBB/GGBB)"},
		{[]byte{0, 1, 2, 6}, [2]int{}, nil, false, "error: a 2x2 CFA pattern RG/BW is not a Bayer pattern"},
		{nil, [2]int{}, nil, true, "error: --block-order cfa needs a CFA pattern"},
	} {
		d := testDNG{w: 24, h: 24, spp: 1, bps: 16, compression: 1, pattern: c.pattern, patternDim: c.dim, activeArea: c.area, linear: c.linear}
		if c.linear {
			d.spp = 3
		}
		got, err := DNGCFA(d.build(append(s, make([]uint16, 24*24*2)...)[:24*24*d.spp]))
		if err != nil {
			got = "error: " + strings.TrimPrefix(err.Error(), "dng: ")
		}
		if !strings.Contains(got, c.want) {
			t.Errorf("pattern %v area %v: got %q, want %q", c.pattern, c.area, got, c.want)
		}
	}
}

func TestDNGDescribe(t *testing.T) {
	d := testDNG{w: 24, h: 24, spp: 1, bps: 12, compression: 1, activeArea: []uint32{1, 2, 23, 22}, black: []uint32{64},
		white: 4095, cropOrigin: []uint32{2, 2}, cropSize: []uint32{16, 18}, subIFD: true}
	kv, err := DescribeDNG(d.build(make([]uint16, 24*24)))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, e := range kv {
		lines = append(lines, e[0]+"="+e[1])
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"raw_image=SubIFD 0 of IFD 0", "bit_depth=12", "cfa_pattern=RG/GB (2x2); GB/RG at row 0, column 0", "black_level=64",
		"white_level=4095", "active_area=top 1, left 2, bottom 23, right 22", "default_crop=origin 2,2, size 16,18 (in the active area)", "compression=none (1)"} {
		if !strings.Contains(got, want) {
			t.Errorf("describe lacks %q:\n%s", want, got)
		}
	}
}

// TestDNGHostile: broken files are refused with one line, quickly, never
// a panic or an allocation of what they claim.
func TestDNGHostile(t *testing.T) {
	good := testDNG{w: 32, h: 32, spp: 1, bps: 12, compression: 7, tile: [2]int{16, 16}, pred: 1}
	s := good.samples(1)
	base := good.build(s)
	le := binary.LittleEndian
	u32 := func(v ...uint32) []byte {
		b := make([]byte, 4*len(v))
		for i, x := range v {
			le.PutUint32(b[4*i:], x)
		}
		return b
	}
	mod := func(f func(d *testDNG)) []byte { d := good; f(&d); return d.build(s) }
	strips := mod(func(d *testDNG) { d.tile = [2]int{} })
	cases := map[string]struct {
		file []byte
		want string
	}{
		"empty":       {nil, "not a TIFF"},
		"plain tiff":  {mod(func(d *testDNG) { d.noDNGVer = true }), "without a DNGVersion"},
		"truncated":   {base[:len(base)/2], ""},
		"ifd loop":    {ifdLoop(base), "loop"},
		"ifd outside": {append([]byte("II*\x00\xff\xff\xff\x7f"), make([]byte, 16)...), "outside the file"},
		"huge image": {mod(func(d *testDNG) {
			d.extra = []tiffTestEntry{}
		}), ""},
		"claimed pixels": {patchTag(strips, tagImageWidth, 100000), "cannot hold them"},
		"10^10 pixels":   {patchTag(patchTag(patchTag(strips, tagImageWidth, 100000), tagImageLength, 100000), tagRowsPerStrip, 100000), "cannot hold them"},
		"strips short": {mod(func(d *testDNG) {
			d.compression, d.tile, d.rps = 1, [2]int{}, 8
			d.extra = []tiffTestEntry{{tagRowsPerStrip, 4, 1, u32(4)}}
		}), "do not cover the image"},
		"offset past end":  {patchTag(base, tagTileOffsets, 1<<30), "past the end"},
		"count past end":   {patchTag(base, tagTileByteCounts, 1<<30), "past the end"},
		"lzw":              {patchTag(base, tagCompression, 5), "compression 5 (LZW) is not supported"},
		"lossy":            {patchTag(base, tagCompression, 34892), "lossy JPEG"},
		"bad huffman":      {breakHuffman(base), ""},
		"huffman overfull": {overfullHuffman(base), "more codes than the lengths allow"},
		"truncated jpeg":   {truncateEntropy(base), ""},
		"4-bit":            {patchTag(base, tagBitsPerSample, 4), "4-bit samples"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := DecodeDNG(c.file)
			if name == "huge image" {
				return
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Errorf("not one line: %q", err)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %q, want %q", err, c.want)
			}
		})
	}
}

// findTag returns the offset of a tag's entry in the file's last-written
// IFD that has it (little-endian files only).
func findTag(b []byte, tag uint16) int {
	f, err := parseTIFF(b)
	if err != nil {
		return -1
	}
	for _, d := range f.ifds {
		n := int(f.bo.Uint16(b[d.off:]))
		for i := 0; i < n; i++ {
			p := int(d.off) + 2 + 12*i
			if f.bo.Uint16(b[p:]) == tag {
				return p
			}
		}
	}
	return -1
}

// patchTag sets the first value of a tag (inline, LONG or SHORT).
func patchTag(b []byte, tag uint16, v uint32) []byte {
	b = append([]byte(nil), b...)
	p := findTag(b, tag)
	if p < 0 {
		panic("no tag")
	}
	le := binary.LittleEndian
	typ, count := le.Uint16(b[p+2:]), le.Uint32(b[p+4:])
	at := p + 8
	if (typ == 4 && count > 1) || (typ == 3 && count > 2) {
		at = int(le.Uint32(b[p+8:]))
	}
	if typ == 3 {
		le.PutUint16(b[at:], uint16(v))
	} else {
		le.PutUint32(b[at:], v)
	}
	return b
}

// ifdLoop points IFD 0's next-IFD link at IFD 0.
func ifdLoop(b []byte) []byte {
	b = append([]byte(nil), b...)
	off := binary.LittleEndian.Uint32(b[4:])
	n := binary.LittleEndian.Uint16(b[off:])
	binary.LittleEndian.PutUint32(b[off+2+12*uint32(n):], off)
	return b
}

// breakHuffman fills the first tile's DHT counts with garbage.
func breakHuffman(b []byte) []byte {
	b = append([]byte(nil), b...)
	i := strings.Index(string(b), "\xff\xc4")
	for j := 0; j < 16; j++ {
		b[i+5+j] = 0xff
	}
	return b
}

// overfullHuffman gives the first tile's DHT three codes of length 1
// (two at most fit), its total kept: a code past the lengths' room once
// indexed the decoding tables out of range (a fuzzer's find).
func overfullHuffman(b []byte) []byte {
	b = append([]byte(nil), b...)
	counts := b[strings.Index(string(b), "\xff\xc4")+5:][:16]
	for l := 15; l > 0; l-- {
		if counts[l] >= 3 {
			counts[l] -= 3
			counts[0] += 3
			return b
		}
	}
	panic("no length with three codes to move")
}

// truncateEntropy cuts the first tile's entropy data short: its byte
// count says 40 bytes.
func truncateEntropy(b []byte) []byte {
	f, _ := parseTIFF(b)
	p := findTag(b, tagTileByteCounts)
	at := binary.LittleEndian.Uint32(b[p+8:])
	_ = f
	b = append([]byte(nil), b...)
	sos := strings.Index(string(b), "\xff\xda")
	off := binary.LittleEndian.Uint32(b[findTagVal(b, tagTileOffsets):])
	binary.LittleEndian.PutUint32(b[at:], uint32(sos+14+20)-off)
	return b
}

func findTagVal(b []byte, tag uint16) int {
	p := findTag(b, tag)
	return int(binary.LittleEndian.Uint32(b[p+8:]))
}

// FuzzDNG: any bytes decode to a tensor of the size the file describes or
// to a one-line error, without a panic, in memory bounded by the file's
// size (DecodeDNG checks the claims before allocating). The seeds are the
// test writer's files (every layout and compression) and the hostile
// cases above.
func FuzzDNG(f *testing.F) {
	for i, c := range dngCases() {
		if i%3 == 0 {
			c.w, c.h = 24, 22
			if c.tile[0] > 0 {
				c.tile = [2]int{16, 16}
			}
			f.Add(c.build(c.samples(int64(i))))
		}
	}
	good := testDNG{w: 32, h: 32, spp: 1, bps: 12, compression: 7, tile: [2]int{16, 16}, pred: 1}
	base := good.build(good.samples(1))
	f.Add(ifdLoop(base))
	f.Add(breakHuffman(base))
	f.Add(overfullHuffman(base))
	f.Add(truncateEntropy(base))
	f.Add(patchTag(base, tagImageWidth, 100000))
	// Tags that lie: counts beyond the file, strips of zero bytes or at
	// one offset, geometry beyond the image, plane colours.
	s := make([]uint16, 8*6)
	strips := testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2, black: []uint32{1}, activeArea: []uint32{0, 0, 6, 8}}.build(s)
	f.Add(setEntry(strips, tagBlackLevel, 1, 1<<24, 64))
	f.Add(setEntry(strips, tagStripOffsets, 4, 1<<20, 64))
	f.Add(setEntry(strips, tagStripByteCounts, 4, 3, 0))
	f.Add(setEntry(strips, tagStripOffsets, 4, 3, 8))
	f.Add(setEntry(strips, tagActiveArea, 4, 4, 64))
	f.Add(testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2, cropOrigin: []uint32{2, 2}, cropSize: []uint32{8, 4}}.build(s))
	f.Add(testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2, pattern: []byte{3, 5, 1, 4},
		extra: []tiffTestEntry{{tagCFAPlaneColor, 1, 4, []byte{3, 5, 1, 4}}}}.build(s))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, data, err := DecodeDNG(b)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("not one line: %q", err)
			}
			if strings.Contains(err.Error(), "internal error") {
				t.Fatalf("a decoder panic, recovered: %v", err) // a bug, not bad input
			}
			return
		}
		if int64(len(data)) != h.DataBytes() {
			t.Fatalf("%d bytes for %s", len(data), format.ShapeString(h.Shape))
		}
		if int64(len(data)) > 16*int64(len(b))+1<<20 {
			t.Fatalf("%d bytes out of a %d-byte file", len(data), len(b))
		}
		DNGCFA(b)
		DescribeDNG(b)
	})
}

// setEntry rewrites a tag's entry in a little-endian file: its type,
// count and value (or offset).
func setEntry(b []byte, tag, typ uint16, count, val uint32) []byte {
	b = append([]byte(nil), b...)
	p := findTag(b, tag)
	le := binary.LittleEndian
	le.PutUint16(b[p+2:], typ)
	le.PutUint32(b[p+4:], count)
	le.PutUint32(b[p+8:], val)
	return b
}

// allocated is how many bytes f allocates on the heap.
func allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestDNGTagCounts: a tag's count is bounded by the file before anything
// is allocated for it, and info shows a few values of a long tag.
func TestDNGTagCounts(t *testing.T) {
	d := testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2, black: []uint32{1}, activeArea: []uint32{0, 0, 6, 8}}
	small := d.build(make([]uint16, 8*6))
	const n = 4_000_000
	grow := func(b []byte) []byte { return append(b, make([]byte, n+64)...) }
	at := uint32(len(small) + 8)

	black := grow(setEntry(small, tagBlackLevel, 1, n, at))
	var kv [][2]string
	var err error
	if got := allocated(func() { kv, err = DescribeDNG(black) }); got > 1<<20 {
		t.Errorf("describing a %d-value BlackLevel allocated %d bytes", n, got)
	}
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range kv {
		if e[0] == "black_level" {
			found = true
			if e[1] != "0, 0, 0, … (4,000,000 values)" {
				t.Errorf("black_level = %q", e[1])
			}
		}
	}
	if !found {
		t.Error("no black_level")
	}
	if got := allocated(func() { _, _, err = DecodeDNG(black) }); err != nil || got > 1<<20 {
		t.Errorf("decoding: %v, %d bytes allocated", err, got)
	}

	for _, c := range []struct {
		tag  uint16
		typ  uint16
		want string
	}{
		{tagStripOffsets, 4, "1,000,000 strip offsets and 3 strip byte counts"},
		{tagStripByteCounts, 1, "strip byte counts are of TIFF type 1"},
		{tagCFAPattern, 1, "CFAPattern has 4,000,000 values (at most 256 make sense)"},
		{tagBitsPerSample, 3, "BitsPerSample has 2,000,000 values (at most 1 make sense)"},
		{tagActiveArea, 4, "ActiveArea has 1,000,000 values (at most 4 make sense)"},
	} {
		count := uint32(n / tiffTypeSize[c.typ])
		b := grow(setEntry(small, c.tag, c.typ, count, at))
		var err error
		got := allocated(func() {
			_, _, err = DecodeDNG(b)
			if err == nil {
				_, err = DNGCFA(b)
			}
		})
		if got > 1<<20 {
			t.Errorf("tag %d of %d values: %d bytes allocated", c.tag, count, got)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("tag %d of %d values: got %v, want %q", c.tag, count, err, c.want)
		}
	}
}

// TestDNGGeometry: an ActiveArea or DefaultCrop beyond the image or
// inverted is refused.
func TestDNGGeometry(t *testing.T) {
	s := make([]uint16, 8*6)
	for _, c := range []struct {
		area, origin, size []uint32
		want               string
	}{
		{[]uint32{0, 0, 6, 8}, nil, nil, ""},
		{[]uint32{1, 2, 5, 8}, []uint32{1, 1}, []uint32{5, 3}, ""},
		{[]uint32{0, 0, 8, 8}, nil, nil, "ActiveArea top 0, left 0, bottom 8, right 8 lies beyond the 8x6 image"},
		{[]uint32{0, 0, 6, 9}, nil, nil, "lies beyond the 8x6 image"},
		{[]uint32{4, 0, 2, 8}, nil, nil, "ActiveArea top 4, left 0, bottom 2, right 8 is inverted or empty"},
		{[]uint32{0, 5, 6, 5}, nil, nil, "is inverted or empty"},
		{[]uint32{1, 2, 5, 8}, []uint32{1, 1}, []uint32{6, 3}, "DefaultCrop origin 1,1, size 6,3 lies beyond the 6x4 active area"},
		{nil, []uint32{0, 0}, []uint32{8, 7}, "lies beyond the 8x6 active area"},
		{nil, []uint32{0, 0}, []uint32{0, 6}, "or is empty"},
	} {
		d := testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2, activeArea: c.area, cropOrigin: c.origin, cropSize: c.size}
		_, _, err := DecodeDNG(d.build(s))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("area %v crop %v %v: %v", c.area, c.origin, c.size, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("area %v crop %v %v: got %v, want %q", c.area, c.origin, c.size, err, c.want)
		}
	}
}

// TestDNGOverlap: strips that share bytes with each other, the header or
// an IFD are refused; strips in any order that do not are read.
func TestDNGOverlap(t *testing.T) {
	le := binary.LittleEndian
	s := make([]uint16, 8*6)
	for i := range s {
		s[i] = uint16(i)
	}
	b := testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2}.build(s)
	offs := findTagVal(b, tagStripOffsets)
	strip := func(i int) uint32 { return le.Uint32(b[offs+4*i:]) }
	ifd := le.Uint32(b[4:])
	patch := func(vals ...uint32) []byte {
		c := append([]byte(nil), b...)
		for i, v := range vals {
			le.PutUint32(c[offs+4*i:], v)
		}
		return c
	}
	for _, c := range []struct {
		name string
		file []byte
		want string
	}{
		{"three at one offset", patch(strip(0), strip(0), strip(0)), "strip 0 and strip 1 overlap"},
		{"last on the first", patch(strip(0), strip(1), strip(0)+8), "strip 0 and strip 2 overlap"},
		{"on the header", patch(0), "strip 0 (bytes 0 to 32 of the file) overlaps the TIFF header (bytes 0 to 8)"},
		{"on the IFD", patch(strip(0), strip(1), ifd), "strip 2 (bytes"},
		{"backwards", nil, ""},
	} {
		if c.file == nil {
			// The strips' data stored last to first: no overlap.
			c.file = append([]byte(nil), b...)
			for i := 0; i < 3; i++ {
				copy(c.file[strip(0)+32*uint32(2-i):], b[strip(i):strip(i)+32])
				le.PutUint32(c.file[offs+4*i:], strip(0)+32*uint32(2-i))
			}
		}
		_, data, err := DecodeDNG(c.file)
		switch {
		case c.want == "":
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			} else if got := le16(data); got[47] != 47 || got[16] != 16 {
				t.Errorf("%s: read wrong samples", c.name)
			}
		case err == nil || !strings.Contains(err.Error(), c.want):
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
	if !strings.Contains(fmt.Sprint(DecodeDNG(patch(strip(0), strip(1), ifd))), "overlaps IFD 0") {
		t.Error("the IFD is not named")
	}
}

// TestDNGPlaneColor: a CFAPattern value's position in CFAPlaneColor is
// its plane, an RGB sensor's planes being red, green, blue in order;
// other plane colours name themselves; without the tag the values are
// the TIFF/EP colour codes.
func TestDNGPlaneColor(t *testing.T) {
	s := make([]uint16, 8*6)
	for _, c := range []struct {
		pattern, planes []byte
		cfa, info       string
	}{
		{[]byte{0, 1, 1, 2}, []byte{2, 1, 0}, "bggr", "BG/GR (2x2)"},
		{[]byte{0, 1, 1, 2}, []byte{0, 1, 2}, "rggb", "RG/GB (2x2)"},
		{[]byte{2, 1, 1, 0}, []byte{2, 1, 0}, "rggb", "RG/GB (2x2)"},
		{[]byte{0, 1, 2, 0}, []byte{1, 0, 2}, "grbg", "GR/BG (2x2)"},
		{[]byte{2, 1, 0, 2}, []byte{0, 2, 1}, "gbrg", "GB/RG (2x2)"},
		// Plane colours 1, 2, 0: a value's position is its plane, and
		// planes 0, 1, 2 are red, green, blue (as LibRaw and dcraw read it).
		{[]byte{1, 2, 2, 0}, []byte{1, 2, 0}, "rggb", "RG/GB (2x2)"},
		{[]byte{0, 2, 2, 1}, []byte{1, 2, 0}, "bggr", "BG/GR (2x2)"},
		{[]byte{3, 5, 1, 4}, []byte{3, 5, 1, 4}, "error: a 2x2 CFA pattern CY/GM is not a Bayer pattern (RGGB, BGGR, GRBG, GBRG) but a mosaic of cyan, yellow, green, magenta", "CY/GM (2x2)"},
		{[]byte{0, 1, 1, 3}, []byte{0, 1, 2}, "error: CFAPattern value 3 is none of CFAPlaneColor's 3 planes (red, green, blue)", "none (CFAPattern value 3 is none"},
		{[]byte{0, 1, 1, 2}, []byte{0, 1, 7}, "error: CFAPlaneColor colour 7 is not a CFA colour", "none (CFAPlaneColor colour 7"},
	} {
		d := testDNG{w: 8, h: 6, spp: 1, bps: 16, compression: 1, rps: 2, pattern: c.pattern,
			extra: []tiffTestEntry{{tagCFAPlaneColor, 1, uint32(len(c.planes)), c.planes}}}
		b := d.build(s)
		got, err := DNGCFA(b)
		if err != nil {
			got = "error: " + strings.TrimPrefix(err.Error(), "dng: ")
		}
		if !strings.HasPrefix(got, c.cfa) {
			t.Errorf("pattern %v planes %v: cfa %q, want %q", c.pattern, c.planes, got, c.cfa)
		}
		kv, err := DescribeDNG(b)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range kv {
			if e[0] == "cfa_pattern" && !strings.HasPrefix(e[1], c.info) {
				t.Errorf("pattern %v planes %v: info %q, want %q", c.pattern, c.planes, e[1], c.info)
			}
		}
	}
}

// TestDNGManyStripsBounded: a million one-row strips stored out of file
// order are checked for overlaps and decoded with memory for the image
// and a bitmap of the file, nothing a strip (an error slot a strip and a
// sort index took 20 MB here).
func TestDNGManyStripsBounded(t *testing.T) {
	const h = 1 << 20
	b := testDNG{w: 1, h: h, spp: 1, bps: 8, compression: 1, rps: 1}.build(make([]uint16, h))
	offs := findTagVal(b, tagStripOffsets)
	le := binary.LittleEndian
	for i, j := 0, h-1; i < j; i, j = i+1, j-1 { // last to first
		a, z := le.Uint32(b[offs+4*i:]), le.Uint32(b[offs+4*j:])
		le.PutUint32(b[offs+4*i:], z)
		le.PutUint32(b[offs+4*j:], a)
	}
	var err error
	got := allocated(func() { _, _, err = DecodeDNG(b) })
	if err != nil {
		t.Fatal(err)
	}
	if limit := uint64(2*h + len(b)/8 + 1<<20); got > limit {
		t.Errorf("decoding %d strips allocated %d bytes, more than %d", h, got, limit)
	}
	// Two of them at one offset: refused, naming both.
	le.PutUint32(b[offs+4*7:], le.Uint32(b[offs+4*3:]))
	if _, _, err := DecodeDNG(b); err == nil || !strings.Contains(err.Error(), "strip 3 and strip 7 overlap") {
		t.Errorf("got %v", err)
	}
}
