package png

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image/png"
	"math/rand"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
)

// Every shape and depth EncodePNG writes reads back the same, and the
// standard library's decoder (an independent reader of our files) sees the
// same samples.
func TestPNGRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	for _, dt := range []string{"uint8", "uint16", ">u2"} {
		for _, c := range []int{0, 1, 2, 3, 4} {
			d, _ := format.ParseDType(dt)
			shape := []int{1 + rng.Intn(7), 1 + rng.Intn(9)}
			if c > 0 {
				shape = append(shape, c)
			}
			h := format.Header{DType: d, Shape: shape}
			data := make([]byte, h.DataBytes())
			rng.Read(data)
			var buf bytes.Buffer
			if err := EncodePNG(&buf, h, data); err != nil {
				t.Fatal(err)
			}
			gh, got, err := DecodePNG(buf.Bytes())
			if err != nil {
				t.Fatalf("%s %v: %v", dt, shape, err)
			}
			want := data
			if d.Order == '>' { // read back as native uint16
				want = append([]byte(nil), data...)
				for i := 0; i+1 < len(want); i += 2 {
					want[i], want[i+1] = want[i+1], want[i]
				}
			}
			wantShape := shape
			if c == 1 {
				wantShape = shape[:2] // gray reads as [H, W]
			}
			if format.ShapeString(gh.Shape) != format.ShapeString(wantShape) || !bytes.Equal(got, want) || gh.DType.Size != d.Size {
				t.Fatalf("%s %v: read back %s %v", dt, shape, gh.DType, gh.Shape)
			}
			// image/png's view of the first pixel's first sample.
			img, err := png.Decode(bytes.NewReader(buf.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			r, _, _, _ := img.At(0, 0).RGBA()
			first := uint32(want[0])
			if d.Size == 2 {
				first = uint32(want[0]) | uint32(want[1])<<8
			} else {
				first *= 0x101
			}
			if c != 2 && c != 4 && r != first { // alpha premultiplies RGBA()
				t.Fatalf("%s %v: image/png reads %d, want %d", dt, shape, r, first)
			}
		}
	}
}

func pngWith(w, h uint32, depth, ct byte, idat []byte) []byte {
	var b bytes.Buffer
	b.WriteString(pngMagic)
	chunk := func(kind string, body []byte) {
		binary.Write(&b, binary.BigEndian, uint32(len(body)))
		b.WriteString(kind)
		b.Write(body)
		binary.Write(&b, binary.BigEndian, crc32.ChecksumIEEE(append([]byte(kind), body...)))
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr, w)
	binary.BigEndian.PutUint32(ihdr[4:], h)
	ihdr[8], ihdr[9] = depth, ct
	chunk("IHDR", ihdr)
	chunk("IDAT", idat)
	chunk("IEND", nil)
	return b.Bytes()
}

func TestPNGHostile(t *testing.T) {
	var good bytes.Buffer
	EncodePNG(&good, format.Header{DType: format.NumpyNames()["uint8"], Shape: []int{4, 4}}, make([]byte, 16))
	badCRC := append([]byte(nil), good.Bytes()...)
	badCRC[30] ^= 1
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{pngWith(100000, 100000, 8, 0, []byte{1, 2, 3}), "header claims 100000x100000 pixels"},
		{pngWith(1<<31-1, 1<<31-1, 16, 6, []byte{1}), "cannot hold them"},
		{badCRC, "IHDR has a bad CRC"},
		{good.Bytes()[:len(good.Bytes())-20], "png:"},
		{pngWith(4, 4, 4, 0, []byte{1}), "4-bit samples"},
		{pngWith(4, 4, 8, 5, []byte{1}), "color type 5"},
		{[]byte("GIF89a"), "not a PNG file"},
		{[]byte(pngMagic), "no IHDR chunk"},
	} {
		_, _, err := DecodePNG(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
	for _, h := range []format.Header{
		{DType: format.NumpyNames()["float32"], Shape: []int{2, 2}},
		{DType: format.NumpyNames()["uint8"], Shape: []int{1, 2, 2, 3}},
		{DType: format.NumpyNames()["uint8"], Shape: []int{2, 2, 5}},
		{DType: format.NumpyNames()["uint8"], Shape: []int{0, 2}},
	} {
		if _, _, err := PNGShape(h); err == nil {
			t.Errorf("%v %v accepted as a PNG", h.DType, h.Shape)
		}
	}
}

func FuzzPNG(f *testing.F) {
	var good bytes.Buffer
	EncodePNG(&good, format.Header{DType: format.NumpyNames()["uint16"], Shape: []int{3, 5, 2}}, make([]byte, 60))
	f.Add(good.Bytes())
	f.Add(pngWith(7, 3, 8, 3, []byte{0x78, 0x9c, 3, 0, 0, 0, 0, 1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, data, err := DecodePNG(b)
		if err != nil {
			return
		}
		if h.DataBytes() != int64(len(data)) {
			t.Fatalf("%v: %d bytes", h.Shape, len(data))
		}
	})
}
