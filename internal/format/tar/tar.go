package tar

import "github.com/depthspace/depthspace/internal/format"

// KindTar is a tar archive of tensor files and others: a WebDataset
// shard.
const KindTar format.Kind = "tar"

// SniffTar reports whether b (at least the first 512 bytes) is a tar
// header: the ustar magic at offset 257.
func SniffTar(b []byte) bool {
	return len(b) >= 263 && string(b[257:262]) == "ustar"
}

func init() {
	format.Register(format.Format{Kind: KindTar, Rank: 8, Noun: "a tar shard", Shard: &format.ShardFormat{Copy: copyShard, Members: members, Making: "make a shard with tar or Python's tarfile"}, Doc: "a tar shard (WebDataset): its tensor members worked on, the rest copied", Container: true, Exts: []string{".tar"}, Sniff: SniffTar, SniffOrder: 50})
}
