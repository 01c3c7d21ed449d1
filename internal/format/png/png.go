package png

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/png"
	"io"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npz"
)

// KindPNG is a PNG image: uint8/uint16 [H, W] or [H, W, C].
const KindPNG format.Kind = "png"

// PNG images as tensors (SPEC, Formats, png): gray, gray+alpha, RGB and
// RGBA, 8 or 16 bits, read as uint8 / uint16 [H, W] (gray) or [H, W, C];
// palette images read as RGB, or RGBA when the palette has transparency.
// Nothing is scaled: 16-bit samples keep all 16 bits (as little-endian
// uint16, numpy's native order).
//
// Reading uses the standard library's image/png, after the header has
// been checked against the file: a PNG claims its size in its header, and
// a header claiming 10^10 pixels over a few bytes of data is refused
// before the decoder allocates anything. Writing is done here (a few
// chunks, rows with filter 0, zlib) because image/png cannot write gray
// with alpha, and would choose its own color type.

const pngMagic = "\x89PNG\r\n\x1a\n"

// maxPNGRatio bounds what zlib can inflate to from the file's bytes (see
// MaxDeflateRatio), with room for the row filter bytes.
const maxPNGRatio = npz.MaxDeflateRatio + 1

// SniffPNG reports whether b starts with PNG's signature.
func SniffPNG(b []byte) bool { return bytes.HasPrefix(b, []byte(pngMagic)) }

// pngHeader is what IHDR says.
type pngHeader struct {
	width, height int
	depth         int
	colorType     int
}

func readPNGHeader(b []byte) (pngHeader, error) {
	if !SniffPNG(b) {
		return pngHeader{}, errors.New("png: not a PNG file (no PNG signature)")
	}
	if len(b) < 33 || string(b[12:16]) != "IHDR" {
		return pngHeader{}, errors.New("png: no IHDR chunk after the signature")
	}
	h := pngHeader{
		width:     int(binary.BigEndian.Uint32(b[16:20])),
		height:    int(binary.BigEndian.Uint32(b[20:24])),
		depth:     int(b[24]),
		colorType: int(b[25]),
	}
	if crc32.ChecksumIEEE(b[12:29]) != binary.BigEndian.Uint32(b[29:33]) {
		return pngHeader{}, errors.New("png: IHDR has a bad CRC")
	}
	return h, nil
}

// channels is the tensor's channel count for a PNG color type (0 for
// gray: an [H, W] tensor); palette images are decided by their palette.
func (h pngHeader) channels() int {
	return map[int]int{0: 0, 2: 3, 4: 2, 6: 4}[h.colorType]
}

// DecodePNG reads a PNG file into a C-order tensor.
func DecodePNG(b []byte) (format.Header, []byte, error) {
	ph, err := readPNGHeader(b)
	if err != nil {
		return format.Header{}, nil, err
	}
	switch {
	case ph.colorType == 3:
	case ph.colorType != 0 && ph.colorType != 2 && ph.colorType != 4 && ph.colorType != 6:
		return format.Header{}, nil, fmt.Errorf("png: color type %d is not a PNG color type", ph.colorType)
	case ph.depth != 8 && ph.depth != 16:
		return format.Header{}, nil, fmt.Errorf("png: %d-bit samples; depthspace reads 8- and 16-bit images (1-, 2- and 4-bit gray would need scaling)", ph.depth)
	}
	if ph.width <= 0 || ph.height <= 0 {
		return format.Header{}, nil, fmt.Errorf("png: %dx%d image", ph.width, ph.height)
	}
	// What the decoder will allocate, against what the file can hold.
	bytesPer := 4 * max(ph.depth/8, 1) // the decoder's widest pixel
	if int64(ph.width)*int64(ph.height) > int64(len(b))*maxPNGRatio || int64(ph.width)*int64(ph.height) > (1<<40)/int64(bytesPer) {
		return format.Header{}, nil, fmt.Errorf("png: header claims %dx%d pixels but the file has %d bytes: it cannot hold them", ph.width, ph.height, len(b))
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return format.Header{}, nil, fmt.Errorf("png: %s", trimPNGErr(err))
	}
	W, H := ph.width, ph.height
	u8, _ := format.ParseDType("uint8")
	u16, _ := format.ParseDType("uint16")
	put16 := func(dst []byte, hi, lo uint8) { dst[0], dst[1] = lo, hi } // little-endian
	switch m := img.(type) {
	case *image.Gray:
		return format.Header{DType: u8, Shape: []int{H, W}}, rows(m.Pix, m.Stride, W, H), nil
	case *image.Gray16:
		out := make([]byte, 2*W*H)
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				p := m.Pix[y*m.Stride+2*x:]
				put16(out[2*(y*W+x):], p[0], p[1])
			}
		}
		return format.Header{DType: u16, Shape: []int{H, W}}, out, nil
	case *image.RGBA, *image.NRGBA:
		pix, stride := pixOf(m)
		c := ph.channels()
		out := make([]byte, c*W*H)
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				p := pix[y*stride+4*x:]
				o := out[c*(y*W+x):]
				switch c {
				case 2:
					o[0], o[1] = p[0], p[3]
				default:
					copy(o[:c], p[:c])
				}
			}
		}
		return format.Header{DType: u8, Shape: []int{H, W, c}}, out, nil
	case *image.RGBA64, *image.NRGBA64:
		pix, stride := pixOf(m)
		c := ph.channels()
		out := make([]byte, 2*c*W*H)
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				p := pix[y*stride+8*x:]
				o := out[2*c*(y*W+x):]
				src := []int{0, 1, 2, 3}
				if c == 2 {
					src = []int{0, 3}
				}
				for k := 0; k < c; k++ {
					put16(o[2*k:], p[2*src[k]], p[2*src[k]+1])
				}
			}
		}
		return format.Header{DType: u16, Shape: []int{H, W, c}}, out, nil
	case *image.Paletted:
		c := 3
		for _, e := range m.Palette {
			if color.NRGBAModel.Convert(e).(color.NRGBA).A != 0xff {
				c = 4
			}
		}
		pal := make([][4]byte, len(m.Palette))
		for i, e := range m.Palette {
			n := color.NRGBAModel.Convert(e).(color.NRGBA)
			pal[i] = [4]byte{n.R, n.G, n.B, n.A}
		}
		out := make([]byte, c*W*H)
		for y := 0; y < H; y++ {
			for x := 0; x < W; x++ {
				copy(out[c*(y*W+x):c*(y*W+x)+c], pal[m.Pix[y*m.Stride+x]][:c])
			}
		}
		return format.Header{DType: u8, Shape: []int{H, W, c}}, out, nil
	}
	return format.Header{}, nil, fmt.Errorf("png: unexpected image type %T", img)
}

func pixOf(img image.Image) ([]byte, int) {
	switch m := img.(type) {
	case *image.RGBA:
		return m.Pix, m.Stride
	case *image.NRGBA:
		return m.Pix, m.Stride
	case *image.RGBA64:
		return m.Pix, m.Stride
	case *image.NRGBA64:
		return m.Pix, m.Stride
	}
	return nil, 0
}

func rows(pix []byte, stride, w, h int) []byte {
	if stride == w {
		return pix[:w*h]
	}
	out := make([]byte, 0, w*h)
	for y := 0; y < h; y++ {
		out = append(out, pix[y*stride:y*stride+w]...)
	}
	return out
}

func trimPNGErr(err error) string {
	s := err.Error()
	for _, p := range []string{"png: "} {
		if len(s) > len(p) && s[:len(p)] == p {
			s = s[len(p):]
		}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return "truncated (" + s + ")"
	}
	return s
}

// PNGShape checks that a tensor can be a PNG: uint8 or uint16, [H, W] or
// [H, W, C] with C = 1…4; it returns the color type and bit depth.
func PNGShape(h format.Header) (colorType, depth int, err error) {
	d := h.DType
	if d.Kind != 'u' || (d.Size != 1 && d.Size != 2) {
		return 0, 0, fmt.Errorf("png holds uint8 or uint16 images; this is %s", d.Name())
	}
	depth = 8 * d.Size
	c := 1
	switch len(h.Shape) {
	case 2:
	case 3:
		c = h.Shape[2]
	default:
		return 0, 0, fmt.Errorf("png holds [H, W] or [H, W, C] images; this tensor is [%s] (--layout hw or hwc gives that shape)", format.ShapeString(h.Shape))
	}
	ct, ok := map[int]int{1: 0, 2: 4, 3: 2, 4: 6}[c]
	if !ok {
		return 0, 0, fmt.Errorf("png holds 1 to 4 channels; this image has %d", c)
	}
	if h.Shape[0] == 0 || h.Shape[1] == 0 || h.Shape[0] > 1<<31-1 || h.Shape[1] > 1<<31-1 {
		return 0, 0, fmt.Errorf("png holds images of 1 to 2^31-1 rows and columns; this is %dx%d", h.Shape[1], h.Shape[0])
	}
	return ct, depth, nil
}

// EncodePNG writes a C-order uint8/uint16 tensor as a PNG: rows with
// filter 0, zlib at the default level. uint16 samples are written
// big-endian as PNG wants them, whatever the tensor's byte order.
func EncodePNG(w io.Writer, h format.Header, data []byte) error {
	ct, depth, err := PNGShape(h)
	if err != nil {
		return err
	}
	H, W := h.Shape[0], h.Shape[1]
	rowBytes := len(data) / H
	bw := bufio.NewWriter(w)
	chunk := func(kind string, body []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(body)))
		bw.Write(n[:])
		crc := crc32.NewIEEE()
		io.WriteString(crc, kind)
		crc.Write(body)
		bw.WriteString(kind)
		bw.Write(body)
		binary.BigEndian.PutUint32(n[:], crc.Sum32())
		bw.Write(n[:])
	}
	bw.WriteString(pngMagic)
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(W))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(H))
	ihdr[8], ihdr[9] = byte(depth), byte(ct)
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	row := make([]byte, 1+rowBytes)
	swap := depth == 16 && h.DType.Order != '>'
	for y := 0; y < H; y++ {
		copy(row[1:], data[y*rowBytes:(y+1)*rowBytes])
		if swap {
			for i := 1; i+1 < len(row); i += 2 {
				row[i], row[i+1] = row[i+1], row[i]
			}
		}
		zw.Write(row)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return bw.Flush()
}

func init() {
	format.Register(format.Format{Kind: KindPNG, InTar: true, Image: true, Rank: 7, Doc: "8- and 16-bit PNG images as uint8/uint16 [H, W] or [H, W, C]", Exts: []string{".png"}, Sniff: SniffPNG, SniffOrder: 40,
		Decode: func(b []byte, want *format.DType) (format.Header, []byte, string, error) {
			h, data, err := DecodePNG(b)
			if err == nil && want != nil {
				h.DType, err = want.Reinterpret(h.DType)
			}
			return h, data, "", err
		},
		Encode: func(w io.Writer, h format.Header, _ string, data []byte) error { return EncodePNG(w, h, data) },
		CanWrite: func(h format.Header) error {
			_, _, err := PNGShape(h)
			return err
		}})
}
