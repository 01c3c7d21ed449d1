package compare

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/depthspace/depthspace/internal/format"
)

// side is one tensor as the scan sees it: its bytes in place (a mapped
// file is read, never copied) and the storage stride of each logical axis,
// so that a Fortran-order tensor is visited in logical (C) order.
type side struct {
	r      reader
	data   []byte
	size   int
	stride []int
}

func newSide(t Tensor) side {
	s := side{r: newReader(t.DType), data: t.Data, size: t.DType.Size, stride: make([]int, len(t.Shape))}
	acc := 1
	if t.Fortran {
		for i, d := range t.Shape {
			s.stride[i] = acc
			acc *= max(d, 1)
		}
	} else {
		for i := len(t.Shape) - 1; i >= 0; i-- {
			s.stride[i] = acc
			acc *= max(t.Shape[i], 1)
		}
	}
	return s
}

func (s *side) elem(off int) []byte { return s.data[off*s.size : (off+1)*s.size] }

// decodeReal converts len(dst) elements, stored at off, off+st, …, to
// float64. The common dtypes have their own loop; the rest go through
// reader.float.
func (s *side) decodeReal(dst []float64, off, st int) {
	d := s.data
	switch {
	case s.r.class == real && s.size == 4 && !s.r.big:
		for i := range dst {
			p := 4 * (off + i*st)
			dst[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(d[p : p+4])))
		}
	case s.r.class == real && s.size == 8 && !s.r.big:
		for i := range dst {
			p := 8 * (off + i*st)
			dst[i] = math.Float64frombits(binary.LittleEndian.Uint64(d[p : p+8]))
		}
	case s.r.class == real && s.size == 2 && !s.r.big && !s.r.dt.BFloat16:
		table := halfTable()
		for i := range dst {
			p := 2 * (off + i*st)
			dst[i] = table[binary.LittleEndian.Uint16(d[p:p+2])]
		}
	case s.r.class == integer && s.r.dt.Kind == 'u' && s.size == 1:
		for i := range dst {
			dst[i] = float64(d[off+i*st])
		}
	default:
		for i := range dst {
			dst[i] = s.r.float(s.elem(off + i*st))
		}
	}
}

// decodeComplex converts len(re) elements to complex parts.
func (s *side) decodeComplex(re, im []float64, off, st int) {
	for i := range re {
		re[i], im[i] = s.r.complex(s.elem(off + i*st))
	}
}

// offset is the storage position of the element at a logical index.
func (s *side) offset(idx []int) int {
	off := 0
	for i, v := range idx {
		off += v * s.stride[i]
	}
	return off
}

// scanner compares two tensors of the same shape element by element. It
// walks them in storage order when both are stored the same way (C, or
// both Fortran), in logical order otherwise. Each chunk of the walk is
// scanned by one goroutine; what the chunks find is combined by element
// index (the K smallest indices, the first index of a maximum), so the
// report does not depend on how many goroutines ran or in which order.
type scanner struct {
	a, b      side
	shape     []int
	cstride   []int // the C-order stride of each axis: logical flat index
	walk      []int // axes from slowest to fastest in the walk
	n         int
	tolerant  bool
	rtol      float64
	atol      float64
	maxReport int
	numeric   bool // both numeric: differences have a size
	contig    bool // both C order: the walk is the flat index itself
	// parts, when set, gather the error sums of the tolerant scan per
	// statsChunk of the flat index (stats.go): the mean then costs no
	// pass of its own. Units of the scan are whole statsChunks, so each
	// part is one worker's and is summed in index order.
	parts []meanPart
	// equal marks, with parts, the batches the scan found to be equal
	// bytes, one bit each: their errors are 0, and their finite values
	// are counted only when some error is not (foldedMeans).
	equal []uint64
	tiled bool // one side C order, the other Fortran: walk in tiles
	// msums, when set (a compare function's metric, C-order inputs),
	// gather the metric's sums per statsChunk, as parts do the
	// statistics': the metric then costs no pass of its own.
	msums    []metricSums
	infEqual bool
}

func newScanner(a, b Tensor, n int) *scanner {
	s := &scanner{a: newSide(a), b: newSide(b), shape: a.Shape, n: n}
	s.cstride = newSide(Tensor{Header: format.Header{Shape: a.Shape}}).stride
	s.walk = make([]int, len(a.Shape))
	for i := range s.walk {
		s.walk[i] = i
	}
	long := 0 // axes longer than 1: with one at most, both orders agree
	for _, d := range a.Shape {
		if d > 1 {
			long++
		}
	}
	switch {
	case !a.Fortran && !b.Fortran || long <= 1:
		s.contig = true
	case a.Fortran && b.Fortran:
		for i := range s.walk {
			s.walk[i] = len(a.Shape) - 1 - i
		}
	default:
		s.tiled = true
	}
	return s
}

// tally is what one chunk (or, combined, the whole tensor) found.
type tally struct {
	different int
	first     indexHeap // the smallest flat indices of differences, at most maxReport
	maxAbs    float64
	maxAbsAt  int // -1: no finite numeric pair seen
	maxRel    float64
	maxRelAt  int // -1: no pair with a non-zero reference seen
	// zeroRef: some finite pair differs where the reference is 0, which
	// no relative tolerance passes.
	zeroRef bool
	// hist, when the scan sums the statistics (s.parts), is the first
	// level of the median's selection (select.go).
	hist *errHist
	// Each worker writes its own tally for every difference: keep two
	// workers' tallies off one cache line.
	_ [64]byte
}

func newTally() tally { return tally{maxAbsAt: -1, maxRelAt: -1} }

// better says whether v at index i beats the maximum m reached first at at.
func better(v float64, i int, m float64, at int) bool {
	return at < 0 || v > m || v == m && i < at
}

// add merges another chunk's tally into t.
func (t *tally) add(u *tally, maxReport int) {
	t.different += u.different
	for _, i := range u.first {
		t.first.keep(i, maxReport)
	}
	if u.maxAbsAt >= 0 && better(u.maxAbs, u.maxAbsAt, t.maxAbs, t.maxAbsAt) {
		t.maxAbs, t.maxAbsAt = u.maxAbs, u.maxAbsAt
	}
	if u.maxRelAt >= 0 && better(u.maxRel, u.maxRelAt, t.maxRel, t.maxRelAt) {
		t.maxRel, t.maxRelAt = u.maxRel, u.maxRelAt
	}
	t.zeroRef = t.zeroRef || u.zeroRef
	if u.hist != nil {
		if t.hist == nil {
			t.hist = new(errHist)
		}
		t.hist.merge(u.hist)
	}
}

// indexHeap is a max-heap of flat indices bounded in size: it keeps the
// smallest ones seen. In a C-order walk indices arrive ascending and a full
// heap rejects each new one with one comparison.
type indexHeap []int

func (h *indexHeap) keep(i, limit int) {
	a := *h
	switch {
	case len(a) < limit:
		a = append(a, i)
		for c := len(a) - 1; c > 0; { // sift up
			p := (c - 1) / 2
			if a[p] >= a[c] {
				break
			}
			a[p], a[c] = a[c], a[p]
			c = p
		}
	case len(a) > 0 && i < a[0]:
		a[0] = i
		for p := 0; ; { // sift down
			c := 2*p + 1
			if c >= len(a) {
				break
			}
			if c+1 < len(a) && a[c+1] > a[c] {
				c++
			}
			if a[p] >= a[c] {
				break
			}
			a[p], a[c] = a[c], a[p]
			p = c
		}
	}
	*h = a
}

// sorted returns the kept indices in ascending order.
func (h indexHeap) sorted() []int {
	out := append([]int(nil), h...)
	slices.Sort(out)
	return out
}

// chunkElems is the least work given to one goroutine at a time.
const chunkElems = 1 << 16

func (s *scanner) run(threads int) (tally, error) {
	total := newTally()
	if s.n == 0 {
		return total, nil
	}
	threads = max(threads, 1)
	units, do := s.plan(threads)
	// Each worker keeps its own tally: tallies merge by element index
	// (smallest indices, first index of a maximum), so neither the number
	// of workers nor the order in which they take units shows in the result.
	workers := min(threads, units)
	results := make([]tally, workers)
	for w := range results {
		results[w] = newTally()
		if s.parts != nil {
			results[w].hist = new(errHist)
		}
	}
	err := parallel(workers, units, func(w int, bb *bufs, u int) { do(bb, u, &results[w]) })
	if err != nil {
		return total, err
	}
	for i := range results {
		total.add(&results[i], s.maxReport)
	}
	return total, nil
}

// parallel runs do for the units 0..units-1 on workers goroutines (the
// caller's among them), each taking the next unit until none is left; w
// names the worker, bb is its own. A fault while reading, or any panic,
// becomes the error returned rather than a crash.
func parallel(workers, units int, do func(w int, bb *bufs, u int)) error {
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	worker := func(w int) {
		defer func() {
			if r := recover(); r != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = faultError(r)
				}
				mu.Unlock()
			}
		}()
		// A mapped input truncated by another process faults on access:
		// make that a panic, recovered above, rather than a fatal SIGBUS.
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		bb := new(bufs)
		for {
			u := int(next.Add(1) - 1)
			if u >= units {
				return
			}
			do(w, bb, u)
		}
	}
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		wg.Add(1)
		go func() { defer wg.Done(); worker(w) }()
	}
	worker(0)
	wg.Wait()
	return firstErr
}

// plan cuts the scan into units for the workers: ranges of the walk, or,
// for mixed storage orders, runs of tiles.
func (s *scanner) plan(threads int) (int, func(bb *bufs, u int, t *tally)) {
	if s.tiled {
		g := s.tileGrid()
		per := max(tileElems/(tileSide*tileSide), (g.count+16*threads-1)/(16*threads))
		return (g.count + per - 1) / per, func(bb *bufs, u int, t *tally) {
			for k := u * per; k < min((u+1)*per, g.count); k++ {
				s.tile(bb, &g, k, t)
			}
		}
	}
	chunk := max(chunkElems, (s.n+16*threads-1)/(16*threads))
	if s.parts != nil || s.msums != nil {
		chunk = (chunk + statsChunk - 1) / statsChunk * statsChunk
	}
	return (s.n + chunk - 1) / chunk, func(bb *bufs, c int, t *tally) {
		lo := c * chunk
		s.chunk(bb, lo, min(lo+chunk, s.n), t)
	}
}

// A scan of one C-order and one Fortran-order tensor. In logical order the
// Fortran side would be read at the stride of all axes but the first,
// a cache miss for every element. Instead it goes by tiles of tileSide
// values of the first axis (contiguous in Fortran order) by tileSide of
// the last (contiguous in C order), at each position of the middle axes:
// within a tile both sides read lines already in cache. A tile's rows are
// spans along the last axis, so flat indices ascend within a span, which
// is all span needs.
const (
	tileSide  = 64
	tileElems = 1 << 16 // the least work a unit gets, as chunkElems
)

type tileGrid struct {
	first, last int // the outermost and innermost axes longer than 1
	rows, cols  int // tiles along them
	count       int // tiles in all, with every position of the axes between
}

func (s *scanner) tileGrid() tileGrid {
	g := tileGrid{first: -1}
	for ax, d := range s.shape {
		if d > 1 {
			if g.first < 0 {
				g.first = ax
			}
			g.last = ax
		}
	}
	g.rows = (s.shape[g.first] + tileSide - 1) / tileSide
	g.cols = (s.shape[g.last] + tileSide - 1) / tileSide
	g.count = g.rows * g.cols
	for _, d := range s.shape[g.first+1 : g.last] {
		g.count *= d
	}
	return g
}

// tile scans tile k of the grid: k runs over the positions of the axes
// between first and last, then the row blocks, then the column blocks
// (fastest). Axes outside [first, last] have extent 1.
func (s *scanner) tile(bb *bufs, g *tileGrid, k int, t *tally) {
	c, r, m := k%g.cols, (k/g.cols)%g.rows, k/(g.cols*g.rows)
	pos, offA, offB := 0, 0, 0
	for ax := g.last - 1; ax > g.first; ax-- {
		i := m % s.shape[ax]
		m /= s.shape[ax]
		pos += i * s.cstride[ax]
		offA += i * s.a.stride[ax]
		offB += i * s.b.stride[ax]
	}
	f, l := g.first, g.last
	c0 := c * tileSide
	n := min(tileSide, s.shape[l]-c0)
	pos += c0 * s.cstride[l]
	offA += c0 * s.a.stride[l]
	offB += c0 * s.b.stride[l]
	for i := r * tileSide; i < min((r+1)*tileSide, s.shape[f]); i++ {
		s.span(bb, pos+i*s.cstride[f], s.cstride[l], n, offA+i*s.a.stride[f], s.a.stride[l], offB+i*s.b.stride[f], s.b.stride[l], t)
	}
}

func faultError(r any) error {
	if err, ok := r.(error); ok {
		return fmt.Errorf("input could not be read (was the file truncated while in use?): %v", err)
	}
	return fmt.Errorf("internal error in compare: %v", r)
}

// chunk scans the elements [lo, hi) of the walk, as runs along its fastest axis.
func (s *scanner) chunk(bb *bufs, lo, hi int, t *tally) {
	if s.contig {
		s.span(bb, lo, 1, hi-lo, lo, 1, lo, 1, t)
		return
	}
	rank := len(s.shape)
	if rank == 0 {
		s.span(bb, 0, 1, 1, 0, 0, 0, 0, t)
		return
	}
	// idx is the walk position as a multi-index over the walk's axes.
	wshape := make([]int, rank)
	for i, ax := range s.walk {
		wshape[i] = s.shape[ax]
	}
	idx := unravel(lo, wshape)
	fast := s.walk[rank-1]
	dpos, sa, sb := s.cstride[fast], s.a.stride[fast], s.b.stride[fast]
	for w := lo; w < hi; {
		n := min(wshape[rank-1]-idx[rank-1], hi-w)
		pos, offA, offB := 0, 0, 0
		for i, ax := range s.walk {
			pos += idx[i] * s.cstride[ax]
			offA += idx[i] * s.a.stride[ax]
			offB += idx[i] * s.b.stride[ax]
		}
		s.span(bb, pos, dpos, n, offA, sa, offB, sb, t)
		w += n
		idx[rank-1] += n
		for i := rank - 1; i > 0 && idx[i] == wshape[i]; i-- {
			idx[i] = 0
			idx[i-1]++
		}
	}
}

// batch is how many elements are compared (and decoded) at a time.
const batch = 256

// span compares n elements at flat indices pos, pos+dpos, …, stored at
// offA, offA+sa, … in a and offB, offB+sb, … in b, a batch at a time.
// Within a span the flat indices ascend.
func (s *scanner) span(bb *bufs, pos, dpos, n, offA, sa, offB, sb int, t *tally) {
	sameStorage := sa == 1 && sb == 1 && s.a.r.big == s.b.r.big
	sameType := sameStorage && s.a.size == s.b.size && s.a.r.dt.SameLayout(s.b.r.dt)
	for i := 0; i < n; i += batch {
		m := min(batch, n-i)
		p, oa, ob := pos+i*dpos, offA+i*sa, offB+i*sb
		switch {
		case s.tolerant && s.numeric:
			// Equal bytes of the same type are close whatever the
			// tolerances, and their differences are 0: a memcmp, as in
			// exact mode (identical inputs cost the same either way).
			if sameType && bytes.Equal(s.a.data[oa*s.a.size:(oa+m)*s.a.size], s.b.data[ob*s.b.size:(ob+m)*s.b.size]) {
				if s.parts != nil {
					s.equal[p/batch/64] |= 1 << (p / batch % 64)
				}
				if s.msums != nil { // B is A here
					s.a.decodeReal(bb.ya[:m], oa, 1)
					s.msums[p/statsChunk].addBatch(bb.ya[:m], bb.ya[:m], s.infEqual)
				}
				continue
			}
			s.batchTolerant(bb, p, dpos, m, oa, sa, ob, sb, t)
		case sameStorage && bytes.Equal(s.a.data[oa*s.a.size:(oa+m)*s.a.size], s.b.data[ob*s.b.size:(ob+m)*s.b.size]):
			// Equal bytes (the usual case) cost a memcmp.
			if s.parts != nil {
				s.equal[p/batch/64] |= 1 << (p / batch % 64)
			}
		default:
			s.batchExact(bb, p, dpos, m, oa, sa, ob, sb, t)
		}
	}
}

// bufs are a batch of decoded values: a is numpy's y (the reference), b its x.
type bufs struct {
	ya, xb, yi, xi [batch]float64
	same           [batch]bool
}

// maxima are the largest differences of one batch; the indices ascend in
// a batch, so the first index of a maximum is kept by a strict >.
type maxima struct {
	abs, rel     float64
	absAt, relAt int
	zeroRef      bool // a pair differs where the reference is 0
}

func noMaxima() maxima { return maxima{abs: -1, rel: -1, absAt: -1, relAt: -1} }

func (m *maxima) add(at int, abs, ref float64) {
	if abs > m.abs {
		m.abs, m.absAt = abs, at
	}
	if ref != 0 {
		if rel := abs / ref; rel > m.rel {
			m.rel, m.relAt = rel, at
		}
	} else if abs != 0 {
		m.zeroRef = true
	}
}

func (m *maxima) merge(t *tally) {
	if m.absAt >= 0 && better(m.abs, m.absAt, t.maxAbs, t.maxAbsAt) {
		t.maxAbs, t.maxAbsAt = m.abs, m.absAt
	}
	if m.relAt >= 0 && better(m.rel, m.relAt, t.maxRel, t.maxRelAt) {
		t.maxRel, t.maxRelAt = m.rel, m.relAt
	}
	t.zeroRef = t.zeroRef || m.zeroRef
}

// decode fills the value buffers with m elements of each side.
func (s *scanner) decode(bb *bufs, m, oa, sa, ob, sb int, cplx bool) {
	if cplx {
		s.a.decodeComplex(bb.ya[:m], bb.yi[:m], oa, sa)
		s.b.decodeComplex(bb.xb[:m], bb.xi[:m], ob, sb)
		return
	}
	s.a.decodeReal(bb.ya[:m], oa, sa)
	s.b.decodeReal(bb.xb[:m], ob, sb)
}

// batchTolerant applies numpy's isclose (see closeReal) to m pairs.
func (s *scanner) batchTolerant(bb *bufs, pos, dpos, m, oa, sa, ob, sb int, t *tally) {
	cplx := s.a.r.class == complexClass || s.b.r.class == complexClass
	ints := s.a.r.class == integer && s.b.r.class == integer
	s.decode(bb, m, oa, sa, ob, sb, cplx)
	rtol, atol := s.rtol, s.atol
	mx := noMaxima()
	if cplx {
		for j := 0; j < m; j++ {
			at := pos + j*dpos
			xr, xi, yr, yi := bb.xb[j], bb.xi[j], bb.ya[j], bb.yi[j]
			if !closeComplex(xr, xi, yr, yi, rtol, atol) {
				t.note(at, s.maxReport)
			}
			if (xr-xr)+(xi-xi)+(yr-yr)+(yi-yi) == 0 { // all finite
				abs, ref := math.Hypot(yr-xr, yi-xi), math.Hypot(yr, yi)
				mx.add(at, abs, ref)
				if s.parts != nil {
					s.parts[at/statsChunk].add(abs, ref)
					t.hist.add(abs)
				}
			} else if s.parts != nil && (!sameNonFinite(xr, yr) || !sameNonFinite(xi, yi)) {
				s.parts[at/statsChunk].nonFinite++
			}
		}
		mx.merge(t)
		return
	}
	ya, xb := bb.ya[:m], bb.xb[:m]
	if s.msums != nil {
		s.msums[pos/statsChunk].addBatch(ya, xb, s.infEqual)
	}
	// The batch's error sums, added to its part once (a batch lies in one
	// statsChunk: the scan's units are whole ones); none without parts.
	var acc meanPart
	sums := s.parts != nil
	for j := range ya {
		x, y := xb[j], ya[j]
		at := pos + j*dpos
		if !closeReal(x, y, rtol, atol) {
			t.note(at, s.maxReport)
		}
		if (x-x)+(y-y) != 0 { // not both finite
			if !sameNonFinite(x, y) {
				acc.nonFinite++
			}
			continue
		}
		abs, ref := math.Abs(x-y), math.Abs(y)
		if ints {
			// Integers beyond 2^53 are measured exactly.
			var ok bool
			if abs, ref, ok = s.diff(s.a.elem(oa+j*sa), s.b.elem(ob+j*sb)); !ok {
				continue
			}
		}
		mx.add(at, abs, ref)
		if sums {
			acc.add(abs, ref)
			t.hist.add(abs)
		}
	}
	if sums {
		s.parts[pos/statsChunk].merge(&acc)
	}
	mx.merge(t)
}

// batchExact compares m pairs bit for bit. With s.parts set it also sums
// the errors for the statistics, as batchTolerant does: pairs with the
// same bits are errors of 0 (when finite).
func (s *scanner) batchExact(bb *bufs, pos, dpos, m, oa, sa, ob, sb int, t *tally) {
	same := bb.same[:m]
	s.sameBits(same, oa, sa, ob, sb)
	first := slices.Index(same, false)
	stats := s.parts != nil
	if first < 0 && !stats {
		return
	}
	if !s.numeric {
		for j := first; j < m; j++ {
			if !same[j] {
				t.note(pos+j*dpos, s.maxReport)
			}
		}
		return
	}
	mx := noMaxima()
	var acc meanPart
	sameFinite := 0 // pairs with the same bits, finite: errors of 0
	if s.a.r.class == integer {
		differ := 0
		for j := max(first, 0); j < m; j++ {
			if same[j] {
				continue
			}
			differ++
			t.note(pos+j*dpos, s.maxReport)
			if abs, ref, ok := s.diff(s.a.elem(oa+j*sa), s.b.elem(ob+j*sb)); ok {
				mx.add(pos+j*dpos, abs, ref)
				acc.add(abs, ref)
				t.hist.add(abs)
			}
		}
		sameFinite = m - differ // integers are finite
	} else {
		cplx := s.a.r.class == complexClass
		s.decode(bb, m, oa, sa, ob, sb, cplx)
		for j := max(first, 0); j < m; j++ {
			if same[j] {
				continue
			}
			at := pos + j*dpos
			t.note(at, s.maxReport)
			x, y, xi, yi := bb.xb[j], bb.ya[j], 0.0, 0.0
			if cplx {
				xi, yi = bb.xi[j], bb.yi[j]
			}
			switch {
			case (x-x)+(y-y)+(xi-xi)+(yi-yi) == 0:
				abs, ref := math.Abs(y-x), math.Abs(y)
				if cplx {
					abs, ref = math.Hypot(y-x, yi-xi), math.Hypot(y, yi)
				}
				mx.add(at, abs, ref)
				acc.add(abs, ref)
				t.hist.add(abs)
			case stats && (!sameNonFinite(x, y) || !sameNonFinite(xi, yi)):
				acc.nonFinite++
			}
		}
		// A loop of its own: two predictable tests per element.
		switch {
		case !stats:
		case cplx:
			for j, same := range same {
				if same && (bb.ya[j]-bb.ya[j])+(bb.yi[j]-bb.yi[j]) == 0 {
					sameFinite++
				}
			}
		default:
			for j, same := range same {
				if same && bb.ya[j]-bb.ya[j] == 0 {
					sameFinite++
				}
			}
		}
	}
	if stats {
		acc.n += sameFinite
		t.hist.zeros += sameFinite
		s.parts[pos/statsChunk].merge(&acc)
	}
	mx.merge(t)
}

// sameBits sets same[j] when the j-th pair has the same bits.
func (s *scanner) sameBits(same []bool, oa, sa, ob, sb int) {
	da, db := s.a.data, s.b.data
	if s.a.r.big == s.b.r.big {
		switch s.a.size {
		case 4:
			for j := range same {
				p, q := 4*(oa+j*sa), 4*(ob+j*sb)
				same[j] = binary.LittleEndian.Uint32(da[p:p+4]) == binary.LittleEndian.Uint32(db[q:q+4])
			}
			return
		case 8:
			for j := range same {
				p, q := 8*(oa+j*sa), 8*(ob+j*sb)
				same[j] = binary.LittleEndian.Uint64(da[p:p+8]) == binary.LittleEndian.Uint64(db[q:q+8])
			}
			return
		case 2:
			for j := range same {
				p, q := 2*(oa+j*sa), 2*(ob+j*sb)
				same[j] = binary.LittleEndian.Uint16(da[p:p+2]) == binary.LittleEndian.Uint16(db[q:q+2])
			}
			return
		case 1:
			for j := range same {
				same[j] = da[oa+j*sa] == db[ob+j*sb]
			}
			return
		}
	}
	for j := range same {
		same[j] = sameBits(s.a.r, s.b.r, s.a.elem(oa+j*sa), s.b.elem(ob+j*sb))
	}
}

func (t *tally) note(i, maxReport int) {
	t.different++
	t.first.keep(i, maxReport)
}

// diff returns |a - b| and |a|, or ok false when a value is not finite.
func (s *scanner) diff(ea, eb []byte) (abs, ref float64, ok bool) {
	ra, rb := s.a.r, s.b.r
	switch {
	case ra.class == integer && rb.class == integer:
		na, ma := ra.integer(ea)
		nb, mb := rb.integer(eb)
		switch {
		case na == nb && ma >= mb:
			abs = float64(ma - mb)
		case na == nb:
			abs = float64(mb - ma)
		default:
			sum, carry := bits.Add64(ma, mb, 0)
			abs = float64(sum) + float64(carry)*0x1p64
		}
		return abs, float64(ma), true
	case ra.class == complexClass || rb.class == complexClass:
		ar, ai := ra.complex(ea)
		br, bi := rb.complex(eb)
		if !finite(ar) || !finite(ai) || !finite(br) || !finite(bi) {
			return 0, 0, false
		}
		return math.Hypot(ar-br, ai-bi), math.Hypot(ar, ai), true
	}
	a, b := ra.float(ea), rb.float(eb)
	if !finite(a) || !finite(b) {
		return 0, 0, false
	}
	return math.Abs(a - b), math.Abs(a), true
}

// unravel turns a flat C-order index into a multi-index.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for ax := len(shape) - 1; ax >= 0; ax-- {
		if shape[ax] > 0 {
			idx[ax] = i % shape[ax]
			i /= shape[ax]
		}
	}
	return idx
}
