package ops

import (
	"errors"
	"sort"
)

// Streaming a plan in chunks.
//
// A file far larger than memory is converted by cutting the permutation into
// chunks that each read a few contiguous byte ranges of the input and write
// a few contiguous byte ranges of the output, through buffers that are
// reused (docs/performance.md: pread/pwrite into reused buffers beats
// mapping on this machine by 2–5×).
//
// The cut uses one property of SPEC's operators: apart from the block
// offsets ki, the labels (N, C, o1…oK) appear in the same relative order in
// the input and in the output, for every op, order and layout. A chunk
// keeps every ki whole, a suffix of the other labels whole, a range of one
// "split" label, and one value of each label outside it. Its input is then
// at most B contiguous ranges, its output too, each at least chunk/B long.

// Segment is a contiguous byte range of the input or the output tensor data.
type Segment struct{ Off, Len int64 }

// Chunker cuts a plan into chunks of bounded size.
type Chunker struct {
	p       *Plan
	split   int   // dim index (output order) of the split label, -1: none
	rng     int   // range of the split label per chunk
	fixed   []int // dims taken one value per chunk, outermost first
	inOrder []int // dim indices sorted by input stride, outermost first
	outStr  []int // output stride of each dim (elements)
	n       int   // number of chunks
	bytes   int   // the largest chunk, in bytes
}

// ErrNoChunks means the plan cannot be streamed (Fortran-order input, a
// crop or a pad: Streams says so beforehand).
var ErrNoChunks = errors.New("plan cannot be streamed in chunks")

// Streams reports whether the plan can run chunk by chunk (Chunker).
func (p *Plan) Streams() bool { return !p.fortran && len(p.isBlock) == len(p.dims) && p.box == nil }

// Chunker plans chunks of at most budget bytes where possible. seqIn asks
// that chunks read the input strictly front to back (standard input),
// seqOut that they write the output front to back (standard output); either
// may force bigger chunks (at most one batch item).
func (p *Plan) Chunker(budget int, seqIn, seqOut bool) (*Chunker, error) {
	if p.fortran || len(p.isBlock) != len(p.dims) || p.box != nil {
		return nil, ErrNoChunks
	}
	m := len(p.dims)
	c := &Chunker{p: p, split: -1, outStr: make([]int, m)}
	acc := 1
	for i := m - 1; i >= 0; i-- {
		c.outStr[i] = acc
		acc *= p.dims[i]
	}
	c.inOrder = make([]int, m)
	for i := range c.inOrder {
		c.inOrder[i] = i
	}
	// Outermost first; ties (extent-1 dims) keep output order.
	sort.SliceStable(c.inOrder, func(a, b int) bool { return p.stride[c.inOrder[a]] > p.stride[c.inOrder[b]] })
	inRank := make([]int, m)
	for r, d := range c.inOrder {
		inRank[d] = r
	}

	var outer []int // non-block dims, outermost first
	elems := 1
	for d := 0; d < m; d++ {
		if p.isBlock[d] {
			elems *= p.dims[d]
		} else {
			outer = append(outer, d)
		}
	}
	budgetElems := max(budget/p.ElemSize, 1)
	// Grow the whole part from the innermost label outwards.
	s := len(outer) - 1
	for ; s >= 0; s-- {
		d := outer[s]
		if elems*p.dims[d] > budgetElems && p.dims[d] > 1 {
			break
		}
		elems *= p.dims[d]
	}
	// A sequential side needs the split label outside every block label of
	// that side, or chunks would interleave their ranges.
	for ; s >= 0; s-- {
		d := outer[s]
		ok := true
		for b := 0; b < m; b++ {
			if p.isBlock[b] && p.dims[b] > 1 && ((seqIn && inRank[b] < inRank[d]) || (seqOut && b < d)) {
				ok = false
			}
		}
		if ok {
			break
		}
		elems *= p.dims[d]
	}
	c.n = 1
	if s >= 0 {
		c.split = outer[s]
		c.rng = max(1, min(budgetElems/max(elems, 1), p.dims[c.split]))
		c.fixed = append(c.fixed, outer[:s]...)
		for _, d := range c.fixed {
			c.n *= p.dims[d]
		}
		c.n *= (p.dims[c.split] + c.rng - 1) / c.rng
		elems *= c.rng
	}
	for _, d := range outer {
		if p.dims[d] == 0 {
			c.n = 0
		}
	}
	c.bytes = elems * p.ElemSize
	return c, nil
}

// Len is the number of chunks.
func (c *Chunker) Len() int { return c.n }

// MaxBytes is the size of the largest chunk: the buffers a worker needs.
func (c *Chunker) MaxBytes() int { return c.bytes }

// Chunk describes chunk i: its box of the tensor (a start and a count for
// every dim, in output order), the input ranges it reads in the order they
// fill its input buffer, and the output ranges in the order its output
// buffer holds them.
type Chunk struct {
	start, count []int
	In, Out      []Segment
	Bytes        int
}

// Chunk returns chunk i (0 ≤ i < Len()), in an order that reads the input
// front to back.
func (c *Chunker) Chunk(i int) Chunk {
	p := c.p
	m := len(p.dims)
	ch := Chunk{start: make([]int, m), count: append([]int(nil), p.dims...)}
	if c.split >= 0 {
		per := (p.dims[c.split] + c.rng - 1) / c.rng
		x := i % per
		i /= per
		ch.start[c.split] = x * c.rng
		ch.count[c.split] = min(c.rng, p.dims[c.split]-x*c.rng)
		for f := len(c.fixed) - 1; f >= 0; f-- {
			d := c.fixed[f]
			ch.start[d] = i % p.dims[d]
			ch.count[d] = 1
			i /= p.dims[d]
		}
	}
	elems := 1
	for _, n := range ch.count {
		elems *= n
	}
	ch.Bytes = elems * p.ElemSize
	order := make([]int, m)
	for d := range order {
		order[d] = d
	}
	ch.Out = segments(order, ch.start, ch.count, p.dims, c.outStr, p.ElemSize)
	ch.In = segments(c.inOrder, ch.start, ch.count, p.dims, p.stride, p.ElemSize)
	return ch
}

// segments lists the contiguous byte ranges a box covers in a tensor whose
// dims, outermost first, are order, with the given element strides.
func segments(order, start, count, dims, stride []int, elem int) []Segment {
	// q: the innermost dim not wholly covered; everything inside it is
	// whole, so each value of the dims outside q is one contiguous range.
	q := -1
	for r := len(order) - 1; r >= 0; r-- {
		if count[order[r]] != dims[order[r]] {
			q = r
			break
		}
	}
	if q < 0 { // the whole tensor
		n := 1
		for _, d := range dims {
			n *= d
		}
		return []Segment{{0, int64(n * elem)}}
	}
	run := 1
	for r := q; r < len(order); r++ {
		run *= count[order[r]]
	}
	base := start[order[q]] * stride[order[q]]
	var outer []int
	for r := 0; r < q; r++ {
		d := order[r]
		base += start[d] * stride[d]
		if count[d] > 1 {
			outer = append(outer, d)
		}
	}
	var segs []Segment
	idx := make([]int, len(outer))
	for {
		off := base
		for x, d := range outer {
			off += idx[x] * stride[d]
		}
		s := Segment{int64(off * elem), int64(run * elem)}
		if n := len(segs); n > 0 && segs[n-1].Off+segs[n-1].Len == s.Off {
			segs[n-1].Len += s.Len
		} else {
			segs = append(segs, s)
		}
		x := len(outer) - 1
		for ; x >= 0; x-- {
			idx[x]++
			if idx[x] < count[outer[x]] {
				break
			}
			idx[x] = 0
		}
		if x < 0 {
			return segs
		}
	}
}

// Run computes a chunk: src holds its input ranges back to back, dst
// receives its output ranges back to back, both ch.Bytes long.
func (c *Chunker) Run(ch Chunk, dst, src []byte, threads int) error {
	p := c.p
	m := len(p.dims)
	// The chunk's input, compact, in input order.
	stride := make([]int, m)
	acc := 1
	for r := m - 1; r >= 0; r-- {
		d := c.inOrder[r]
		stride[d] = acc
		acc *= ch.count[d]
	}
	if len(dst) != ch.Bytes || len(src) != ch.Bytes {
		return errors.New("internal error: chunk buffers of the wrong size")
	}
	if ch.Bytes == 0 {
		return nil
	}
	return p.runParts(ch.count, stride, nil, dst, src, threads, false)
}
