package compare

import (
	"bytes"
	"fmt"
	"math"
	"sort"
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
// non-negative errors (their order as integers is their order as
// numbers), 16 bits per pass over the mapped data, four passes at most,
// plus one for the next value a quantile interpolates to.

// Stats are the statistics of one pair of tensors.
type Stats struct {
	Finite, RelCount int     // pairs counted, absolute and relative
	MeanAbs, MeanRel float64 // NaN when nothing is counted
	// NonFinite counts the pairs a statistic cannot speak for: one side
	// NaN or infinite and the other not the same (a NaN against a NaN,
	// an infinity against the same one, agree).
	NonFinite int
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
			if s.contig {
				s.decode(bb, m, i, 1, i, 1, cplx)
			} else {
				// Logical order, element by element.
				for j := 0; j < m; j++ {
					r := i + j
					for a := len(s.shape) - 1; a >= 0; a-- {
						st.idx[a] = r % s.shape[a]
						r /= s.shape[a]
					}
					st.offA[j], st.offB[j] = s.a.offset(st.idx), s.b.offset(st.idx)
					ea, eb := s.a.elem(st.offA[j]), s.b.elem(st.offB[j])
					if cplx {
						bb.ya[j], bb.yi[j] = s.a.r.complex(ea)
						bb.xb[j], bb.xi[j] = s.b.r.complex(eb)
					} else {
						bb.ya[j], bb.xb[j] = s.a.r.float(ea), s.b.r.float(eb)
					}
				}
			}
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

// quantile is numpy's quantile(v, q) (method 'linear') of the absolute
// errors (rel false) or the relative ones, over count values; NaN when
// there are none.
func (s *scanner) quantile(threads int, q float64, rel bool, count int) (float64, error) {
	if count == 0 {
		return math.NaN(), nil
	}
	h := float64(count-1) * q
	lo := int(math.Floor(h))
	if lo >= count-1 {
		lo = count - 1
	}
	vlo, vhi, err := s.twoAt(threads, lo, lo < count-1 && h != float64(lo), rel)
	if err != nil || vhi == nil {
		return vlo, err
	}
	return lerp(vlo, *vhi, h-float64(lo)), nil
}

// twoAt is the k-th smallest error and, when next asks, the (k+1)-th:
// the same value when it occurs more than once, else the least above.
func (s *scanner) twoAt(threads, k int, next, rel bool) (float64, *float64, error) {
	v, le, err := s.kth(threads, k, rel)
	if err != nil || !next {
		return v, nil, err
	}
	w := v
	if le <= k+1 {
		if w, err = s.leastAbove(threads, v, rel); err != nil {
			return 0, nil, err
		}
	}
	return v, &w, nil
}

// lerp is numpy's _lerp: a + t(b−a), from the other end when t ≥ 0.5.
func lerp(a, b, t float64) float64 {
	d := b - a
	if t >= 0.5 {
		return b - d*(1-t)
	}
	return a + d*t
}

// median is numpy's median: the middle value, or the mean of the two.
func (s *scanner) median(threads int, rel bool, count int) (float64, error) {
	if count == 0 {
		return math.NaN(), nil
	}
	v, w, err := s.twoAt(threads, (count-1)/2, count%2 == 0, rel)
	if err != nil || w == nil {
		return v, err
	}
	return (v + *w) / 2, nil
}

// pick is the error a selection works on: the absolute one, or the
// relative one where it is defined.
func pick(rel bool, abs, r float64, relOK bool) (float64, bool) {
	if !rel {
		return abs, true
	}
	return r, relOK
}

// kth finds the k-th smallest error (from 0) by radix selection on its
// bits, 16 at a time, and how many errors are at most it.
func (s *scanner) kth(threads, k int, rel bool) (float64, int, error) {
	var prefix, mask uint64
	below := 0 // errors whose bits are below the prefix
	for shift := 48; shift >= 0; shift -= 16 {
		hist := make([][1 << 16]int, max(1, threads))
		err := s.errPass(threads, rel, func(w, _ int, e *errBatch) {
			h := &hist[w]
			for k := 0; k < e.n; k++ {
				v, ok := pick(rel, e.abs[k], e.rel[k], e.relOK[k])
				b := math.Float64bits(v)
				if ok && b&mask == prefix {
					h[(b>>shift)&0xffff]++
				}
			}
		}, nil)
		if err != nil {
			return 0, 0, err
		}
		var total [1 << 16]int
		for _, h := range hist {
			for d, n := range h {
				total[d] += n
			}
		}
		d := 0
		for ; d < 1<<16; d++ {
			if below+total[d] > k {
				break
			}
			below += total[d]
		}
		if d == 1<<16 {
			return 0, 0, fmt.Errorf("internal error: selection of element %d ran out", k)
		}
		prefix |= uint64(d) << shift
		mask |= 0xffff << shift
		if shift == 0 {
			return math.Float64frombits(prefix), below + total[d], nil
		}
	}
	return 0, 0, nil
}

// leastAbove is the smallest error greater than v.
func (s *scanner) leastAbove(threads int, v float64, rel bool) (float64, error) {
	best := make([]float64, max(1, threads))
	for i := range best {
		best[i] = math.Inf(1)
	}
	err := s.errPass(threads, rel, func(w, _ int, e *errBatch) {
		for k := 0; k < e.n; k++ {
			x, ok := pick(rel, e.abs[k], e.rel[k], e.relOK[k])
			if ok && x > v && x < best[w] {
				best[w] = x
			}
		}
	}, nil)
	sort.Float64s(best)
	return best[0], err
}

// statistics fills in the report's mean of the absolute error (and its
// median and quantile when --check-error-stat is one of those), and, with
// a statistic to check, decides Equal by it.
// Tensors whose finite pairs all agree exactly cost no extra pass.
//
// A bit-for-bit comparison (no tolerance, no statistic) leaves them out
// (null): its verdict is a memcmp, and the passes of a median over a
// large pair would cost ten times that.
func (s *scanner) statistics(t tally, o Options, rep *Report) error {
	if !o.Tolerant {
		return nil
	}
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
		rep.MeanAbsDiff = &zero
		if stat == "median" || stat == "quantile" {
			rep.MedianAbsDiff = &zero
		}
		if rep.Quantile != nil {
			rep.QuantileAbsDiff = &zero
		}
		return nil
	}
	threads := max(o.Threads, 1)
	var st Stats
	var err error
	if s.parts != nil {
		st = s.foldedMeans()
	} else if st, err = s.means(threads); err != nil {
		return err
	}
	mean := Float(st.MeanAbs)
	rep.MeanAbsDiff = &mean
	// A median or quantile takes four or five more passes over both
	// inputs (a selection, 16 bits at a time): only when a check asks.
	var med float64
	if stat == "median" || stat == "quantile" {
		if med, err = s.median(threads, false, st.Finite); err != nil {
			return err
		}
		median := Float(med)
		rep.MedianAbsDiff = &median
	}
	var qv float64
	if rep.Quantile != nil {
		if qv, err = s.quantile(threads, o.Quantile, false, st.Finite); err != nil {
			return err
		}
		q := Float(qv)
		rep.QuantileAbsDiff = &q
	}
	if stat == "elemwise" || t.different == 0 {
		return nil
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
	if !pass && o.RTol > 0 && st.RelCount < 0 {
		// The scan summed the absolute errors only: the relative ones
		// take their own pass.
		if st, err = s.means(threads); err != nil {
			return err
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
			relStat, err = s.median(threads, true, st.RelCount)
		case "quantile":
			relStat, err = s.quantile(threads, o.Quantile, true, st.RelCount)
		}
		if err != nil {
			return err
		}
		pass = relStat <= o.RTol
	}
	rep.Equal = pass && st.NonFinite == 0
	return nil
}

// meanPart is what the tolerant scan sums for one statsChunk: the finite
// pairs' absolute errors (a compensated sum), the pairs in batches of
// equal bytes (errors 0, finiteness not looked at), and the non-finite
// pairs that do not agree.
type meanPart struct {
	n                int
	sum, c           float64
	equal, nonFinite int
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
// that are still equal, their finite values counted).
func (s *scanner) foldedMeans() Stats {
	st := Stats{MeanAbs: math.NaN(), MeanRel: math.NaN(), RelCount: -1}
	var sum, c float64
	cplx := s.a.r.class == complexClass || s.b.r.class == complexClass
	bb := new(bufs)
	for i, p := range s.parts {
		st.Finite += p.n
		st.NonFinite += p.nonFinite
		sum, c = neumaier(sum, c, p.sum)
		sum, c = neumaier(sum, c, p.c)
		if p.equal == 0 {
			continue
		}
		lo, hi := i*statsChunk, min((i+1)*statsChunk, s.n)
		for at := lo; at < hi; at += batch {
			m := min(batch, hi-at)
			if !bytes.Equal(s.a.data[at*s.a.size:(at+m)*s.a.size], s.b.data[at*s.b.size:(at+m)*s.b.size]) {
				continue
			}
			s.decode(bb, m, at, 1, at, 1, cplx)
			for j := 0; j < m; j++ {
				x, xi := bb.ya[j], 0.0
				if cplx {
					xi = bb.yi[j]
				}
				if (x-x)+(xi-xi) == 0 {
					st.Finite++
				}
			}
		}
	}
	if st.Finite > 0 {
		st.MeanAbs = (sum + c) / float64(st.Finite)
	}
	return st
}
