package batch

import (
	"fmt"
	"testing"
)

func TestParseShard(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Shard
	}{{"0/1", Shard{0, 1}}, {"3/16", Shard{3, 16}}, {"15/16", Shard{15, 16}}, {" 2 / 4 ", Shard{2, 4}}} {
		got, err := ParseShard(c.in)
		if err != nil || got != c.want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
		if got.String() != fmt.Sprintf("%d/%d", c.want.K, c.want.N) {
			t.Errorf("String() = %q", got.String())
		}
	}
	for _, in := range []string{"", "3", "3/", "/4", "a/b", "4/4", "5/4", "-1/4", "0/0", "1/-2", "1.5/4", "1/2/3"} {
		if s, err := ParseShard(in); err == nil {
			t.Errorf("ParseShard(%q) = %v, want an error", in, s)
		}
	}
}

// The shards of a list are a partition of it: every item in exactly one,
// sizes within one of each other, for every N and list length.
func TestShardsPartitionTheList(t *testing.T) {
	for n := 1; n <= 33; n++ {
		for size := 0; size <= 150; size++ {
			owner := make([]int, size)
			for i := range owner {
				owner[i] = -1
			}
			counts := make([]int, n)
			for k := 0; k < n; k++ {
				s := Shard{K: k, N: n}
				for i := 0; i < size; i++ {
					if !s.Owns(i) {
						continue
					}
					if owner[i] != -1 {
						t.Fatalf("N=%d size=%d: item %d in shards %d and %d", n, size, i, owner[i], k)
					}
					owner[i] = k
					counts[k]++
				}
			}
			for i, k := range owner {
				if k == -1 {
					t.Fatalf("N=%d size=%d: item %d in no shard", n, size, i)
				}
			}
			lo, hi := size, 0
			for _, c := range counts {
				lo, hi = min(lo, c), max(hi, c)
			}
			if hi-lo > 1 {
				t.Fatalf("N=%d size=%d: shard sizes from %d to %d", n, size, lo, hi)
			}
		}
	}
	var whole Shard
	for i := 0; i < 10; i++ {
		if !whole.Owns(i) {
			t.Fatalf("the zero Shard does not own item %d", i)
		}
	}
}
