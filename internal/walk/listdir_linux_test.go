package walk

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// dirent is one linux_dirent64 record, its name padded to 8 bytes.
func dirent(typ byte, name string) []byte {
	n := (19 + len(name) + 1 + 7) &^ 7
	b := make([]byte, n)
	binary.NativeEndian.PutUint16(b[16:18], uint16(n))
	b[18] = typ
	copy(b[19:], name)
	return b
}

// The records of a directory become its entries: "." and "..", and
// regular files whose names are not tensors', left out; a directory, a
// link and an entry of unknown type kept for lstat; a record that does
// not fit refused.
func TestAppendDirents(t *testing.T) {
	var b []byte
	for _, r := range [][]byte{
		dirent(syscall.DT_DIR, "."), dirent(syscall.DT_DIR, ".."), dirent(syscall.DT_REG, "a.npy"),
		dirent(syscall.DT_REG, "notes.txt"), dirent(syscall.DT_DIR, "sub"), dirent(syscall.DT_LNK, "link.npy"),
		dirent(syscall.DT_UNKNOWN, "b.NPZ"), dirent(syscall.DT_REG, "with 7 more bytes of padding.json"),
	} {
		b = append(b, r...)
	}
	got, err := appendDirents(nil, b)
	want := []dirEntry{{"a.npy", true}, {"sub", false}, {"link.npy", false}, {"b.NPZ", false}, {"with 7 more bytes of padding.json", true}}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range [][]byte{b[:10], dirent(syscall.DT_REG, "a.npy")[:20]} {
		if _, err := appendDirents(nil, bad); err != errBadDirent {
			t.Errorf("%d bytes: %v, want %v", len(bad), err, errBadDirent)
		}
	}
}

// listDir gives what os.ReadDir gives, less the regular files that are
// not tensors, in a directory larger than its buffer.
func TestListDirAsReadDir(t *testing.T) {
	dir := t.TempDir()
	for i := range 700 {
		name := filepath.Join(dir, "file-with-a-long-name-"+string(rune('a'+i%26))+string(rune('a'+i/26))+[]string{".npy", ".txt"}[i%2])
		if err := os.WriteFile(name, nil, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o777); err != nil {
		t.Fatal(err)
	}
	w := &dirWalk{dirents: make([]byte, 1024)}
	d, got, err := w.listDir(dir)
	des, rerr := os.ReadDir(dir)
	if err != nil || rerr != nil {
		t.Fatal(err, rerr)
	}
	d.Close()
	var want []dirEntry
	for _, e := range des {
		if regular := e.Type().IsRegular(); !regular || IsTensorName(e.Name()) {
			want = append(want, dirEntry{e.Name(), regular})
		}
	}
	slices.SortFunc(got, func(a, b dirEntry) int { return strings.Compare(a.name, b.name) })
	if len(want) != 351 || !slices.Equal(got, want) {
		t.Fatalf("listDir gave %d entries, ReadDir %d (want 351)", len(got), len(want))
	}
}
