package npy

import (
	"fmt"
	"io"

	"github.com/depthspace/depthspace/internal/format"
)

// npy's fast paths: a file is mapped and its data used where they lie, a
// stream is read header first and its data streamed, and info reads the
// header alone (format.InPlace).
var inPlace = &format.InPlace{
	Parse: func(head []byte, fileBytes int64, d format.Description) (format.Preamble, error) {
		npy, err := ParseNpy(head)
		if err != nil {
			return npy, err
		}
		if err := CheckData(npy, fileBytes-npy.DataOffset, "file"); err != nil {
			return npy, err
		}
		return npy, describe(&npy, d)
	},
	Read: func(r io.Reader, d format.Description) (format.Preamble, error) {
		npy, err := ReadNpy(r)
		if err != nil {
			return npy, err
		}
		return npy, describe(&npy, d)
	},
	HeadBytes: headBytes,
	Member:    EncodeNpy,
}

// headBytes is how much of an npy file info reads: numpy pads headers to
// 64 bytes and ours of 1 MiB or more to 4096.
const headBytes = 16 << 10

// CheckData checks that the have bytes after an npy header (of a file,
// or of an archive's member: in says which) are exactly the data the
// header describes.
func CheckData(npy Npy, have int64, in string) error {
	size := npy.DataBytes()
	switch {
	case have < size:
		return fmt.Errorf("truncated: the header describes %d data bytes (shape %s, %s) but the %s has %d", size, format.ShapeString(npy.Shape), npy.DType, in, have)
	case have > size:
		return fmt.Errorf("%d bytes beyond the %d data bytes the header describes (shape %s, %s)", have-size, size, format.ShapeString(npy.Shape), npy.DType)
	}
	return nil
}

// describe applies --dtype (a reinterpretation of the same bytes) and
// --shape (which must match the file's).
func describe(npy *Npy, d format.Description) error {
	if d.DType != nil {
		dt, err := d.DType.Reinterpret(npy.DType)
		if err != nil {
			return err
		}
		npy.DType = dt
	}
	if d.Shape != nil && format.ShapeString(d.Shape) != format.ShapeString(npy.Shape) {
		return fmt.Errorf("--shape %s does not match the file's shape %s", format.ShapeString(d.Shape), format.ShapeString(npy.Shape))
	}
	return nil
}
