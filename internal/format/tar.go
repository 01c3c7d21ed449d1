package format

// KindTar is a tar archive of tensor files and others: a WebDataset
// shard.
const KindTar Kind = "tar"

// SniffTar reports whether b (at least the first 512 bytes) is a tar
// header: the ustar magic at offset 257.
func SniffTar(b []byte) bool {
	return len(b) >= 263 && string(b[257:262]) == "ustar"
}

func init() {
	Register(Format{Kind: KindTar, Rank: 8, Doc: "a tar shard (WebDataset): its tensor members worked on, the rest copied", Container: true, Exts: []string{".tar"}, Sniff: SniffTar, SniffOrder: 50})
}
