package batch

import (
	"fmt"
	"strconv"
	"strings"
)

// Shard is one part of a batch split across processes or machines: K of
// N, 0 ≤ K < N. The zero Shard is the whole batch.
//
// File i of the sorted list (counting from 0) belongs to shard i mod N.
// Every process that walks the same tree with the same arguments builds
// the same list, so N processes with K = 0…N−1 together cover every file
// exactly once. Dealing the files out in turn, rather than cutting the
// list into N ranges, keeps the shards' sizes within one file of each
// other and spreads a directory of large files across all of them.
type Shard struct {
	K, N int
}

// ParseShard reads a --shard value, "K/N".
func ParseShard(s string) (Shard, error) {
	ks, ns, ok := strings.Cut(s, "/")
	k, kerr := strconv.Atoi(strings.TrimSpace(ks))
	n, nerr := strconv.Atoi(strings.TrimSpace(ns))
	switch {
	case !ok || kerr != nil || nerr != nil:
		return Shard{}, fmt.Errorf("--shard %q: want K/N, two integers such as 3/16", s)
	case n < 1:
		return Shard{}, fmt.Errorf("--shard %q: N must be at least 1", s)
	case k < 0 || k >= n:
		return Shard{}, fmt.Errorf("--shard %q: K must be from 0 to %d (0 ≤ K < N)", s, n-1)
	}
	return Shard{K: k, N: n}, nil
}

// Owns says whether item i of the sorted list belongs to this shard.
func (s Shard) Owns(i int) bool {
	return s.N <= 1 || i%s.N == s.K
}

func (s Shard) String() string {
	if s.N == 0 {
		return ""
	}
	return fmt.Sprintf("%d/%d", s.K, s.N)
}
