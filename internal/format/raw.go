package format

// KindRaw is the bare element bytes of a tensor, described by --dtype and
// --shape.
const KindRaw Kind = "raw"

func init() {
	Register(Format{Kind: KindRaw, Rank: 2, Doc: "the bare element bytes in C order (needs --dtype and --shape)", Aliases: []string{"bin"}, Exts: []string{".raw", ".bin"},
		Preamble: func(Header, string) ([]byte, error) { return nil, nil }})
}
