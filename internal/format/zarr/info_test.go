package zarr

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// listingDir is a local store that lists its objects with their sizes,
// as a prefix of a place does (fileio.Dir.WalkObjects), and counts the
// sizes asked key by key, which such a store must not need.
type listingDir struct {
	*fileio.Dir
	root  string
	sized *atomic.Int64
}

func (d listingDir) WalkObjects(dir string, fn func(key string, size int64) error) error {
	return filepath.WalkDir(filepath.Join(d.root, filepath.FromSlash(dir)), func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(d.root, p)
		return fn(filepath.ToSlash(rel), fi.Size())
	})
}

func (d listingDir) Size(key string) (int64, error) {
	d.sized.Add(1)
	return d.Dir.Size(key)
}

func (listingDir) InFlight() int { return 3 }

// surveyOf opens the store st and surveys each of its arrays.
func surveyOf(t *testing.T, st format.Store) map[string][3]int64 {
	t.Helper()
	ar, err := open(st, format.OpenOptions{Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][3]int64{}
	for _, m := range ar.Members {
		s := m.Lazy.(*reader).survey()
		if s.err != nil {
			t.Fatalf("%s: %v", m.Name, s.err)
		}
		out[m.Name] = [3]int64{int64(s.chunks), int64(s.missing), s.stored}
	}
	return out
}

// TestSurveyFromListing: info's chunk counts and stored bytes from a
// listing of the store (a prefix of a place) are those from asking each
// key of the grid (a local directory), and ask no key's size: v2 and v3
// stores of every key encoding and separator, a scalar, edge chunks,
// missing chunks, shards with the index at either end, empty inner
// chunks and a missing shard, a group; with objects under the prefix
// that are not chunks of the grid (metadata, attributes, a key past the
// grid, a key with a leading zero, another array's chunks).
func TestSurveyFromListing(t *testing.T) {
	root := t.TempDir()
	var stores []string
	for name, s := range v3Specs() {
		dir := filepath.Join(root, name+".zarr")
		s.write(t, dir, fillOf(t, s))
		stores = append(stores, dir)
	}
	for i, x := range writeCases(t) {
		dir := filepath.Join(root, "v2-"+string(rune('a'+i))+".zarr")
		var chunks []int // halves: edge chunks where a side is odd
		for _, n := range x.h.Shape {
			chunks = append(chunks, max(1, (n+1)/2))
		}
		writeStore(t, dir, 2, []tensor{x}, format.WriteOptions{Chunks: chunks})
		first := strings.TrimSuffix(strings.Repeat("0.", len(chunks)), ".")
		if first == "" {
			first = "0"
		}
		os.Remove(filepath.Join(dir, first)) // a missing chunk
		stores = append(stores, dir)
	}
	group := filepath.Join(root, "group.zarr")
	writeStore(t, group, 3, []tensor{mkTensor(t, "a", "float32", 6, 5), mkTensor(t, "b/c", "uint8", 9, 4)}, format.WriteOptions{Chunks: []int{2, 2}})
	stores = append(stores, group)
	for _, dir := range stores {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			for _, stray := range []string{".zattrs", "c/99/0", "99.0", "c/0/01", "01.0", "notes.txt"} {
				p := filepath.Join(dir, filepath.FromSlash(stray))
				if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) && os.MkdirAll(filepath.Dir(p), 0o755) == nil {
					os.WriteFile(p, []byte("not a chunk of the grid"), 0o644)
				}
			}
			d, _ := fileio.OpenDir(dir)
			want := surveyOf(t, d)
			var sized atomic.Int64
			got := surveyOf(t, listingDir{Dir: d, root: dir, sized: &sized})
			for name, w := range want {
				if got[name] != w {
					t.Errorf("member %q: listed %v (chunks, missing, stored bytes), asked key by key %v", name, got[name], w)
				}
			}
			if n := sized.Load(); n != 0 {
				t.Errorf("%d sizes asked of a store that lists them", n)
			}
			if strings.HasPrefix(filepath.Base(dir), "shard-end") && want[""][1] == 0 {
				t.Errorf("the sharded store's missing chunks are not counted: %v", want)
			}
		})
	}
}
