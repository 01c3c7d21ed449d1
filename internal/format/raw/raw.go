package raw

import "github.com/depthspace/depthspace/internal/format"

// KindRaw is the bare element bytes of a tensor, described by --dtype and
// --shape.
const KindRaw format.Kind = "raw"

func init() {
	format.Register(format.Format{Kind: KindRaw, Rank: 2, Described: true, Doc: "the bare element bytes in C order (needs --dtype and --shape)", Aliases: []string{"bin"}, Exts: []string{".raw", ".bin"},
		Preamble: func(format.Header, string) ([]byte, error) { return nil, nil }})
}
