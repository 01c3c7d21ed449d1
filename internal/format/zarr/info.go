package zarr

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
)

// survey is what info says of an array's chunks: how many the grid
// has, how many the store lacks (for shards, inner chunks whose index
// entry is empty count too) and the bytes its objects take.
type survey struct {
	once            sync.Once
	chunks, missing int
	stored          int64
	err             error
}

// Details gives info's rows of an array: its Zarr version, chunk order,
// chunk (and shard) shape, codecs, fill value, and its chunks counted.
func (r *reader) Details() ([][2]string, error) {
	s := r.survey()
	if s.err != nil {
		return nil, s.err
	}
	a := r.a
	order := "C"
	if a.FOrder {
		order = "F"
	}
	kv := [][2]string{
		{"zarr_format", fmt.Sprint(a.Version)},
		{"chunk_order", order},
		{"chunks", format.ShapeString(a.Inner)},
	}
	if a.shard != nil {
		kv = append(kv, [2]string{"shards", format.ShapeString(a.Chunks)})
	}
	kv = append(kv,
		[2]string{"codecs", strings.Join(a.Codecs, ", ")},
		[2]string{"fill_value", a.FillText},
		[2]string{"chunks_total", fmt.Sprint(s.chunks)},
		[2]string{"chunks_missing", fmt.Sprint(s.missing)},
		[2]string{"stored_bytes", fmt.Sprint(s.stored)},
		[2]string{"logical_bytes", fmt.Sprint(a.Header.DataBytes())},
	)
	return kv, nil
}

// StoredBytes is what the array's objects take.
func (r *reader) StoredBytes() int64 { return r.survey().stored }

// objectLister is a store that lists every object below a directory
// with its size in a few requests (a prefix of a place: a page per
// 1,000 keys), where asking each key is a round trip apiece; any other
// store says errors.ErrUnsupported and is asked key by key.
type objectLister interface {
	WalkObjects(dir string, fn func(key string, size int64) error) error
}

// grid is an array's chunk grid, as survey counts it: shards for a
// sharded array, and how many inner chunks each holds per axis.
type grid struct {
	n      []int // chunks per axis
	per    []int // inner chunks per chunk, per axis (1 but for shards)
	innerN []int // inner chunks per axis that lie in the array
}

func newGrid(a *Array) grid {
	var g grid
	for i, s := range rank0(a.Header.Shape) {
		g.n = append(g.n, (s+a.Chunks[i]-1)/a.Chunks[i])
		g.per = append(g.per, a.Chunks[i]/a.Inner[i])
		g.innerN = append(g.innerN, (s+a.Inner[i]-1)/a.Inner[i])
	}
	return g
}

// inside is, for the chunk at idx, how many of its inner chunks lie in
// the array on each axis: those wholly past its end are not chunks of
// it.
func (g grid) inside(idx []int) []int {
	lim := make([]int, len(idx))
	for i, x := range idx {
		lim[i] = min(g.per[i], g.innerN[i]-x*g.per[i])
	}
	return lim
}

// survey counts the chunks once: the chunks present and their bytes
// from a listing of the array's prefix where the store gives one, else
// each key of the grid sized; then, for a sharded array, each present
// shard's index read (--io-jobs at once) for its empty inner chunks.
func (r *reader) survey() *survey {
	s := &r.info
	s.once.Do(func() { s.err = r.count(s) })
	return s
}

func (r *reader) count(s *survey) error {
	a := r.a
	g := newGrid(a)
	s.chunks = 1
	for _, n := range g.innerN {
		s.chunks *= n
	}
	present := 0 // inner chunks of the chunks present
	var shards chan shardAt
	var indexes sync.WaitGroup
	var mu sync.Mutex
	var indexErr error
	if a.shard != nil {
		shards = make(chan shardAt)
		jobs := 1
		if f, ok := r.st.(interface{ InFlight() int }); ok {
			jobs = max(jobs, f.InFlight())
		}
		for range jobs {
			indexes.Add(1)
			go func() {
				defer indexes.Done()
				for sh := range shards {
					empty, err := r.emptyInner(sh, g)
					mu.Lock()
					present -= empty
					if err != nil && indexErr == nil {
						indexErr = err
					}
					mu.Unlock()
				}
			}()
		}
	}
	found := func(key string, idx []int, size int64) {
		n := 1
		for _, x := range g.inside(idx) {
			n *= x
		}
		mu.Lock()
		present += n
		s.stored += size
		mu.Unlock()
		if shards != nil {
			shards <- shardAt{key: key, idx: idx}
		}
	}
	err := r.listChunks(g, found)
	if errors.Is(err, errors.ErrUnsupported) {
		err = r.sizeChunks(g, found)
	}
	if shards != nil {
		close(shards)
		indexes.Wait()
	}
	if err == nil {
		err = indexErr
	}
	s.missing = s.chunks - present
	return err
}

// shardAt is a shard object present: its key and grid index.
type shardAt struct {
	key string
	idx []int
}

// emptyInner counts the inner chunks of a present shard that lie in the
// array and whose index entry is empty.
func (r *reader) emptyInner(sh shardAt, g grid) (int, error) {
	pairs, err := readIndex(r, sh.key)
	if err != nil {
		return 0, err
	}
	lim := g.inside(sh.idx)
	if pairs == nil { // gone since it was listed: all missing
		n := 1
		for _, x := range lim {
			n *= x
		}
		return n, nil
	}
	empty := 0
	for q := range r.a.shard.perShard {
		in := true
		for i, x := range unravelInts(q, g.per) {
			in = in && x < lim[i]
		}
		if in && pairs[2*q] == math.MaxUint64 && pairs[2*q+1] == math.MaxUint64 {
			empty++
		}
	}
	return empty, nil
}

// listChunks finds the chunk objects of the grid in a listing of the
// array's prefix: a key is a chunk's when it is the key the array's
// encoding gives that chunk (no other object under the prefix, such as
// metadata, a chunk past the grid or "01" for "1", is counted).
func (r *reader) listChunks(g grid, found func(key string, idx []int, size int64)) error {
	l, ok := r.st.(objectLister)
	if !ok {
		return errors.ErrUnsupported
	}
	rank := len(r.a.Header.Shape)
	return l.WalkObjects(r.prefix, func(key string, size int64) error {
		rel := key[len(r.prefix):]
		idx, ok := chunkIndex(rel, rank, g.n)
		if ok && r.a.key(keyIndex(r.a, idx)) == rel {
			if rank == 0 {
				idx = []int{0}
			}
			found(key, idx, size)
		}
		return nil
	})
}

// chunkIndex reads the digits of a chunk key (c/0/1, 0.1, 0) as a grid
// index of rank axes, each inside the grid n; a scalar's key has none
// ("c") or one, 0.
func chunkIndex(rel string, rank int, n []int) ([]int, bool) {
	var idx []int
	for _, f := range strings.FieldsFunc(rel, func(c rune) bool { return c < '0' || c > '9' }) {
		x, err := strconv.Atoi(f)
		if err != nil {
			return nil, false
		}
		idx = append(idx, x)
	}
	if rank == 0 {
		return nil, len(idx) == 0 || len(idx) == 1 && idx[0] == 0
	}
	if len(idx) != rank {
		return nil, false
	}
	for i, x := range idx {
		if x >= n[i] {
			return nil, false
		}
	}
	return idx, true
}

// sizeChunks asks each key of the grid its size: a store that lists no
// sizes (a local directory, where a stat is cheap).
func (r *reader) sizeChunks(g grid, found func(key string, idx []int, size int64)) error {
	total := 1
	for _, n := range g.n {
		total *= n
	}
	for p := range total {
		idx := unravelInts(p, g.n)
		key := r.prefix + r.a.key(keyIndex(r.a, idx))
		size, err := r.st.Size(key)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return err
		}
		found(key, idx, size)
	}
	return nil
}
