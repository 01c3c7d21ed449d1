package fileio

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDirOutputAbortClosesObjects: a store aborted with objects still
// open (a failed array's shards) closes them, and its staging directory
// goes: a batch went on with their descriptors taken, and its next
// inputs failed with "too many open files".
func TestDirOutputAbortClosesObjects(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	dir := t.TempDir()
	before := fds()
	o, err := CreateDir(filepath.Join(dir, "s.zarr"), isStore)
	if err != nil {
		t.Fatal(err)
	}
	var first interface{ Close() error }
	for i := range 20 {
		w, err := o.Stream("c/" + string(rune('a'+i)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte("part of a shard")); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = w
		}
	}
	if n := fds(); n < before+20 {
		t.Fatalf("%d descriptors open with 20 objects, %d before", n, before)
	}
	o.Abort()
	if n := fds(); n != before {
		t.Errorf("%d descriptors open after the abort, %d before", n, before)
	}
	if err := first.Close(); err != nil { // its writer's own close, after the abort's
		t.Errorf("a second close: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}
