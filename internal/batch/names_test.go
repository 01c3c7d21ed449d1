package batch

import (
	"fmt"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
)

// Two inputs that would write the same output are found however far
// apart the order puts them, and a directory of many files keeps only
// the few names a later input could still take (it kept every name: a
// prefix of 10^6 keys held 10^6 of them).
func TestTakenNames(t *testing.T) {
	for _, c := range []struct {
		to   format.Kind
		rels []string
		dup  string // the input refused, "" for none
	}{
		{npy.KindNpy, []string{"a/x.json", "a/x.n.json", "a/x.npy"}, "a/x.npy"},
		{npy.KindNpy, []string{"frames.dat", "frames.dat-1.npy", "frames.dat.npy"}, "frames.dat.npy"},
		{"", []string{"x.npy", "x.npy"}, "x.npy"},
		{npy.KindNpy, []string{"x.json", "x0.npy", "y.npy"}, ""},
	} {
		var taken takenNames
		dup := ""
		for i, rel := range c.rels {
			if _, ok := taken.take(OutputName(rel, c.to), rel, fmt.Sprint(i, rel)); ok {
				dup = rel
			}
		}
		if dup != c.dup {
			t.Errorf("%v to %q: refused %q, want %q", c.rels, c.to, dup, c.dup)
		}
	}
	var taken takenNames
	most := 0
	for i := range 100000 {
		rel := fmt.Sprintf("run.%06d.npy", i)
		if _, dup := taken.take(OutputName(rel, npy.KindNpy), rel, rel); dup {
			t.Fatalf("%s refused", rel)
		}
		most = max(most, len(taken))
	}
	if most > 2 {
		t.Errorf("%d names kept at most, want at most 2", most)
	}
}
