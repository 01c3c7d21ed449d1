package fileio

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// isStore claims a directory holding a file named "meta", as a store
// format's Claims would.
func isStore(d *Dir) bool {
	_, err := d.Size("meta")
	return err == nil
}

// TestDirOutputAtomic: a store appears only at Commit, replaces a store
// already there only then, leaves nothing on Abort, and is refused over
// a file or a directory that is not a store.
func TestDirOutputAtomic(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "s.zarr")
	o, err := CreateDir(target, isStore)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Put("a/b/c", []byte("chunk")); err != nil {
		t.Fatal(err)
	}
	if err := o.Put("meta", []byte("m1")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the store is there before Commit: %v", err)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "a", "b", "c")); string(b) != "chunk" {
		t.Fatalf("committed store holds %q", b)
	}

	// A second store replaces the first at Commit only; Abort keeps it.
	o2, err := CreateDir(target, isStore)
	if err != nil {
		t.Fatal(err)
	}
	o2.Put("meta", []byte("m2"))
	if b, _ := os.ReadFile(filepath.Join(target, "meta")); string(b) != "m1" {
		t.Fatal("the old store changed before Commit")
	}
	o2.Abort()
	if b, _ := os.ReadFile(filepath.Join(target, "meta")); string(b) != "m1" {
		t.Fatal("Abort touched the old store")
	}
	o3, _ := CreateDir(target, isStore)
	o3.Put("meta", []byte("m3"))
	if err := o3.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(target, "meta")); string(b) != "m3" {
		t.Fatalf("the new store did not replace the old: %q", b)
	}
	if _, err := os.Stat(filepath.Join(target, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("the old store's objects are left in the new one")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left beside the store: %v", ents)
	}

	// Refused before any work: a file, a directory that is no store, a
	// key that leaves the store.
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := CreateDir(file, isStore); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("over a file: %v", err)
	}
	other := filepath.Join(dir, "other")
	os.Mkdir(other, 0o755)
	if _, err := CreateDir(other, isStore); err == nil || !strings.Contains(err.Error(), "not replaced") {
		t.Fatalf("over another directory: %v", err)
	}
	o4, _ := CreateDir(filepath.Join(dir, "new"), isStore)
	defer o4.Abort()
	for _, k := range []string{"../x", "/x", "a/../../x", ""} {
		if err := o4.Put(k, nil); err == nil {
			t.Errorf("key %q: no error", k)
		}
	}
}

// TestDirStore: keys read whole and by range (from the end too), sizes,
// listings with directories marked, and ranges past the end refused.
func TestDirStore(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "g", "a"), 0o755)
	os.WriteFile(filepath.Join(dir, "g", "a", "k"), []byte("0123456789"), 0o644)
	os.WriteFile(filepath.Join(dir, "meta"), nil, 0o644)
	d, ok := OpenDir(dir)
	if !ok {
		t.Fatal("not a directory")
	}
	if b, err := d.ReadRange("g/a/k", 2, 3); err != nil || string(b) != "234" {
		t.Fatalf("range: %q %v", b, err)
	}
	if b, err := d.ReadRange("g/a/k", -4, 0); err != nil || string(b) != "6789" {
		t.Fatalf("suffix: %q %v", b, err)
	}
	if _, err := d.ReadRange("g/a/k", 8, 3); err == nil || !strings.Contains(err.Error(), "past the object's end") {
		t.Fatalf("past the end: %v", err)
	}
	if _, err := d.Read("g/none"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing key: %v", err)
	}
	if n, err := d.Size("g/a/k"); n != 10 || err != nil {
		t.Fatalf("size %d %v", n, err)
	}
	if names, err := d.List(""); err != nil || strings.Join(names, " ") != "g/ meta" {
		t.Fatalf("list: %v %v", names, err)
	}
	if _, err := d.Read("../x"); err == nil {
		t.Fatal("a key outside the store was read")
	}
	if _, ok := OpenDir(filepath.Join(dir, "meta")); ok {
		t.Fatal("a file opened as a store")
	}
}

// TestDirReadInto: ReadBoundedInto and ReadRangeInto read what
// ReadBounded and ReadRange do, into the caller's buffers, refuse what
// they refuse (an object over the limit, a range past the end, a
// directory), and say ErrNotExist for a key with no object.
func TestDirReadInto(t *testing.T) {
	dir := t.TempDir()
	data := []byte("0123456789abcdef")
	if err := os.WriteFile(filepath.Join(dir, "obj"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	d, ok := OpenDir(dir)
	if !ok {
		t.Fatal("OpenDir")
	}
	given := 0
	get := func(n int) []byte { given = n; return make([]byte, n+7) }
	b, err := d.ReadBoundedInto("obj", 16, get)
	if err != nil || !bytes.Equal(b, data) || given != len(data) {
		t.Fatalf("ReadBoundedInto: %q, %v (buffer of %d asked for)", b, err, given)
	}
	if _, err := d.ReadBoundedInto("obj", 15, get); err == nil {
		t.Error("an object over the limit was read")
	}
	if _, err := d.ReadBoundedInto("none", 16, get); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing object: %v", err)
	}
	if _, err := d.ReadBoundedInto("sub", 16, get); err == nil {
		t.Error("a directory was read as an object")
	}
	dst, err := d.ReadRangeInto("obj", 10, 5, get)
	if err != nil || string(dst) != "abcde" || given != 5 {
		t.Fatalf("ReadRangeInto: %q, %v (buffer of %d asked for)", dst, err, given)
	}
	if _, err := d.ReadRangeInto("obj", 12, 5, get); err == nil {
		t.Error("a range past the end was read")
	}
	if _, err := d.ReadRangeInto("none", 0, 5, get); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing object: %v", err)
	}
}

// A local store whose streamed object is still open at the commit is not
// renamed in (the object may be half written): the commit fails and
// leaves no store, as on a place.
func TestDirOutputCommitRefusesOpenObject(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "s.zarr")
	o, err := CreateDir(target, isStore)
	if err != nil {
		t.Fatal(err)
	}
	w, err := o.Stream("c/0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("half a shard")); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); err == nil || !strings.Contains(err.Error(), "not closed") {
		t.Errorf("Commit with an object open: %v", err)
	}
	if _, err := os.Stat(target); err == nil {
		t.Error("the store was renamed in with an object open")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
	w.Close()
}
