package compare

import (
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"
)

// Error statistics (SPEC, compare: --check-error-stat): the mean, median
// and a quantile of the absolute error |B−A| and of the relative error
// |B−A|/|A|, over the element pairs where both values are finite (the
// relative error where A is not 0 as well), computed as numpy's mean,
// median and quantile (method 'linear') do on those values.
//
// Bounded memory, inputs of any size: the mean is a compensated sum over
// chunks of fixed size, added in chunk order (so -j does not change it);
// a median or quantile is found by selection on the bit patterns of the
// non-negative errors (select.go).

// Stats are the statistics of one pair of tensors.
type Stats struct {
	Finite, RelCount int     // pairs counted, absolute and relative
	MeanAbs, MeanRel float64 // NaN when nothing is counted
	// NonFinite counts the pairs a statistic cannot speak for: one side
	// NaN or infinite and the other not the same (a NaN against a NaN,
	// an infinity against the same one, agree).
	NonFinite int
	// RelStat is the statistic checked of the relative errors, when the
	// decision needed it (a failing absolute one, and --rtol), else NaN.
	RelStat float64
}

// statsChunk is the fixed unit of the passes: partial sums are kept per
// chunk and added in order, so the result does not depend on -j.
const statsChunk = 1 << 16

// errPass visits every element pair of the scan in chunks; f receives
// the chunk number and the absolute and relative errors of each finite
// pair (relOK when A is not 0). Pairs not both finite are not passed,
// but counted in *nonFinite (when not nil) unless they agree.
func (s *scanner) errPass(threads int, needRel bool, f func(w, chunk int, e *errBatch), nonFinite *atomic.Int64) error {
	chunks := (s.n + statsChunk - 1) / statsChunk
	workers := max(1, min(threads, chunks))
	cplx := s.a.r.class == complexClass || s.b.r.class == complexClass
	ints := s.a.r.class == integer && s.b.r.class == integer
	type state struct {
		eb         errBatch
		idx        []int
		offA, offB [batch]int // where the pairs are stored, when not in order
	}
	states := make([]state, workers)
	for w := range states {
		states[w].idx = make([]int, len(s.shape))
	}
	return parallel(workers, chunks, func(w int, bb *bufs, c int) {
		st := &states[w]
		eb := &st.eb
		lo, hi := c*statsChunk, min((c+1)*statsChunk, s.n)
		for i := lo; i < hi; i += batch {
			m := min(batch, hi-i)
			s.decodeBatch(bb, st.idx, &st.offA, &st.offB, i, m, cplx)
			eb.n, eb.nbad = 0, 0
			for j := 0; j < m; j++ {
				var abs, ref float64
				if cplx {
					x, y, xi, yi := bb.xb[j], bb.ya[j], bb.xi[j], bb.yi[j]
					if (x-x)+(y-y)+(xi-xi)+(yi-yi) != 0 {
						if !sameNonFinite(x, y) || !sameNonFinite(xi, yi) {
							if nonFinite != nil {
								nonFinite.Add(1)
							}
							eb.bad[eb.nbad] = i + j
							eb.nbad++
						}
						continue
					}
					abs, ref = math.Hypot(y-x, yi-xi), math.Hypot(y, yi)
				} else {
					x, y := bb.xb[j], bb.ya[j]
					if (x-x)+(y-y) != 0 {
						if !sameNonFinite(x, y) {
							if nonFinite != nil {
								nonFinite.Add(1)
							}
							eb.bad[eb.nbad] = i + j
							eb.nbad++
						}
						continue
					}
					abs, ref = math.Abs(y-x), math.Abs(y)
					if ints {
						// Integers beyond 2^53 are measured exactly.
						oa, ob := i+j, i+j
						if !s.contig {
							oa, ob = st.offA[j], st.offB[j]
						}
						abs, ref, _ = s.diff(s.a.elem(oa), s.b.elem(ob))
					}
				}
				k := eb.n
				eb.abs[k], eb.rel[k], eb.relOK[k], eb.at[k] = abs, 0, ref != 0, i+j
				if needRel && ref != 0 { // a division: only when wanted
					eb.rel[k] = abs / ref
				}
				eb.n++
			}
			f(w, c, eb)
		}
	})
}

// decodeBatch decodes the m pairs from flat index i: in place for C
// order, else element by element in logical order (idx is the worker's
// scratch index; offA and offB receive where each pair is stored).
func (s *scanner) decodeBatch(bb *bufs, idx []int, offA, offB *[batch]int, i, m int, cplx bool) {
	if s.contig {
		s.decode(bb, m, i, 1, i, 1, cplx)
		return
	}
	for j := 0; j < m; j++ {
		r := i + j
		for a := len(s.shape) - 1; a >= 0; a-- {
			idx[a] = r % s.shape[a]
			r /= s.shape[a]
		}
		offA[j], offB[j] = s.a.offset(idx), s.b.offset(idx)
		ea, eb := s.a.elem(offA[j]), s.b.elem(offB[j])
		if cplx {
			bb.ya[j], bb.yi[j] = s.a.r.complex(ea)
			bb.xb[j], bb.xi[j] = s.b.r.complex(eb)
		} else {
			bb.ya[j], bb.xb[j] = s.a.r.float(ea), s.b.r.float(eb)
		}
	}
}

// errBatch is up to a batch of finite pairs' errors: the absolute ones,
// and the relative ones where relOK (A is not 0).
type errBatch struct {
	n     int
	abs   [batch]float64
	rel   [batch]float64
	relOK [batch]bool
	at    [batch]int // the flat index of each
	// bad are the flat indices of the pairs that are not both finite and
	// do not agree (a NaN against a number, different infinities).
	nbad int
	bad  [batch]int
}

// sameNonFinite: two values that agree though not both finite (NaN and
// NaN, the same infinity).
func sameNonFinite(x, y float64) bool {
	if x != x && y != y {
		return true
	}
	return x == y || (x-x == 0 && y-y == 0)
}

// means computes the counts and the means in one pass.
func (s *scanner) means(threads int) (Stats, error) {
	chunks := (s.n + statsChunk - 1) / statsChunk
	type part struct {
		n, nr            int
		sum, c, sumr, cr float64
	}
	parts := make([]part, chunks)
	var nonFinite atomic.Int64
	err := s.errPass(threads, true, func(_, c int, e *errBatch) {
		p := &parts[c]
		p.n += e.n
		for k := 0; k < e.n; k++ {
			p.sum, p.c = neumaier(p.sum, p.c, e.abs[k])
			if e.relOK[k] {
				p.nr++
				p.sumr, p.cr = neumaier(p.sumr, p.cr, e.rel[k])
			}
		}
	}, &nonFinite)
	if err != nil {
		return Stats{}, err
	}
	st := Stats{NonFinite: int(nonFinite.Load())}
	var sum, c, sumr, cr float64
	for _, p := range parts {
		st.Finite += p.n
		st.RelCount += p.nr
		sum, c = neumaier(sum, c, p.sum)
		sum, c = neumaier(sum, c, p.c)
		sumr, cr = neumaier(sumr, cr, p.sumr)
		sumr, cr = neumaier(sumr, cr, p.cr)
	}
	st.MeanAbs, st.MeanRel = math.NaN(), math.NaN()
	if st.Finite > 0 {
		st.MeanAbs = (sum + c) / float64(st.Finite)
	}
	if st.RelCount > 0 {
		st.MeanRel = (sumr + cr) / float64(st.RelCount)
	}
	return st, nil
}

// neumaier adds v to the compensated sum (s, c).
func neumaier(s, c, v float64) (float64, float64) {
	t := s + v
	if math.Abs(s) >= math.Abs(v) {
		c += (s - t) + v
	} else {
		c += (v - t) + s
	}
	return t, c
}

// orderStats are numpy's median and quantile(v, q) (method 'linear')
// of the absolute errors (rel false) or the relative ones, count values
// in all, h their first selection level (nil: a pass counts it); NaN when
// there are none. The quantile only when q is not nil.
func (s *scanner) orderStats(threads int, rel bool, h *errHist, count int, q *float64) (med, qv float64, err error) {
	if count == 0 {
		return math.NaN(), math.NaN(), nil
	}
	if h == nil || h.count() != count {
		if h, err = s.histPass(threads, rel); err != nil {
			return 0, 0, err
		}
		if h.count() != count {
			return 0, 0, fmt.Errorf("input changed while it was compared (%d errors counted, then %d)", count, h.count())
		}
	}
	// The ranks wanted: the middle one or two, and the quantile's one or
	// two neighbours.
	mid := (count - 1) / 2
	ks := []int{mid, mid}
	if count%2 == 0 {
		ks[1] = mid + 1
	}
	var lo int
	var frac float64
	if q != nil {
		hq := float64(count-1) * *q
		lo = min(int(math.Floor(hq)), count-1)
		frac = hq - float64(lo)
		ks = append(ks, lo, min(lo+1, count-1))
	}
	v, err := s.ranks(threads, rel, h, ks)
	if err != nil {
		return 0, 0, err
	}
	med = v[0]
	if count%2 == 0 {
		med = (v[0] + v[1]) / 2
	}
	if q != nil {
		qv = v[2]
		if lo < count-1 && frac != 0 {
			qv = lerp(v[2], v[3], frac)
		}
	}
	return med, qv, nil
}

// lerp is numpy's _lerp: a + t(b−a), from the other end when t ≥ 0.5.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// pick is the error a selection works on: the absolute one, or the
// relative one where it is defined.
func pick(rel bool, abs, r float64, relOK bool) (float64, bool) {
	if !rel {
		return abs, true
	}
	return r, relOK
}

// statistics fills in the report's mean and median of the absolute
// error (and the quantile when --check-error-stat asks) of every numeric
// comparison, and, with a statistic to check, decides Equal by it.
// Tensors whose finite pairs all agree exactly cost no extra pass; for
// C-order inputs the scan summed the mean and counted the selection's
// first level, so a median takes one pass more, or none when most errors
// are 0 (see select.go).
func (s *scanner) statistics(t tally, o Options, rep *Report) (*Stats, error) {
	zero := Float(0)
	allZero := t.maxAbsAt < 0 || t.maxAbs == 0
	if o.Stat == "quantile" {
		q := o.Quantile
		rep.Quantile = &q
	}
	stat := o.Stat
	if stat == "" {
		stat = "elemwise"
	}
	if allZero && (t.different == 0 || stat == "elemwise") {
		rep.MeanAbsDiff, rep.MedianAbsDiff = &zero, &zero
		if rep.Quantile != nil {
			rep.QuantileAbsDiff = &zero
		}
		return nil, nil
	}
	threads := max(o.Threads, 1)
	var st Stats
	var err error
	if s.parts != nil {
		st = s.foldedMeans(t.hist)
	} else if st, err = s.means(threads); err != nil {
		return nil, err
	}
	mean := Float(st.MeanAbs)
	rep.MeanAbsDiff = &mean
	med, qv, err := s.orderStats(threads, false, t.hist, st.Finite, rep.Quantile)
	if err != nil {
		return nil, err
	}
	median := Float(med)
	rep.MedianAbsDiff = &median
	if rep.Quantile != nil {
		q := Float(qv)
		rep.QuantileAbsDiff = &q
	}
	if stat == "elemwise" || t.different == 0 {
		return &st, nil
	}
	// That statistic of the absolute error within atol, or of the
	// relative error within rtol (Polygraphy's rule); pairs that are not
	// finite must agree.
	var absStat float64
	switch stat {
	case "max":
		absStat = math.Max(0, t.maxAbs)
	case "mean":
		absStat = st.MeanAbs
	case "median":
		absStat = med
	case "quantile":
		absStat = qv
	}
	pass := absStat <= o.ATol
	st.RelStat = math.NaN()
	if !pass && o.RTol > 0 && st.RelCount < 0 {
		// The scan summed the absolute errors only: the relative ones
		// take their own pass.
		if st, err = s.means(threads); err != nil {
			return nil, err
		}
	}
	if !pass && o.RTol > 0 {
		var relStat float64
		switch stat {
		case "max":
			relStat = math.Max(0, t.maxRel)
		case "mean":
			relStat = st.MeanRel
		case "median":
			relStat, _, err = s.orderStats(threads, true, nil, st.RelCount, nil)
		case "quantile":
			_, relStat, err = s.orderStats(threads, true, nil, st.RelCount, rep.Quantile)
		}
		if err != nil {
			return nil, err
		}
		pass = relStat <= o.RTol
		st.RelStat = relStat
	}
	rep.Equal = pass && st.NonFinite == 0
	return &st, nil
}

// meanPart is what the tolerant scan sums for one statsChunk: the finite
// pairs' absolute errors (a compensated sum), the pairs in batches of
// equal bytes (errors 0, finiteness not looked at), and the non-finite
// pairs that do not agree.
type meanPart struct {
	n         int
	sum, c    float64
	nonFinite int
}

// merge adds another part's sums (a batch's) to p.
func (p *meanPart) merge(q *meanPart) {
	p.n += q.n
	p.nonFinite += q.nonFinite
	p.sum, p.c = neumaier(p.sum, p.c, q.sum)
	p.c += q.c
}

// add counts a finite pair's absolute error. (The relative errors' mean,
// needed only by --check-error-stat mean with --rtol, takes a pass of its
// own: a division per element is not paid by every comparison.)
func (p *meanPart) add(abs, _ float64) {
	p.n++
	p.sum, p.c = neumaier(p.sum, p.c, abs)
}

// foldedMeans turns the scan's parts into the statistics means computes
// with a pass of its own. The pairs in batches of equal bytes add 0 to the
// sums; only their count is missing, and only when some error is not 0:
// then the chunks that had such batches are looked at again (the batches
// that are still equal, their finite values counted, as errors of 0 in h
// too: the scan's first selection level).
func (s *scanner) foldedMeans(h *errHist) Stats {
	st := Stats{MeanAbs: math.NaN(), MeanRel: math.NaN(), RelCount: -1}
	var sum, c float64
	for _, p := range s.parts {
		st.Finite += p.n
		st.NonFinite += p.nonFinite
		sum, c = neumaier(sum, c, p.sum)
		sum, c = neumaier(sum, c, p.c)
	}
	// The batches of equal bytes: errors of 0, where finite.
	var bb bufs
	for w, word := range s.equal {
		for ; word != 0; word &= word - 1 {
			at := (w*64 + bits.TrailingZeros64(word)) * batch
			n := s.a.finite(&bb, at, min(batch, s.n-at))
			st.Finite += n
			if h != nil {
				h.zeros += n
			}
		}
	}
	if st.Finite > 0 {
		st.MeanAbs = (sum + c) / float64(st.Finite)
	}
	return st
}

// finite counts the finite values among m elements from off.
func (s *side) finite(bb *bufs, off, m int) int {
	switch s.r.class {
	case integer:
		return m
	case complexClass:
		s.decodeComplex(bb.ya[:m], bb.yi[:m], off, 1)
	default:
		s.decodeReal(bb.ya[:m], off, 1)
	}
	n := 0
	for j, x := range bb.ya[:m] {
		if (x-x)+(bb.yi[j]-bb.yi[j]) == 0 {
			n++
		}
	}
	return n
}

// Required is what a failing pair would have needed to pass (Polygraphy's
// "Minimum Required Tolerance"): with --compare-func simple, the
// tolerance that alone would pass the statistic checked (elemwise: every
// element; the largest error then), the absolute one or the relative
// one; with another compare function, its metric as the threshold.
type Required struct {
	Stat string `json:"check_error_stat,omitempty"`
	ATol *Float `json:"atol,omitempty"`
	// RTol is Infinity when a pair differs where A is 0, and absent when
	// no A is non-zero.
	RTol *Float `json:"rtol,omitempty"`
	// NonFinite counts the pairs no tolerance passes (a NaN or an
	// infinity against another value); ATol and RTol are then absent.
	NonFinite int `json:"non_finite,omitempty"`
	// Threshold is a compare function's: its metric, or the index
	// tolerance (indices).
	Threshold *Float `json:"threshold,omitempty"`
}

// required fills in rep.Required for a pair that failed --compare-func
// simple, exactly, in bounded memory and without a pass over the data
// beyond what the decision made: the maxima come from the scan, the
// other statistics from the decision's (st); the relative errors' mean,
// median or quantile only when --rtol had the decision compute it.
func (s *scanner) required(t tally, o Options, rep *Report, st *Stats) error {
	threads := max(o.Threads, 1)
	stat := o.Stat
	if stat == "" {
		stat = "elemwise"
	}
	req := &Required{Stat: stat}
	rep.Required = req
	var err error
	if st == nil {
		var fresh Stats
		if s.parts != nil {
			fresh = s.foldedMeans(nil)
		} else if fresh, err = s.means(threads); err != nil {
			return err
		}
		fresh.RelStat = math.NaN()
		st = &fresh
	}
	if st.NonFinite > 0 {
		req.NonFinite = st.NonFinite
		return nil
	}
	var abs, rel float64
	switch stat {
	case "elemwise", "max":
		abs, rel = math.Max(0, t.maxAbs), math.Max(0, t.maxRel)
		// No differing pair with a non-zero A (maxRelAt < 0) and none with
		// A zero (zeroRef): the errors are all 0, and so is the rtol.
		if t.zeroRef {
			rel = math.Inf(1)
		}
	case "mean":
		// The relative errors' mean takes a pass of its own (a division
		// per element): given when the decision needed it (--rtol).
		abs, rel = st.MeanAbs, math.NaN()
		if st.RelCount >= 0 {
			rel = st.MeanRel
		}
	default:
		// So do the median and quantile of the relative errors (a
		// selection, passes of their own).
		abs, rel = float64(*rep.MedianAbsDiff), st.RelStat
		if stat == "quantile" {
			abs = float64(*rep.QuantileAbsDiff)
		}
	}
	a := Float(abs)
	req.ATol = &a
	if !math.IsNaN(rel) {
		r := Float(rel)
		req.RTol = &r
	}
	return nil
}
