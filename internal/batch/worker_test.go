package batch

import (
	"path/filepath"
	"testing"
)

// A worker knows an output to be in the directory it made last only when
// it is: filepath.Dir of the output is that directory.
func TestWorkerInDir(t *testing.T) {
	sep := string(filepath.Separator)
	dir := filepath.Join("out", "d1")
	for _, c := range []struct {
		output string
		want   bool
	}{
		{filepath.Join(dir, "f.npy"), true},
		{filepath.Join(dir, "g.npy"), true},
		{filepath.Join("out", "d10", "f.npy"), false}, // a sibling whose name starts alike
		{filepath.Join(dir, "sub", "f.npy"), false},   // deeper
		{filepath.Join("out", "f.npy"), false},        // shallower
		{filepath.Join("out", "d1x.npy"), false},      // beside it, named alike
		{dir, false},
		{dir + sep, false},
		{"f.npy", false},
		{filepath.Join("other", "d1", "f.npy"), false},
	} {
		w := &worker{dir: dir}
		got := w.inDir(c.output)
		if got != c.want {
			t.Errorf("inDir(%q) with %q made = %v, want %v", c.output, dir, got, c.want)
		}
		if got && filepath.Dir(c.output) != dir {
			t.Errorf("inDir(%q) with %q made, but its directory is %q", c.output, dir, filepath.Dir(c.output))
		}
	}
	if (&worker{}).inDir(filepath.Join(dir, "f.npy")) {
		t.Error("a worker that made no directory yet knows one")
	}
}
