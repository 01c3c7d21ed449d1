package raw

import (
	"errors"
	"fmt"
	"io"

	"github.com/depthspace/depthspace/internal/format"
)

// KindRaw is the bare element bytes of a tensor, described by --dtype and
// --shape.
const KindRaw format.Kind = "raw"

func init() {
	format.Register(format.Format{Kind: KindRaw, Rank: 2, Bare: true, Doc: "the bare element bytes in C order (needs --dtype and --shape)", Aliases: []string{"bin"}, Exts: []string{".raw", ".bin"},
		InPlace:  &format.InPlace{Parse: parse, Read: read},
		Preamble: func(format.Header, string) ([]byte, error) { return nil, nil }})
}

// header is the tensor --dtype and --shape describe: raw data have no
// header of their own.
func header(d format.Description) (format.Preamble, error) {
	if d.DType == nil || d.Shape == nil {
		return format.Preamble{}, errors.New("raw input needs --dtype and --shape")
	}
	h := format.Header{DType: *d.DType, Shape: d.Shape}
	if h.DataBytes() < 0 {
		return format.Preamble{}, fmt.Errorf("--shape %s of %s is too large", format.ShapeString(d.Shape), d.DType)
	}
	return format.Preamble{Header: h}, nil
}

func parse(_ []byte, fileBytes int64, d format.Description) (format.Preamble, error) {
	p, err := header(d)
	if err != nil {
		return p, err
	}
	if size := p.DataBytes(); fileBytes != size {
		return p, fmt.Errorf("raw data is %d bytes but --dtype %s --shape %s describes %d", fileBytes, d.DType, format.ShapeString(d.Shape), size)
	}
	return p, nil
}

func read(_ io.Reader, d format.Description) (format.Preamble, error) { return header(d) }
