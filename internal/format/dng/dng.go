package dng

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
)

// DNG camera raw files as tensors (SPEC, Formats, dng), read only.
//
// A DNG is a TIFF file with a DNGVersion tag in IFD 0. Its raw image is
// the IFD whose NewSubFileType is 0: IFD 0 itself, or, as cameras write
// it, a SubIFD behind a preview. A CFA image (PhotometricInterpretation
// 32803) is read as uint16 [H, W], the mosaic; a LinearRaw image (34892)
// as uint16 [H, W, C]. The tensor is the whole stored image, the masked
// margins outside ActiveArea included, as LibRaw's unprocessed_raw writes
// it; nothing is scaled, black-subtracted, linearized or cropped. Samples
// of 8 to 16 bits, packed depths (10, 12, 14) unpacked; strips or tiles;
// uncompressed (1) or lossless JPEG (7, ljpeg.go).
//
// Sizes are checked against the file before anything is allocated: the
// strips or tiles must cover the image, lie inside the file and not claim
// more bytes together than the file has, so a header claiming 10^10
// pixels over a few bytes is refused at once.

// KindDNG is a DNG camera raw file (dng.go): read only.
const KindDNG format.Kind = "dng"

// SniffDNG reports whether b starts a TIFF file whose IFD 0 (when it lies
// inside b) has a DNGVersion tag: a plain TIFF is not a DNG.
func SniffDNG(b []byte) bool {
	bo, ok := sniffTIFFHeader(b)
	if !ok {
		return false
	}
	off := uint64(bo.Uint32(b[4:]))
	if off < 8 || off+2 > uint64(len(b)) {
		return false
	}
	n := uint64(bo.Uint16(b[off:]))
	for i := uint64(0); i < n; i++ {
		p := off + 2 + 12*i
		if p+12 > uint64(len(b)) {
			return false
		}
		if bo.Uint16(b[p:]) == tagDNGVersion {
			return true
		}
	}
	return false
}

// dngImage is the raw image of a DNG file, its geometry checked.
type dngImage struct {
	f           *tiffFile
	ifd         *tiffIFD
	w, h, spp   int
	bps         int
	compression int
	photometric int
	tiled       bool
	tw, th      int // tile size; for strips the image width and RowsPerStrip
	offsets     tiffInts
	counts      tiffInts
}

// tiffInts are an unsigned integer entry's values (SHORT, LONG or
// LONG8), read where they lie in the file, one at a time: a hostile file
// claims millions of strips, and a copy as []uint64 would take up to four
// times the bytes they have there.
type tiffInts struct {
	f *tiffFile
	e tiffEntry
}

func (v tiffInts) len() int { return int(v.e.count) }

func (v tiffInts) at(i int) uint64 {
	x, _ := v.f.at(v.e, i) // unsigned types only (chunks): never an error
	return x
}

const (
	photometricCFA       = 32803
	photometricLinearRaw = 34892
)

// maxDNGPixels bounds the samples of one image (2^34: 32 GiB of uint16).
const maxDNGPixels = 1 << 34

// compressionNames() names the TIFF/DNG compressions depthspace refuses.
var compressionNames = sync.OnceValue(func() map[uint64]string {
	return map[uint64]string{
		2: "CCITT Group 3", 3: "CCITT T.4", 4: "CCITT T.6", 5: "LZW", 6: "old-style JPEG",
		8: "deflate", 9: "VC-5 (GoPro)", 32773: "PackBits", 32946: "deflate", 34892: "lossy JPEG",
		52546: "JPEG XL",
	}
})

// openDNG parses a DNG file and finds and checks its raw image.
func openDNG(b []byte) (*dngImage, error) {
	f, err := parseTIFF(b)
	if err != nil {
		return nil, err
	}
	if !f.ifds[0].has(tagDNGVersion) {
		return nil, tiffError("a TIFF file without a DNGVersion tag: not a DNG")
	}
	// The raw image: the first IFD with NewSubFileType 0 that is CFA or
	// LinearRaw (a full-size preview can have NewSubFileType 0 too).
	var raw, main *tiffIFD
	for _, d := range f.ifds {
		t, err := f.uint(d, tagNewSubFileType, "NewSubFileType", 0)
		if err != nil {
			return nil, err
		}
		if t != 0 {
			continue
		}
		if main == nil {
			main = d
		}
		p, err := f.uint(d, tagPhotometric, "PhotometricInterpretation", 0)
		if err != nil {
			return nil, err
		}
		if p == photometricCFA || p == photometricLinearRaw {
			raw = d
			break
		}
	}
	if raw == nil {
		if main == nil {
			return nil, tiffError("no raw image: no IFD has NewSubFileType 0")
		}
		p, _ := f.uint(main, tagPhotometric, "PhotometricInterpretation", 0)
		return nil, tiffError("the main image (%s) has PhotometricInterpretation %d, not CFA (32803) or LinearRaw (34892)", main.where, p)
	}
	im := &dngImage{f: f, ifd: raw}
	get := func(tag uint16, name string, def uint64) int {
		if err != nil {
			return 0
		}
		var v uint64
		v, err = f.uint(raw, tag, name, def)
		if err == nil && v > 1<<31-1 {
			err = tiffError("%s: %s %d is too large", raw.where, name, v)
		}
		return int(v)
	}
	im.w = get(tagImageWidth, "ImageWidth", 0)
	im.h = get(tagImageLength, "ImageLength", 0)
	im.spp = get(tagSamplesPerPixel, "SamplesPerPixel", 1)
	im.compression = get(tagCompression, "Compression", 1)
	im.photometric = get(tagPhotometric, "PhotometricInterpretation", 0)
	planar := get(tagPlanarConfig, "PlanarConfiguration", 1)
	sampleFormat := get(tagSampleFormat, "SampleFormat", 1)
	if err != nil {
		return nil, err
	}
	where := raw.where
	switch {
	case im.w == 0 || im.h == 0:
		return nil, tiffError("%s: the raw image is %dx%d", where, im.w, im.h)
	case im.spp < 1 || im.spp > 16:
		return nil, tiffError("%s: SamplesPerPixel %d", where, im.spp)
	case im.photometric == photometricCFA && im.spp != 1:
		return nil, tiffError("%s: a CFA image with %d samples per pixel (want 1)", where, im.spp)
	case im.spp > 1 && planar != 1:
		return nil, tiffError("%s: PlanarConfiguration %d (separate planes) is not supported; depthspace reads interleaved samples (1)", where, planar)
	case sampleFormat == 3:
		return nil, tiffError("%s: floating-point samples (SampleFormat 3) are not supported; depthspace reads unsigned integer samples", where)
	case sampleFormat != 1:
		return nil, tiffError("%s: SampleFormat %d is not supported; depthspace reads unsigned integer samples (1)", where, sampleFormat)
	case uint64(im.w)*uint64(im.h)*uint64(im.spp) > maxDNGPixels:
		return nil, tiffError("%s: %dx%dx%d samples is too large", where, im.w, im.h, im.spp)
	}
	bps, err := f.list(raw, tagBitsPerSample, "BitsPerSample", im.spp)
	if err != nil {
		return nil, err
	}
	if len(bps) == 0 {
		bps = []uint64{1}
	}
	for _, v := range bps {
		if v != bps[0] {
			return nil, tiffError("%s: BitsPerSample %v differ between samples", where, bps)
		}
	}
	if bps[0] < 8 || bps[0] > 16 {
		return nil, tiffError("%s: %d-bit samples; depthspace reads 8 to 16 bits", where, bps[0])
	}
	im.bps = int(bps[0])
	switch im.compression {
	case 1, 7:
	default:
		name := compressionNames()[uint64(im.compression)]
		if name == "" {
			name = "unknown"
		}
		return nil, tiffError("%s: compression %d (%s) is not supported; depthspace reads uncompressed (1) and lossless JPEG (7) DNGs", where, im.compression, name)
	}
	if err := im.chunks(); err != nil {
		return nil, err
	}
	if err := im.geometry(); err != nil {
		return nil, err
	}
	return im, nil
}

// geometry checks ActiveArea and DefaultCrop against the image before
// anything uses them: an area beyond the image or inverted, a crop
// beyond the area or empty, is refused (the DNG specification keeps
// them inside; a reader trusting them would index outside the image).
func (im *dngImage) geometry() error {
	f, d, where := im.f, im.ifd, im.ifd.where
	a, set, err := im.activeArea()
	if err != nil {
		return err
	}
	if set {
		top, left, bottom, right := a[0], a[1], a[2], a[3]
		switch {
		case top >= bottom || left >= right:
			return tiffError("%s: ActiveArea top %d, left %d, bottom %d, right %d is inverted or empty", where, top, left, bottom, right)
		case bottom > uint64(im.h) || right > uint64(im.w):
			return tiffError("%s: ActiveArea top %d, left %d, bottom %d, right %d lies beyond the %dx%d image", where, top, left, bottom, right, im.w, im.h)
		}
	}
	aw, ah := float64(a[3]-a[1]), float64(a[2]-a[0])
	read := func(tag uint16, name string) ([2]float64, bool, error) {
		e, ok := d.entries[tag]
		if !ok {
			return [2]float64{}, false, nil
		}
		if e.count != 2 {
			return [2]float64{}, false, tiffError("%s: %s has %s values (want horizontal, vertical)", where, name, thousands(uint64(e.count)))
		}
		x, okx := f.float(e, 0)
		y, oky := f.float(e, 1)
		if !okx || !oky {
			return [2]float64{}, false, tiffError("%s: %s is not two numbers", where, name)
		}
		return [2]float64{x, y}, true, nil
	}
	o, oSet, err := read(tagDefaultCropOrigin, "DefaultCropOrigin")
	if err != nil {
		return err
	}
	sz, szSet, err := read(tagDefaultCropSize, "DefaultCropSize")
	if err != nil {
		return err
	}
	if !szSet {
		sz = [2]float64{aw - o[0], ah - o[1]}
	}
	if (oSet || szSet) && !(o[0] >= 0 && o[1] >= 0 && sz[0] > 0 && sz[1] > 0 && o[0]+sz[0] <= aw && o[1]+sz[1] <= ah) {
		return tiffError("%s: DefaultCrop origin %g,%g, size %g,%g lies beyond the %gx%g active area, or is empty", where, o[0], o[1], sz[0], sz[1], aw, ah)
	}
	return nil
}

// chunks reads the strips or tiles and checks that they cover the image
// and lie inside the file.
func (im *dngImage) chunks() error {
	f, d, where := im.f, im.ifd, im.ifd.where
	var err error
	offTag, cntTag, what := uint16(tagStripOffsets), uint16(tagStripByteCounts), "strips"
	var n uint64
	if d.has(tagTileOffsets) || d.has(tagTileWidth) {
		im.tiled, offTag, cntTag, what = true, tagTileOffsets, tagTileByteCounts, "tiles"
		tw, err1 := f.uint(d, tagTileWidth, "TileWidth", 0)
		th, err2 := f.uint(d, tagTileLength, "TileLength", 0)
		if err1 != nil || err2 != nil {
			return tiffError("%s: bad TileWidth or TileLength", where)
		}
		if tw == 0 || th == 0 || tw > 1<<20 || th > 1<<20 {
			return tiffError("%s: tiles of %dx%d", where, tw, th)
		}
		im.tw, im.th = int(tw), int(th)
		n = uint64((im.w+im.tw-1)/im.tw) * uint64((im.h+im.th-1)/im.th)
	} else {
		rps, err := f.uint(d, tagRowsPerStrip, "RowsPerStrip", 1<<32-1)
		if err != nil {
			return err
		}
		if rps == 0 {
			return tiffError("%s: RowsPerStrip is 0", where)
		}
		im.tw, im.th = im.w, int(min(rps, uint64(im.h)))
		n = uint64((im.h + im.th - 1) / im.th)
	}
	// The counts first, the values read in place after: nothing is
	// allocated for what the tags claim.
	ints := func(tag uint16, name string) (tiffInts, error) {
		e := d.entries[tag]
		switch e.typ {
		case 0, 3, 4, 16:
		default:
			return tiffInts{}, tiffError("%s: %s are of TIFF type %d, not SHORT, LONG or LONG8", where, name, e.typ)
		}
		return tiffInts{f: f, e: e}, nil
	}
	if im.offsets, err = ints(offTag, what[:len(what)-1]+" offsets"); err != nil {
		return err
	}
	if im.counts, err = ints(cntTag, what[:len(what)-1]+" byte counts"); err != nil {
		return err
	}
	if uint64(im.offsets.len()) != n || uint64(im.counts.len()) != n {
		return tiffError("%s: %s %s offsets and %s %s byte counts, but a %dx%d image in %s of %dx%d needs %s: the %s do not cover the image",
			where, thousands(uint64(im.offsets.len())), what[:len(what)-1], thousands(uint64(im.counts.len())), what[:len(what)-1], im.w, im.h, what, im.tw, im.th, thousands(n), what)
	}
	var total uint64
	for i := range im.offsets.len() {
		o, c := im.offsets.at(i), im.counts.at(i)
		if o > uint64(len(f.b)) || c > uint64(len(f.b))-o {
			return tiffError("%s: %s %d (%d bytes at offset %d) runs past the end of the file (%d bytes)", where, what[:len(what)-1], i, c, o, len(f.b))
		}
		total += c
	}
	// Chunks of an honest file do not overlap: together they fit in it.
	if total > uint64(len(f.b)) {
		return tiffError("%s: the %s claim %d bytes together but the file has %d", where, what, total, len(f.b))
	}
	if err := im.overlaps(what); err != nil {
		return err
	}
	rowBytes := (uint64(im.tw)*uint64(im.spp)*uint64(im.bps) + 7) / 8
	for i := range im.offsets.len() {
		_, _, _, ch := im.chunk(i)
		if im.tiled {
			ch = im.th // a tile is stored whole
		}
		samples := uint64(im.tw) * uint64(ch) * uint64(im.spp)
		switch im.compression {
		case 1:
			if need := rowBytes * uint64(ch); im.counts.at(i) < need {
				return tiffError("%s: %s %d has %d bytes but %d rows of %d bytes need %d", where, what[:len(what)-1], i, im.counts.at(i), ch, rowBytes, need)
			}
		case 7:
			// At least one bit a sample (a Huffman code is 1 to 16 bits).
			if samples > 8*im.counts.at(i)+64 {
				return tiffError("%s: %s %d claims %d samples but has %d bytes of lossless JPEG: it cannot hold them", where, what[:len(what)-1], i, samples, im.counts.at(i))
			}
		}
	}
	return nil
}

// overlaps refuses strips or tiles that share bytes with each other, with
// the TIFF header or with an IFD: cameras never write them, and a reader
// taking them would decode the file's structure as pixels. Chunks in
// file order (as cameras write them) are checked as they come, with
// nothing allocated; others by marking their bytes in a bitmap of the
// file (an eighth of its size: their bytes together fit in the file,
// chunks() checked), the first byte found marked naming the overlap.
func (im *dngImage) overlaps(what string) error {
	n := im.offsets.len()
	name := what[:len(what)-1]
	type span struct {
		off, end uint64
		where    string
	}
	fixed := []span{{0, 8, "the TIFF header"}}
	for _, d := range im.f.ifds {
		fixed = append(fixed, span{uint64(d.off), uint64(d.off + d.size), d.where})
	}
	sort.Slice(fixed, func(a, b int) bool { return fixed[a].off < fixed[b].off })
	chunk := func(i int) span {
		o := im.offsets.at(i)
		return span{o, o + im.counts.at(i), ""}
	}
	// which names what chunk i's bytes share: an earlier chunk, the
	// header or an IFD.
	which := func(i int) error {
		c := chunk(i)
		for j := 0; j < n; j++ {
			if o := chunk(j); j != i && o.off < o.end && o.off < c.end && c.off < o.end {
				a, b := min(i, j), max(i, j)
				ca, cb := chunk(a), chunk(b)
				return tiffError("%s: %s %d and %s %d overlap (bytes %d to %d and %d to %d of the file)", im.ifd.where, name, a, name, b, ca.off, ca.end, cb.off, cb.end)
			}
		}
		for _, x := range fixed {
			if x.off < c.end && c.off < x.end {
				return tiffError("%s: %s %d (bytes %d to %d of the file) overlaps %s (bytes %d to %d)", im.ifd.where, name, i, c.off, c.end, x.where, x.off, x.end)
			}
		}
		return tiffError("%s: %s %d overlaps another part of the file", im.ifd.where, name, i)
	}
	// In file order: each chunk after the one before, none over the
	// header or an IFD (a pass along the sorted fixed spans).
	inOrder, last, k := true, uint64(0), 0
	for i := 0; i < n && inOrder; i++ {
		c := chunk(i)
		if c.off == c.end {
			continue
		}
		if c.off < last {
			inOrder = false
			break
		}
		for k < len(fixed) && fixed[k].end <= c.off {
			k++
		}
		if k < len(fixed) && fixed[k].off < c.end {
			return which(i)
		}
		last = c.end
	}
	if inOrder {
		return nil
	}
	marked := make([]uint64, (len(im.f.b)+63)/64)
	mark := func(off, end uint64) bool { // false if a byte was marked already
		for p := off; p < end; p++ {
			if marked[p/64]&(1<<(p%64)) != 0 {
				return false
			}
			marked[p/64] |= 1 << (p % 64)
		}
		return true
	}
	for _, x := range fixed {
		for p := x.off; p < min(x.end, uint64(len(im.f.b))); p++ {
			marked[p/64] |= 1 << (p % 64)
		}
	}
	for i := range n {
		if c := chunk(i); !mark(c.off, c.end) {
			return which(i)
		}
	}
	return nil
}

// chunk is where strip or tile i lies in the image: its first column and
// row, and the columns and rows of it inside the image.
func (im *dngImage) chunk(i int) (x0, y0, cw, ch int) {
	if !im.tiled {
		y0 = i * im.th
		return 0, y0, im.w, min(im.th, im.h-y0)
	}
	across := (im.w + im.tw - 1) / im.tw
	x0, y0 = (i%across)*im.tw, (i/across)*im.th
	return x0, y0, min(im.tw, im.w-x0), min(im.th, im.h-y0)
}

// shape is the tensor's shape: [H, W] for CFA, [H, W, C] for LinearRaw.
func (im *dngImage) shape() []int {
	if im.photometric == photometricCFA {
		return []int{im.h, im.w}
	}
	return []int{im.h, im.w, im.spp}
}

// DecodeDNG reads a DNG file's raw image into a C-order little-endian
// uint16 tensor.
func DecodeDNG(b []byte) (format.Header, []byte, error) {
	im, err := openDNG(b)
	if err != nil {
		return format.Header{}, nil, err
	}
	u16, _ := format.ParseDType("<u2")
	if data := im.inPlace(); data != nil {
		return format.Header{DType: u16, Shape: im.shape()}, data, nil
	}
	out := make([]byte, 2*im.w*im.h*im.spp)
	n := im.offsets.len()
	workers := min(runtime.GOMAXPROCS(0), n)
	if len(out) < 1<<20 {
		workers = 1
	}
	// The first chunk's error in the file's order, of those decoded: one
	// error kept, not one a chunk (a hostile file has millions).
	var next sync.Mutex
	k, failed, failedAt := 0, error(nil), n
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				i := k
				k++
				next.Unlock()
				if i >= n {
					return
				}
				if err := im.decodeChunkSafe(i, out); err != nil {
					next.Lock()
					if i < failedAt {
						failed, failedAt = err, i
					}
					k = n // stop the others
					next.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if failed != nil {
		return format.Header{}, nil, failed
	}
	return format.Header{DType: u16, Shape: im.shape()}, out, nil
}

// inPlace is the image's bytes in the file when they are already the
// tensor's (16-bit little-endian samples in strips that follow each other
// with no gap): the mapping itself, not a copy. nil otherwise.
func (im *dngImage) inPlace() []byte {
	if im.compression != 1 || im.bps != 16 || im.f.bo != binary.LittleEndian || im.tiled {
		return nil
	}
	stripBytes := uint64(2 * im.w * im.spp * im.th)
	for i := range im.offsets.len() {
		if im.offsets.at(i) != im.offsets.at(0)+uint64(i)*stripBytes {
			return nil
		}
	}
	start, size := im.offsets.at(0), uint64(2*im.w*im.h*im.spp)
	if start+size > uint64(len(im.f.b)) {
		return nil
	}
	return im.f.b[start : start+size : start+size]
}

// decodeChunkSafe is decodeChunk on a worker goroutine, where a panic
// (a decoder bug) would kill the process with a stack trace past run's
// recover: it becomes this chunk's one-line error.
func (im *dngImage) decodeChunkSafe(i int, out []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = tiffError("internal error decoding strip or tile %d: %v (please report this)", i, r)
		}
	}()
	return im.decodeChunk(i, out)
}

// decodeChunk decodes strip or tile i into out.
func (im *dngImage) decodeChunk(i int, out []byte) error {
	x0, y0, cw, ch := im.chunk(i)
	data := im.f.b[im.offsets.at(i) : im.offsets.at(i)+im.counts.at(i)]
	spp := im.spp
	stride := 2 * im.w * spp // output bytes per image row
	if im.compression == 7 {
		what := "strip"
		if im.tiled {
			what = "tile"
		}
		// The samples come in raster order of the tile (or strip), tw
		// pixels of spp samples a row, whatever the JPEG's own width and
		// component count: dcraw's and the DNG SDK's layout.
		rowSamples := im.tw * spp
		row, col := 0, 0
		sink := func(s []uint16) {
			for len(s) > 0 {
				n := min(len(s), rowSamples-col)
				if row < ch {
					vis := max(0, min(n, cw*spp-col))
					if vis > 0 {
						o := out[(y0+row)*stride+2*(x0*spp+col):]
						for j, v := range s[:vis] {
							binary.LittleEndian.PutUint16(o[2*j:], v)
						}
					}
				}
				s = s[n:]
				col += n
				if col == rowSamples {
					row, col = row+1, 0
				}
			}
		}
		maxRows := im.th
		fr, err := parseLJPEG(data)
		if err != nil {
			return tiffError("%s %d: %v", what, i, err)
		}
		total := uint64(fr.w) * uint64(fr.h) * uint64(fr.nc)
		if total%uint64(rowSamples) != 0 || total/uint64(rowSamples) < uint64(ch) || total/uint64(rowSamples) > uint64(maxRows) {
			return tiffError("%s %d: the lossless JPEG is %dx%d with %d components (%d samples), which is not %d to %d rows of %d pixels of %d samples",
				what, i, fr.w, fr.h, fr.nc, total, ch, maxRows, im.tw, spp)
		}
		if err := fr.decode(sink); err != nil {
			return tiffError("%s %d: %v", what, i, err)
		}
		return nil
	}
	// Uncompressed: rows of tw pixels, each starting on a byte.
	rowBytes := (im.tw*spp*im.bps + 7) / 8
	bo := im.f.bo
	for r := 0; r < ch; r++ {
		src := data[r*rowBytes : (r+1)*rowBytes]
		dst := out[(y0+r)*stride+2*x0*spp : (y0+r)*stride+2*(x0+cw)*spp]
		ns := cw * spp
		switch im.bps {
		case 16:
			if bo == binary.LittleEndian {
				copy(dst, src[:2*ns])
			} else {
				for j := 0; j < ns; j++ {
					dst[2*j], dst[2*j+1] = src[2*j+1], src[2*j]
				}
			}
		case 8:
			for j := 0; j < ns; j++ {
				dst[2*j], dst[2*j+1] = src[j], 0
			}
		default:
			unpackBits(dst, src, ns, im.bps)
		}
	}
	return nil
}

// unpackBits reads n samples of bps bits, packed most significant bit
// first (DNG's rule for depths other than 8 and 16, in either byte
// order), into little-endian uint16s.
func unpackBits(dst, src []byte, n, bps int) {
	var acc uint64
	nb := 0
	p := 0
	mask := uint64(1)<<bps - 1
	for j := 0; j < n; j++ {
		for nb < bps {
			acc = acc<<8 | uint64(src[p])
			p++
			nb += 8
		}
		nb -= bps
		v := acc >> nb & mask
		dst[2*j], dst[2*j+1] = byte(v), byte(v>>8)
	}
}

// colorLetters are the CFA colour codes of TIFF/EP and DNG, and
// colorNames their names.
const colorLetters = "RGBCMYW"

var colorNames = [...]string{"red", "green", "blue", "cyan", "magenta", "yellow", "white"}

// maxCFADim bounds each side of a CFA pattern (X-Trans's 6x6 is the
// largest cameras use).
const maxCFADim = 16

// cfaPattern reads the raw image's CFA pattern: its repeat size and the
// colour letters row by row, as stored (relative to the ActiveArea's
// corner), read as LibRaw and dcraw read them. A CFAPattern value is
// one of CFAPlaneColor's (default 0, 1, 2), and its position there is
// the pixel's plane: the three planes of an RGB sensor are red, green and
// blue in that order (LibRaw's 4channels writes them so), so with plane
// colours 2, 1, 0 the pattern 0, 1, 1, 2 is BGGR, and with 1, 2, 0 the
// pattern 1, 2, 2, 0 is RGGB. Plane colours that are not the three of
// RGB (CYGM: 3, 5, 1, 4) name the colours themselves. Without
// CFAPlaneColor the values are TIFF/EP's colour codes (0 red … 6 white).
func (im *dngImage) cfaPattern() (rows, cols int, letters string, err error) {
	f, d := im.f, im.ifd
	if im.photometric != photometricCFA {
		return 0, 0, "", tiffError("the raw image is LinearRaw (PhotometricInterpretation 34892): it has no CFA pattern")
	}
	dim, err := f.list(d, tagCFARepeatDim, "CFARepeatPatternDim", 2)
	if err != nil {
		return 0, 0, "", err
	}
	pat, err := f.list(d, tagCFAPattern, "CFAPattern", maxCFADim*maxCFADim)
	if err != nil {
		return 0, 0, "", err
	}
	planes, err := f.list(d, tagCFAPlaneColor, "CFAPlaneColor", len(colorLetters))
	if err != nil {
		return 0, 0, "", err
	}
	if planes == nil {
		// DNG's default, 0, 1, 2, extended to the TIFF/EP colour codes
		// that CFAPattern's values are without it (3 cyan ... 6 white).
		planes = []uint64{0, 1, 2, 3, 4, 5, 6}
	}
	// An RGB sensor's three planes, in any order.
	rgb := len(planes) == 3 && slices.Contains(planes, 0) && slices.Contains(planes, 1) && slices.Contains(planes, 2)
	for _, c := range planes {
		if c >= uint64(len(colorLetters)) {
			return 0, 0, "", tiffError("CFAPlaneColor colour %d is not a CFA colour (0 to 6)", c)
		}
	}
	if pat == nil {
		return 0, 0, "", tiffError("the CFA image has no CFAPattern tag")
	}
	if dim == nil {
		dim = []uint64{2, 2}
	}
	if len(dim) != 2 || dim[0] == 0 || dim[1] == 0 || dim[0]*dim[1] != uint64(len(pat)) {
		return 0, 0, "", tiffError("CFARepeatPatternDim %v does not match the %d CFAPattern values", dim, len(pat))
	}
	var sb strings.Builder
	for _, v := range pat {
		p := slices.Index(planes, v)
		switch {
		case p < 0:
			return 0, 0, "", tiffError("CFAPattern value %d is none of CFAPlaneColor's %d planes (%s)", v, len(planes), planeList(planes))
		case rgb:
			sb.WriteByte(colorLetters[p])
		default:
			sb.WriteByte(colorLetters[v])
		}
	}
	return int(dim[0]), int(dim[1]), sb.String(), nil
}

// activeArea reads ActiveArea (top, left, bottom, right), or the whole
// image when absent.
func (im *dngImage) activeArea() ([4]uint64, bool, error) {
	a, err := im.f.list(im.ifd, tagActiveArea, "ActiveArea", 4)
	if err != nil {
		return [4]uint64{}, false, err
	}
	if a == nil {
		return [4]uint64{0, 0, uint64(im.h), uint64(im.w)}, false, nil
	}
	if len(a) != 4 {
		return [4]uint64{}, false, tiffError("ActiveArea has %d values (want top, left, bottom, right)", len(a))
	}
	return [4]uint64{a[0], a[1], a[2], a[3]}, true, nil
}

// planeList names plane colours: "red, green, blue".
func planeList(planes []uint64) string {
	names := make([]string, len(planes))
	for i, c := range planes {
		names[i] = colorNames[c]
	}
	return strings.Join(names, ", ")
}

// splitPattern writes a pattern's letters row by row, rows apart by "/".
func splitPattern(letters string, cols int) string {
	var rows []string
	for i := 0; i+cols <= len(letters); i += cols {
		rows = append(rows, letters[i:i+cols])
	}
	return strings.Join(rows, "/")
}

// DNGCFA is the 2x2 Bayer pattern at row 0, column 0 of the tensor a DNG
// file decodes to, as a --block-order name (rggb, bggr, grbg, gbrg): the
// file's CFAPattern, which starts at the ActiveArea's corner, shifted by
// the corner's offset. Other patterns are refused, by name.
func DNGCFA(b []byte) (string, error) {
	im, err := openDNG(b)
	if err != nil {
		return "", err
	}
	if im.photometric != photometricCFA {
		return "", tiffError("--block-order cfa needs a CFA pattern, and this DNG's raw image is LinearRaw (PhotometricInterpretation 34892): it has none")
	}
	if l, err := im.f.uint(im.ifd, tagCFALayout, "CFALayout", 1); err != nil || l != 1 {
		return "", tiffError("CFALayout %d (not a rectangular grid): --block-order cfa takes 2x2 Bayer patterns", l)
	}
	rows, cols, p, err := im.cfaPattern()
	if err != nil {
		return "", err
	}
	if rows != 2 || cols != 2 {
		name := fmt.Sprintf("a %dx%d CFA pattern", rows, cols)
		switch {
		case rows == 6 && cols == 6:
			name = "an X-Trans 6x6 CFA pattern"
		case rows == 4 && cols == 4 && quadBayer(p):
			name = "a quad Bayer 4x4 CFA pattern"
		}
		return "", tiffError("%s (%s); --block-order cfa takes 2x2 Bayer patterns (RGGB, BGGR, GRBG, GBRG)", name, splitPattern(p, cols))
	}
	area, _, err := im.activeArea()
	if err != nil {
		return "", err
	}
	p = shiftPattern(p, int(area[0]%2), int(area[1]%2))
	switch p {
	case "RGGB", "BGGR", "GRBG", "GBRG":
		return strings.ToLower(p), nil
	}
	if strings.Trim(p, "RGB") != "" {
		return "", tiffError("a 2x2 CFA pattern %s is not a Bayer pattern (RGGB, BGGR, GRBG, GBRG) but a mosaic of %s: --block-order cfa groups red, green, green, blue and cannot group it", splitPattern(p, 2), letterNames(p))
	}
	return "", tiffError("a 2x2 CFA pattern %s is not a Bayer pattern (RGGB, BGGR, GRBG, GBRG): --block-order cfa cannot group it", splitPattern(p, 2))
}

// letterNames names the colours of a pattern's letters, each once, in
// order: "cyan, yellow, green, magenta".
func letterNames(p string) string {
	var names []string
	seen := map[rune]bool{}
	for _, c := range p {
		if !seen[c] {
			seen[c] = true
			names = append(names, colorNames[strings.IndexRune(colorLetters, c)])
		}
	}
	return strings.Join(names, ", ")
}

// shiftPattern is a 2x2 pattern seen from dy rows and dx columns further.
func shiftPattern(p string, dy, dx int) string {
	b := make([]byte, 4)
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			b[2*i+j] = p[2*((i+dy)%2)+(j+dx)%2]
		}
	}
	return string(b)
}

// quadBayer reports whether a 4x4 pattern is 2x2 blocks of one colour.
func quadBayer(p string) bool {
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			if p[4*i+j] != p[4*(i&^1)+(j&^1)] {
				return false
			}
		}
	}
	return true
}

// DescribeDNG is what info shows of a DNG beyond the tensor: where the
// raw image is and how it is stored, the CFA pattern, bit depth, black
// and white levels, ActiveArea and DefaultCrop. Keys are JSON names.
func DescribeDNG(b []byte) ([][2]string, error) {
	im, err := openDNG(b)
	if err != nil {
		return nil, err
	}
	f, d := im.f, im.ifd
	var out [][2]string
	add := func(k, v string) { out = append(out, [2]string{k, v}) }
	add("raw_image", d.where)
	if im.photometric == photometricCFA {
		add("photometric", "CFA (32803)")
	} else {
		add("photometric", "LinearRaw (34892)")
	}
	add("compression", map[int]string{1: "none (1)", 7: "lossless JPEG (7)"}[im.compression])
	plural := map[bool]string{true: "s"}[im.offsets.len() != 1]
	if im.tiled {
		add("storage", fmt.Sprintf("%d tile%s of %dx%d", im.offsets.len(), plural, im.tw, im.th))
	} else {
		add("storage", fmt.Sprintf("%d strip%s of %d rows", im.offsets.len(), plural, im.th))
	}
	add("bit_depth", strconv.Itoa(im.bps))
	if im.photometric == photometricCFA {
		if rows, cols, p, err := im.cfaPattern(); err != nil {
			add("cfa_pattern", "none ("+strings.TrimPrefix(err.Error(), "dng: ")+")")
		} else {
			s := fmt.Sprintf("%s (%dx%d)", splitPattern(p, cols), rows, cols)
			if o, err := DNGCFA(b); err == nil && strings.ToUpper(o) != p {
				s += fmt.Sprintf("; %s at row 0, column 0 of the image (ActiveArea's corner is at an odd offset)", splitPattern(strings.ToUpper(o), 2))
			}
			add("cfa_pattern", s)
		}
	}
	if v := f.text(d, tagBlackLevel); v != "" {
		if r := f.text(d, tagBlackLevelRepeat); r != "" {
			v += " (repeat " + strings.ReplaceAll(r, ",", "x") + ")"
		}
		add("black_level", v)
	} else {
		add("black_level", "0 (default)")
	}
	if v := f.text(d, tagWhiteLevel); v != "" {
		add("white_level", v)
	} else {
		add("white_level", fmt.Sprintf("%d (default)", 1<<im.bps-1))
	}
	if a, ok, err := im.activeArea(); err == nil {
		s := fmt.Sprintf("top %d, left %d, bottom %d, right %d", a[0], a[1], a[2], a[3])
		if !ok {
			s += " (default: the whole image)"
		}
		add("active_area", s)
	}
	o, sz := f.text(d, tagDefaultCropOrigin), f.text(d, tagDefaultCropSize)
	if o != "" || sz != "" {
		if o == "" {
			o = "0,0"
		}
		if sz == "" {
			sz = "the active area's"
		}
		add("default_crop", "origin "+o+", size "+sz+" (in the active area)")
	}
	if d.has(tagLinearization) {
		add("linearization", "a LinearizationTable (not applied: the tensor holds the stored samples)")
	}
	return out, nil
}

func init() {
	format.Register(format.Format{Kind: KindDNG, InTar: true, Rank: 10, Noun: "a DNG file", Doc: "camera raw (DNG): the CFA mosaic as uint16 [H, W], LinearRaw as [H, W, C]; read only",
		Exts: []string{".dng"}, Sniff: SniffDNG, SniffOrder: 45, ReadOnly: true,
		Decode: func(b []byte, want *format.DType) (format.Header, []byte, string, error) {
			h, data, err := DecodeDNG(b)
			if err == nil && want != nil {
				h.DType, err = want.Reinterpret(h.DType)
			}
			return h, data, "", err
		},
		Describe: DescribeDNG,
		CFA:      DNGCFA,
	})
}
