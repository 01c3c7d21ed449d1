package ops

import (
	"fmt"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Run executes the plan: dst receives the output tensor (C order) gathered
// from src, the input tensor as stored: p.Bytes() and p.InBytes() long.
// threads goroutines share the work; every byte of dst is written exactly
// once, so the result does not depend on threads.
//
// A memory fault inside the kernel (a mapped input truncated by another
// process raises SIGBUS) comes back as an error instead of killing the
// process.
func (p *Plan) Run(dst, src []byte, threads int) error {
	if len(dst) != p.Bytes() || len(src) != p.InBytes() {
		return fmt.Errorf("internal error: buffers of %d and %d bytes for a %d-byte tensor", len(dst), len(src), p.Bytes())
	}
	if p.Bytes() == 0 {
		return nil
	}
	if err := p.runWhole(dst, src, max(threads, 1)); err != nil {
		return err
	}
	if p.box != nil {
		return p.runEdgesSafely(dst, src, 0, p.Items())
	}
	return nil
}

// wholeRun is how Run last cut the whole gather (the box of a plan with
// edges) for goroutines: the works of its parts, for buffers of that
// alignment and that many threads. A plan is made once and run on every
// file of its shape in a batch, and building the gathers again for each
// small file was a third of what such a batch allocated.
type wholeRun struct {
	threads            int
	dstAlign, srcAlign uintptr
	works              []work
}

// runWhole runs the whole gather, cut as the last Run with buffers of the
// same alignment and as many threads cut it (wholeRun).
func (p *Plan) runWhole(dst, src []byte, threads int) error {
	dims, ostride := p.dims, []int(nil)
	if p.box != nil {
		dims, ostride = p.box, p.ostride
	}
	if product(dims) == 0 {
		return nil // an empty box: a crop or pad of an axis shorter than its block
	}
	// newGather and widen look at the alignment of both buffers up to 8
	// bytes; nothing else of them.
	dstAlign, srcAlign := uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%8, uintptr(unsafe.Pointer(unsafe.SliceData(src)))%8
	run := p.whole.Load()
	if run == nil || run.threads != threads || run.dstAlign != dstAlign || run.srcAlign != srcAlign {
		if ostride == nil {
			ostride = denseStrides(dims, false)
		}
		run = &wholeRun{threads: threads, dstAlign: dstAlign, srcAlign: srcAlign}
		for _, pt := range p.parts(dims, p.stride, ostride) {
			run.works = append(run.works, newGather(pt, p.ElemSize, dst, src).plan(threads))
		}
		p.whole.Store(run)
	}
	for i := range run.works {
		w := run.works[i] // runWork changes its copy
		w.stream = len(dst) >= streamBytes
		if err := runWork(&w, dst, src, threads); err != nil {
			return err
		}
	}
	return nil
}

// runEdgesSafely runs the slabs (edges.go), a fault in a mapped input
// coming back as an error as in the kernels.
func (p *Plan) runEdgesSafely(dst, src []byte, first, count int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &FaultError{Value: r}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	p.runEdges(dst, src, first, count)
	return nil
}

// runParts runs the gather dims/stride (output dense in output order
// unless ostride says otherwise), cut into the parts of the plan's block
// order (blockorder.go), one after another.
func (p *Plan) runParts(dims, stride, ostride []int, dst, src []byte, threads int, mayStream bool) error {
	if product(dims) == 0 {
		return nil // an empty box: a crop or pad of an axis shorter than its block
	}
	if ostride == nil {
		ostride = denseStrides(dims, false)
	}
	pts := p.parts(dims, stride, ostride)
	gs := make([]gather, len(pts))
	for i, pt := range pts {
		gs[i] = newGather(pt, p.ElemSize, dst, src)
	}
	return runGathers(gs, dst, src, max(threads, 1), mayStream)
}

// RunItems runs the plan for the batch items [first, first+count) only:
// dst holds just those output items, src the whole input. It lets an output
// be produced item by item in bounded memory (a pipe, stdout).
func (p *Plan) RunItems(dst, src []byte, first, count, threads int) error {
	N := p.Items()
	if len(src) != p.InBytes() || first < 0 || count < 0 || first > N || count > N-first {
		return fmt.Errorf("internal error: items [%d,%d) of %d", first, first+count, N)
	}
	itemBytes := 0
	if N > 0 {
		itemBytes = p.Bytes() / N
	}
	if len(dst) != count*itemBytes {
		return fmt.Errorf("internal error: %d-byte buffer for %d items of %d bytes", len(dst), count, itemBytes)
	}
	if len(dst) == 0 {
		return nil
	}
	// The batch axis is the first output axis of every plan: restrict it.
	dims := append([]int(nil), p.dims...)
	dims[0] = count
	off := first * p.stride[0] * p.ElemSize
	if p.box != nil {
		box := append([]int(nil), p.box...)
		box[0] = count
		if err := p.runParts(box, p.stride, p.ostride, dst, src[off:], threads, true); err != nil {
			return err
		}
		return p.runEdgesSafely(dst, src, first, count)
	}
	return p.runParts(dims, p.stride, nil, dst, src[off:], threads, true)
}

// part is a gather with constant strides: output element
// obase + Σ x[d]·ostride[d] comes from input element ibase + Σ x[d]·stride[d]
// for every x below dims. A plan is one part, or several for a block order.
type part struct {
	dims, stride, ostride []int
	ibase, obase          int
}

// gather is the simplified form the kernels execute: dims in output order,
// each with its input and output stride, counted in units of `unit` bytes.
// The innermost dim has output stride 1.
type gather struct {
	dims, stride, ostride []int
	ibase, obase          int
	unit                  int
}

// newGather simplifies a gather and chooses the machine word the kernels move.
// Elements of 1, 2, 4, 8 and 16 bytes move as one word; any other size n
// (S<n>, U<n>, V<n>) becomes an extra innermost axis of n/unit words, which
// then merges with its neighbours wherever the bytes are contiguous.
func newGather(pt part, elem int, dst, src []byte) gather {
	unit := elem
	switch elem {
	case 1, 2, 4, 8, 16:
	default:
		unit = 1
		for _, u := range []int{8, 4, 2} {
			if elem%u == 0 {
				unit = u
				break
			}
		}
	}
	// Words are read through typed pointers, so both buffers must be aligned
	// to the word (npy data starts on a 64-byte boundary, but a hand-made
	// header need not); otherwise fall back to smaller words.
	align := min(unit, 8)
	for align > 1 && (uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%uintptr(align) != 0 ||
		uintptr(unsafe.Pointer(unsafe.SliceData(src)))%uintptr(align) != 0) {
		align /= 2
	}
	if align < min(unit, 8) {
		unit = align
	}
	w := elem / unit
	g := gather{unit: unit, ibase: pt.ibase * w, obase: pt.obase * w}
	for i, d := range pt.dims {
		g.dims = append(g.dims, d)
		g.stride = append(g.stride, pt.stride[i]*w)
		g.ostride = append(g.ostride, pt.ostride[i]*w)
	}
	if w > 1 {
		g.dims = append(g.dims, w)
		g.stride = append(g.stride, 1)
		g.ostride = append(g.ostride, 1)
	}
	g.sortByOutput()
	g.simplify()
	g.widen(dst, src)
	return g
}

// widen folds a short innermost run that is contiguous on both sides into
// the word: a [H, W] mosaic to [H/2, W/2, 4] moves pairs of uint16 that
// stay together, so as 4-byte words it is an interleave of two rows (a
// SWAR kernel) instead of one 4-byte copy per tile.
func (g *gather) widen(dst, src []byte) {
	for {
		n := len(g.dims)
		r := g.dims[n-1]
		wide := g.unit * r
		if n < 2 || g.stride[n-1] != 1 || g.ostride[n-1] != 1 || (wide != 2 && wide != 4 && wide != 8 && wide != 16) {
			return
		}
		a := uintptr(min(wide, 8))
		if uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%a != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(src)))%a != 0 ||
			g.ibase%r != 0 || g.obase%r != 0 {
			return
		}
		for i := 0; i < n-1; i++ {
			if g.stride[i]%r != 0 || g.ostride[i]%r != 0 {
				return
			}
		}
		for i := 0; i < n-1; i++ {
			g.stride[i] /= r
			g.ostride[i] /= r
		}
		g.ibase, g.obase, g.unit = g.ibase/r, g.obase/r, wide
		g.dims, g.stride, g.ostride = g.dims[:n-1], g.stride[:n-1], g.ostride[:n-1]
		g.simplify()
	}
}

// sortByOutput puts the dims in the order of their output steps, longest
// first. A plain plan already is; a part of a block order may not be (a
// col-major block walks the first block axis fastest), and in output order
// its contiguous neighbours meet and merge: a [H, W] mosaic in col-major
// becomes an interleave of two rows.
func (g *gather) sortByOutput() {
	idx := make([]int, len(g.dims))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return abs(g.ostride[idx[a]]) > abs(g.ostride[idx[b]]) })
	dims, stride, ostride := make([]int, len(idx)), make([]int, len(idx)), make([]int, len(idx))
	for x, i := range idx {
		dims[x], stride[x], ostride[x] = g.dims[i], g.stride[i], g.ostride[i]
	}
	g.dims, g.stride, g.ostride = dims, stride, ostride
}

// simplify drops axes of extent 1 and merges neighbours that are contiguous
// in the input as they are in the output, so that a copy of contiguous bytes
// becomes one long run. The innermost dim then gets output stride 1: a
// dim walked backwards is turned around, and where the innermost output
// step is longer (a part of a block order) a dim of extent 1 is added.
func (g *gather) simplify() {
	var dims, stride, ostride []int
	for i, d := range g.dims {
		if d == 1 {
			continue
		}
		if n := len(dims); n > 0 && stride[n-1] == g.stride[i]*d && ostride[n-1] == g.ostride[i]*d {
			dims[n-1] *= d
			stride[n-1], ostride[n-1] = g.stride[i], g.ostride[i]
			continue
		}
		dims = append(dims, d)
		stride = append(stride, g.stride[i])
		ostride = append(ostride, g.ostride[i])
	}
	if n := len(dims); n > 0 && ostride[n-1] < 0 {
		g.obase += (dims[n-1] - 1) * ostride[n-1]
		g.ibase += (dims[n-1] - 1) * stride[n-1]
		ostride[n-1], stride[n-1] = -ostride[n-1], -stride[n-1]
	}
	if n := len(dims); n == 0 || ostride[n-1] != 1 {
		dims, stride, ostride = append(dims, 1), append(stride, 0), append(ostride, 1)
	}
	g.dims, g.stride, g.ostride = dims, stride, ostride
}

// work is how a gather is cut into pieces for goroutines. The innermost
// output axis J and the innermost input axis L (stride 1) form a 2-D tile;
// every other axis is an outer loop. When the outer loops are too few to
// share between goroutines, the J or L range of each tile is split instead.
type work struct {
	g            gather
	outStride    []int // output stride of each dim
	outer        []int // indices of outer dims
	j, l         int   // tile axes (j == l: a contiguous run)
	nOuter       int   // product of outer extents
	split        int   // pieces per tile
	splitL       bool  // split along L instead of J
	pieces       int
	tileJ, tileL int
	stream       bool // output too large for the cache: bypass it
}

func (g gather) plan(threads int) work {
	m := len(g.dims)
	w := work{g: g, outStride: g.ostride}
	// L is the input-contiguous axis. A whole dense tensor always has one;
	// a batch slice of a Fortran-order tensor may not, and then the tile
	// degenerates to strided rows along J.
	w.j, w.l = m-1, m-1
	for i, s := range g.stride {
		if s == 1 {
			w.l = i
		}
	}
	if g.stride[w.l] != 1 {
		w.l = w.j
	}
	w.nOuter = 1
	for i := range g.dims {
		if i != w.j && i != w.l {
			w.outer = append(w.outer, i)
			w.nOuter *= g.dims[i]
		}
	}
	w.tileJ, w.tileL = g.dims[w.j], 1
	if w.l != w.j {
		w.tileL = g.dims[w.l]
	}
	// A de-interleave tile reads one contiguous stretch of input and writes
	// tileL output rows. Walking the outer axes in input order then reads
	// the input front to back while the output is written as a few
	// sequential streams; in output order it would read every other input
	// row per pass. Measured (BenchmarkKernel, -j 2, median of 3): W1 s2d went
	// from 1.85x to 1.32x the time of a copy of the same bytes.
	if w.l != w.j && g.stride[w.j] == w.tileL {
		sort.SliceStable(w.outer, func(a, b int) bool { return abs(g.stride[w.outer[a]]) > abs(g.stride[w.outer[b]]) })
	}
	w.split = 1
	// Enough pieces that two goroutines finishing at different times still
	// balance, few enough that each piece amortises its set-up.
	want := 1
	if threads > 1 {
		want = 8 * threads
	}
	if w.nOuter < want {
		need := (want + w.nOuter - 1) / w.nOuter
		if w.tileJ >= w.tileL {
			w.split = min(need, w.tileJ)
		} else {
			w.split, w.splitL = min(need, w.tileL), true
		}
	}
	w.pieces = w.nOuter * w.split
	return w
}

// streamBytes is the output size from which stores bypass the cache. An
// output this large would be evicted before anyone reads it back, and
// ordinary stores first read every output line (as Go's memmove, which
// streams from 1 MiB). The streamed pipeline's chunks never use them:
// pwrite reads each chunk right after the kernel writes it. (A variable so
// that tests can run small outputs through the streaming kernels.)
var streamBytes = 16 << 20

// minBytesPerThread is the least output a goroutine of the kernel gets.
const minBytesPerThread = 256 << 10

// runGathers executes the parts of a plan one after another. mayStream
// allows the cache-bypassing stores for a large output; a chunk of the
// streamed pipeline passes false, since it is read back right away.
//
// Running them in lockstep (every part on a piece of outer iterations
// before the next piece) was tried for SID's order on W1 and gained 4%:
// a part that reads every other input row takes as long as the whole
// default order, and the rows the other part needs are no longer at hand
// a piece later. The linear orders need no parts (blockorder.go).
func runGathers(gs []gather, dst, src []byte, threads int, mayStream bool) error {
	for _, g := range gs {
		w := g.plan(threads)
		w.stream = mayStream && len(dst) >= streamBytes
		if err := runWork(&w, dst, src, threads); err != nil {
			return err
		}
	}
	return nil
}

// runWork shares the outer iterations of w between goroutines.
func runWork(w *work, dst, src []byte, threads int) error {
	if w.pieces == 0 {
		return nil
	}
	// A piece is either a contiguous range of outer iterations (when they
	// are plentiful) or one part of one tile (when they are not).
	nPieces, per := 1, w.nOuter
	switch {
	case threads == 1:
		w.split = 1
	case w.split > 1:
		nPieces = w.nOuter * w.split
	default:
		chunks := min(w.nOuter, 8*threads)
		per = (w.nOuter + chunks - 1) / chunks
		nPieces = (w.nOuter + per - 1) / per
	}
	// A goroutine costs more than moving a few kilobytes (on a fresh
	// process, a new OS thread), so small tensors use fewer of them.
	threads = min(threads, nPieces, 1+len(dst)/minBytesPerThread)
	if threads <= 1 {
		// On the caller's goroutine, with no closure or shared counter
		// to allocate: a small tensor of a batch of thousands.
		return w.pieces1(dst, src, nil, nPieces, per)
	}
	shared := *w // the goroutines' copy: w itself stays on the caller's stack
	// Copies that are never reassigned are captured by value: nPieces
	// and per themselves would be moved to the heap on every run,
	// the one-goroutine runs above included.
	sharedPieces, sharedPer := nPieces, per
	var next atomic.Int64
	errs := make([]error, threads)
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[t] = shared.pieces1(dst, src, &next, sharedPieces, sharedPer) }()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// pieces1 runs pieces of w until none is left: the one taken from next
// each time (shared between goroutines), or all of them in order for a
// nil next. A fault in the memory read (a mapped file truncated meanwhile)
// comes back as a FaultError.
func (w *work) pieces1(dst, src []byte, next *atomic.Int64, nPieces, per int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &FaultError{Value: r}
		}
	}()
	// A truncated mapped file faults on access; turn that into a panic
	// recovered above rather than a SIGBUS that kills the process.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for j := 0; ; j++ {
		i := j
		if next != nil {
			i = int(next.Add(1) - 1)
		}
		if i >= nPieces {
			return nil
		}
		if w.split > 1 {
			w.exec(dst, src, i/w.split, i/w.split+1, i%w.split, w.split)
		} else {
			w.exec(dst, src, i*per, min((i+1)*per, w.nOuter), 0, 1)
		}
	}
}

// FaultError is returned when the input memory could not be read (a mapped
// file shrank underneath us).
type FaultError struct{ Value any }

func (e *FaultError) Error() string {
	if err, ok := e.Value.(error); ok {
		return "input could not be read (was the file truncated while in use?): " + err.Error()
	}
	return fmt.Sprintf("internal error in the kernel: %v", e.Value)
}

// exec runs outer iterations [a, b), each tile cut to part `part` of `parts`.
func (w *work) exec(dst, src []byte, a, b, part, parts int) {
	switch w.g.unit {
	case 1:
		execT(w, asWords[uint8](dst), asWords[uint8](src), dst, src, a, b, part, parts)
	case 2:
		execT(w, asWords[uint16](dst), asWords[uint16](src), dst, src, a, b, part, parts)
	case 4:
		execT(w, asWords[uint32](dst), asWords[uint32](src), dst, src, a, b, part, parts)
	case 8:
		execT(w, asWords[uint64](dst), asWords[uint64](src), dst, src, a, b, part, parts)
	case 16:
		execT(w, asWords[[2]uint64](dst), asWords[[2]uint64](src), dst, src, a, b, part, parts)
	}
}

// asWords views a byte slice as words. Sound because newGather checked the
// alignment of both buffers for this word size, the length is a whole number
// of words (every element is), and the bytes stay owned by the caller.
func asWords[T any](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

func execT[T any](w *work, dst, src []T, dstB, srcB []byte, a, b, part, parts int) {
	g := &w.g
	// Decompose a into outer indices.
	var idxBuf [8]int
	var idx []int
	if len(w.outer) <= len(idxBuf) {
		idx = idxBuf[:len(w.outer)]
	} else {
		idx = make([]int, len(w.outer))
	}
	bi, bo := g.ibase, g.obase
	rem := a
	for x := len(w.outer) - 1; x >= 0; x-- {
		d := w.outer[x]
		idx[x] = rem % g.dims[d]
		rem /= g.dims[d]
		bi += idx[x] * g.stride[d]
		bo += idx[x] * w.outStride[d]
	}
	j0, j1 := 0, w.tileJ
	l0, l1 := 0, w.tileL
	if parts > 1 {
		if w.splitL {
			l0, l1 = w.tileL*part/parts, w.tileL*(part+1)/parts
		} else {
			j0, j1 = w.tileJ*part/parts, w.tileJ*(part+1)/parts
		}
	}
	sJ := g.stride[w.j]
	tL := w.outStride[w.l]
	// A tile that is a whole de-interleave (the input contiguous across it)
	// or a whole interleave (the output contiguous) has a SWAR kernel for
	// the common element sizes and factors (swar.go).
	e := g.unit
	var deint deintRowsFunc
	var inter interRowsFunc
	if w.j != w.l {
		// A tile can be both (rows of tileL words tileL apart, an output
		// row of tileJ-word groups: a [H, W] mosaic's 2×2 blocks); the
		// kernel is chosen by the factor it has.
		if l0 == 0 && l1 == w.tileL && sJ == w.tileL {
			deint = fastDeint(e, w.tileL)
		}
		if deint == nil && j0 == 0 && j1 == w.tileJ && tL == w.tileJ {
			inter = fastInter(e, w.tileJ)
		}
	}
	// The two innermost outer axes are walked in batches of tiles at
	// constant steps (tiles, swar.go), handed to a kernel in one call.
	last := len(w.outer) - 1
	for it := a; it < b; {
		t, level := w.batch(idx, b-it)
		t.stream = w.stream
		switch {
		case deint != nil:
			t.scale(e)
			deint(dstB, (bo+j0)*e, tL*e, srcB, (bi+j0*sJ)*e, j1-j0, &t)
		case inter != nil:
			t.scale(e)
			inter(dstB, (bo+l0*tL)*e, srcB, (bi+l0)*e, sJ*e, l1-l0, &t)
		case w.j == w.l && sJ == 1:
			bt := t
			bt.scale(e)
			if !fastCopy(dstB, (bo+j0)*e, srcB, (bi+j0)*e, (j1-j0)*e, &bt) {
				copyTiles(dst, bo+j0, src, bi+j0, j1-j0, &t)
			}
		case (j1-j0)*(l1-l0) <= tinyTile:
			tinyTiles(dst, src, bo, bi, &t, j0, j1, l0, l1, sJ, tL, w.j == w.l)
		default:
			t.each(func(o, i int) {
				o, i = bo+o, bi+i
				if w.j == w.l {
					// No input axis is contiguous (a batch slice of a
					// Fortran-order tensor, a group of a block order):
					// plain strided rows.
					gatherRow(dst[o+j0:o+j1], src, i+j0*sJ, sJ)
				} else {
					tile(dst, src, o, i, j0, j1, l0, l1, sJ, tL)
				}
			})
		}
		it += t.n1 * t.n2
		if last < 0 {
			continue
		}
		// Advance the odometer by the batch, then carry.
		x, k := level, t.n2
		if x < last {
			k = t.n1 // whole groups: the last axis is back at 0
		}
		d := w.outer[x]
		idx[x] += k
		bi += k * g.stride[d]
		bo += k * w.outStride[d]
		for ; x >= 0 && idx[x] == g.dims[w.outer[x]]; x-- {
			d := w.outer[x]
			bi -= idx[x] * g.stride[d]
			bo -= idx[x] * w.outStride[d]
			idx[x] = 0
			if x > 0 {
				p := w.outer[x-1]
				idx[x-1]++
				bi += g.stride[p]
				bo += w.outStride[p]
			}
		}
	}
}

// tinyTile is the tile size (elements) below which a batch is moved by one
// loop over all its tiles: a camera mosaic whose pairs are reversed (BGGR)
// has 2×2 tiles, and a call per tile cost 30 ns for 4 elements.
const tinyTile = 16

// tinyTiles moves dst[o + l·tL + j] = src[i + l + j·sJ] for every tile of a
// batch (o, i its offsets past bo, bi); with same, the tile is one strided
// row along j.
func tinyTiles[T any](dst, src []T, bo, bi int, t *tiles, j0, j1, l0, l1, sJ, tL int, same bool) {
	if !same && j1-j0 == 2 && l1-l0 == 2 {
		// A 2×2 block (a camera mosaic's Bayer tile): four moves, their
		// offsets fixed for the whole batch.
		d0, d1, d2, d3 := l0*tL+j0, l0*tL+j0+1, (l0+1)*tL+j0, (l0+1)*tL+j0+1
		s0, s1, s2, s3 := l0+j0*sJ, l0+(j0+1)*sJ, l0+1+j0*sJ, l0+1+(j0+1)*sJ
		for r1 := 0; r1 < t.n1; r1++ {
			o := bo + r1*t.dstep1
			i := bi + r1*t.sstep1
			for r2 := 0; r2 < t.n2; r2++ {
				dst[o+d0], dst[o+d1], dst[o+d2], dst[o+d3] = src[i+s0], src[i+s1], src[i+s2], src[i+s3]
				o += t.dstep2
				i += t.sstep2
			}
		}
		return
	}
	if same && j1-j0 == 2 {
		// A reversed pair (SID's second row of a Bayer tile).
		s0, s1 := j0*sJ, (j0+1)*sJ
		for r1 := 0; r1 < t.n1; r1++ {
			o := bo + r1*t.dstep1 + j0
			i := bi + r1*t.sstep1
			for r2 := 0; r2 < t.n2; r2++ {
				dst[o], dst[o+1] = src[i+s0], src[i+s1]
				o += t.dstep2
				i += t.sstep2
			}
		}
		return
	}
	for r1 := 0; r1 < t.n1; r1++ {
		for r2 := 0; r2 < t.n2; r2++ {
			o := bo + r1*t.dstep1 + r2*t.dstep2
			i := bi + r1*t.sstep1 + r2*t.sstep2
			if same {
				for j := j0; j < j1; j++ {
					dst[o+j] = src[i+j*sJ]
				}
				continue
			}
			for l := l0; l < l1; l++ {
				for j := j0; j < j1; j++ {
					dst[o+l*tL+j] = src[i+l+j*sJ]
				}
			}
		}
	}
}

// batchBytes bounds the tiles of one batch (about 100 µs of work).
var batchBytes = 4 << 20 // a variable so that tests can cut batches small

// batch is the next batch of at most left outer iterations from the
// odometer position idx: whole groups along the two innermost outer axes
// when the innermost is at 0 and a group fits, else the rest of the
// innermost axis. It reports the outer axis (an index into w.outer) whose
// position the batch advances.
func (w *work) batch(idx []int, left int) (tiles, int) {
	t := tiles{n1: 1, n2: 1}
	last := len(w.outer) - 1
	if last < 0 {
		return t, -1
	}
	// A batch is one call into assembly, which cannot be preempted: its
	// size is bounded so that a garbage collection never waits long.
	most := max(1, batchBytes/max(1, w.tileJ*w.tileL*w.g.unit))
	in := w.outer[last]
	t.n2, t.dstep2, t.sstep2 = min(w.g.dims[in]-idx[last], left, most), w.outStride[in], w.g.stride[in]
	if last == 0 || idx[last] != 0 || left < 2*w.g.dims[in] || most < 2*w.g.dims[in] {
		return t, last
	}
	out := w.outer[last-1]
	t.n1 = min(w.g.dims[out]-idx[last-1], left/w.g.dims[in], most/w.g.dims[in])
	t.dstep1, t.sstep1 = w.outStride[out], w.g.stride[out]
	return t, last - 1
}

// scale converts the steps from words to bytes.
func (t *tiles) scale(e int) {
	t.dstep1, t.sstep1, t.dstep2, t.sstep2 = t.dstep1*e, t.sstep1*e, t.dstep2*e, t.sstep2*e
}

// copyTiles copies a run of n words for each tile of the batch, the first
// from src[i:] to dst[o:].
func copyTiles[T any](dst []T, o int, src []T, i, n int, t *tiles) {
	t.each(func(do, di int) {
		copy(dst[o+do:o+do+n], src[i+di:i+di+n])
	})
}

// tileBytes is the working set a tile block aims for: small enough that the
// lines a block touches are still in L1 when the block's next row needs them.
const tileBytes = 16 << 10

// tile moves dst[bo + l·tL + j] = src[bi + l + j·sJ] for l in [l0,l1) and
// j in [j0,j1): the input is contiguous along l, the output along j. The
// loop runs along the longer of the two so that the inner loop is long; it
// walks blocks small enough that the strided side stays in cache, so each
// input and output line is fetched from memory once.
func tile[T any](dst, src []T, bo, bi, j0, j1, l0, l1, sJ, tL int) {
	var z T
	size := int(unsafe.Sizeof(z))
	if j1-j0 >= l1-l0 {
		// Sequential writes along j, strided reads (stride sJ): a
		// de-interleave when L is a short block axis (s2d NCHW).
		bj := max(tileBytes/(size*max(abs(sJ), 1)), 16)
		for jb := j0; jb < j1; jb += bj {
			je := min(jb+bj, j1)
			for l := l0; l < l1; l++ {
				d := dst[bo+l*tL+jb : bo+l*tL+je]
				gatherRow(d, src, bi+l+jb*sJ, sJ)
			}
		}
		return
	}
	// Sequential reads along l, strided writes (stride tL): an interleave
	// when J is a short block axis (d2s NCHW).
	bl := max(tileBytes/(size*max(abs(tL), 1)), 16)
	for lb := l0; lb < l1; lb += bl {
		le := min(lb+bl, l1)
		for j := j0; j < j1; j++ {
			s := src[bi+j*sJ+lb : bi+j*sJ+le]
			scatterRow(dst, bo+lb*tL+j, tL, s)
		}
	}
}

// gatherRow sets d[x] = s[at + x·stride]; the stride may be negative. The
// common strides get their own loops so that the compiler sees a constant
// multiplier.
func gatherRow[T any](d, s []T, at, stride int) {
	if len(d) == 0 {
		return
	}
	if stride < 0 {
		first := at + stride*(len(d)-1)
		s = s[first : at+1]
		for x := range d {
			d[x] = s[at-first+x*stride]
		}
		return
	}
	s = s[at : at+stride*(len(d)-1)+1]
	switch stride {
	case 2:
		for x := range d {
			d[x] = s[2*x]
		}
	case 3:
		for x := range d {
			d[x] = s[3*x]
		}
	case 4:
		for x := range d {
			d[x] = s[4*x]
		}
	default:
		for x := range d {
			d[x] = s[x*stride]
		}
	}
}

// scatterRow sets d[at + x·stride] = s[x]; the stride may be negative.
func scatterRow[T any](d []T, at, stride int, s []T) {
	if len(s) == 0 {
		return
	}
	if stride < 0 {
		first := at + stride*(len(s)-1)
		d = d[first : at+1]
		for x, v := range s {
			d[at-first+x*stride] = v
		}
		return
	}
	d = d[at : at+stride*(len(s)-1)+1]
	switch stride {
	case 2:
		for x, v := range s {
			d[2*x] = v
		}
	case 4:
		for x, v := range s {
			d[4*x] = v
		}
	default:
		for x, v := range s {
			d[x*stride] = v
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}
