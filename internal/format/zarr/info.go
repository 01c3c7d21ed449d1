package zarr

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
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

// survey counts the chunks once: each key of the grid sized (an index
// read for a shard).
func (r *reader) survey() *survey {
	s := &r.info
	s.once.Do(func() {
		a := r.a
		shape := rank0(a.Header.Shape)
		grid := make([]int, len(shape))
		n := 1
		for i := range shape {
			grid[i] = (shape[i] + a.Chunks[i] - 1) / a.Chunks[i]
			n *= grid[i]
		}
		per := 1
		var perShape []int
		if a.shard != nil {
			per = a.shard.perShard
			perShape = make([]int, len(shape))
			for i := range shape {
				perShape[i] = a.Chunks[i] / a.Inner[i]
			}
		}
		for p := range n {
			idx := unravelInts(p, grid)
			key := r.prefix + a.key(keyIndex(a, idx))
			// The inner chunks of a shard that lie in the array: those
			// wholly past its end are not chunks of it.
			var inside []int
			for q := range per {
				in := true
				if a.shard != nil {
					for i, x := range unravelInts(q, perShape) {
						in = in && idx[i]*a.Chunks[i]+x*a.Inner[i] < shape[i]
					}
				}
				if in {
					inside = append(inside, q)
				}
			}
			s.chunks += len(inside)
			size, err := r.st.Size(key)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				s.missing += len(inside)
				continue
			case err != nil:
				s.err = err
				return
			}
			s.stored += size
			if a.shard == nil {
				continue
			}
			pairs, err := readIndex(r, key)
			if err != nil {
				s.err = err
				return
			}
			for _, q := range inside {
				if pairs[2*q] == math.MaxUint64 && pairs[2*q+1] == math.MaxUint64 {
					s.missing++
				}
			}
		}
	})
	return s
}
