package compare

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sync/atomic"
)

// Order statistics of the errors (the median, a quantile) in bounded
// memory: a radix selection on the bit patterns of the non-negative
// errors, whose order as integers is their order as numbers.
//
// The first level — how many errors have each top 16 bits, and how many
// are 0 — is counted by the comparison's own scan when it can (C-order
// inputs), so a median usually costs one more pass: it gathers the errors
// of the bucket that holds each wanted rank and selects among them in
// memory. Only when those buckets hold more than maxCandidates errors does
// a pass refine them by the next refineBits first. Errors of 0 (most of them
// in a near-identical pair) are counted, never gathered: a rank among
// them needs no pass at all.

// errHist is the first level of the selection.
type errHist struct {
	zeros int
	top   [1 << 16]int // non-zero errors by their top 16 bits
}

// add counts an error; a nil h (no statistics wanted) counts nothing.
func (h *errHist) add(v float64) {
	if h == nil {
		return
	}
	if v == 0 {
		h.zeros++
		return
	}
	h.top[math.Float64bits(v)>>48]++
}

func (h *errHist) merge(o *errHist) {
	h.zeros += o.zeros
	for d, n := range o.top {
		h.top[d] += n
	}
}

func (h *errHist) count() int {
	n := h.zeros
	for _, c := range h.top {
		n += c
	}
	return n
}

// maxCandidates bounds the errors gathered in memory (16 MiB of them).
var maxCandidates = 1 << 21

// refineBits are the bits a refining pass adds (48 of them below the
// first level's 16, so four passes at most).
const refineBits = 12

// histPass counts the first level with a pass of its own.
func (s *scanner) histPass(threads int, rel bool) (*errHist, error) {
	hs := make([]errHist, max(1, threads))
	err := s.errPass(threads, rel, func(w, _ int, e *errBatch) {
		h := &hs[w]
		for k := 0; k < e.n; k++ {
			if v, ok := pick(rel, e.abs[k], e.rel[k], e.relOK[k]); ok {
				h.add(v)
			}
		}
	}, nil)
	for i := 1; i < len(hs); i++ {
		hs[0].merge(&hs[i])
	}
	return &hs[0], err
}

// bucket is the errors whose bits under mask are prefix: below of the
// non-zero errors are smaller, count have these bits, and the ranks
// wanted (among the non-zero errors) lie in it.
type bucket struct {
	prefix uint64
	below  int
	count  int
	want   []int // indices into the result
	cand   []uint64
	filled atomic.Int64
}

// ranks returns the ks[i]-th smallest errors (from 0; each below the
// number h counts), h being the first level of those errors.
func (s *scanner) ranks(threads int, rel bool, h *errHist, ks []int) ([]float64, error) {
	out := make([]float64, len(ks))
	nonZero := make([]int, len(ks)) // each rank among the non-zero errors
	var buckets []*bucket
	for i, k := range ks {
		if k < h.zeros {
			continue // out[i] is 0
		}
		nonZero[i] = k - h.zeros
		d, below := digit(h.top[:], nonZero[i], 0)
		if d < 0 {
			return nil, fmt.Errorf("internal error: selection of element %d ran out", k)
		}
		buckets = place(buckets, uint64(d)<<48, below, h.top[d], i)
	}
	mask, shift := uint64(0xffff)<<48, 48
	for len(buckets) > 0 {
		if shift == 0 {
			// All 64 bits fixed: each bucket is one value.
			for _, b := range buckets {
				for _, i := range b.want {
					out[i] = math.Float64frombits(b.prefix)
				}
			}
			return out, nil
		}
		total := 0
		for _, b := range buckets {
			total += b.count
		}
		if total <= maxCandidates {
			if err := s.gather(threads, rel, mask, buckets); err != nil {
				return nil, err
			}
			for _, b := range buckets {
				if int(b.filled.Load()) != b.count {
					return nil, fmt.Errorf("input changed while it was compared (a selection found %d errors where it counted %d)", b.filled.Load(), b.count)
				}
				for _, i := range b.want {
					out[i] = math.Float64frombits(selectKth(b.cand, nonZero[i]-b.below))
				}
			}
			return out, nil
		}
		// Too many to gather: narrow each bucket by the next refineBits
		// (a histogram small enough for the first-level cache: the bits
		// below the top ones are as good as random).
		// The same pass finds each bucket's least and greatest error:
		// when they are equal (errors of a rounding are a few values
		// repeated many times) the bucket is one value, and done.
		shift -= refineBits
		workers := max(1, threads)
		hists := make([][][1 << refineBits]int, workers)
		lows, highs := make([][]uint64, workers), make([][]uint64, workers)
		for w := range hists {
			hists[w] = make([][1 << refineBits]int, len(buckets))
			lows[w], highs[w] = make([]uint64, len(buckets)), make([]uint64, len(buckets))
			for j := range buckets {
				lows[w][j] = math.MaxUint64
			}
		}
		err := s.bucketPass(threads, rel, mask, buckets, func(w, j int, x uint64) {
			hists[w][j][(x>>shift)&(1<<refineBits-1)]++
			lows[w][j], highs[w][j] = min(lows[w][j], x), max(highs[w][j], x)
		}, nil)
		if err != nil {
			return nil, err
		}
		var next []*bucket
		for j, b := range buckets {
			lo, hi := lows[0][j], highs[0][j]
			for w := 1; w < len(hists); w++ {
				for d, n := range hists[w][j] {
					hists[0][j][d] += n
				}
				lo, hi = min(lo, lows[w][j]), max(hi, highs[w][j])
			}
			if lo == hi {
				for _, i := range b.want {
					out[i] = math.Float64frombits(lo)
				}
				continue
			}
			for _, i := range b.want {
				d, below := digit(hists[0][j][:], nonZero[i]-b.below, b.below)
				if d < 0 {
					return nil, fmt.Errorf("input changed while it was compared (a selection of element %d ran out)", ks[i])
				}
				next = place(next, b.prefix|uint64(d)<<shift, below, hists[0][j][d], i)
			}
		}
		buckets = next
		mask |= (1<<refineBits - 1) << shift
	}
	return out, nil
}

// digit finds the bucket of hist holding rank r (counted from its first
// bucket), and how many lie below it plus base; -1 when r is past them all.
func digit(hist []int, r, base int) (int, int) {
	below := 0
	for d, n := range hist {
		if below+n > r {
			return d, base + below
		}
		below += n
	}
	return -1, 0
}

// place adds want i to the bucket with prefix, new or already listed.
func place(bs []*bucket, prefix uint64, below, count, i int) []*bucket {
	for _, b := range bs {
		if b.prefix == prefix {
			b.want = append(b.want, i)
			return bs
		}
	}
	return append(bs, &bucket{prefix: prefix, below: below, count: count, want: []int{i}})
}

// gather copies the bit patterns of the errors in each bucket into its
// candidates, a batch's worth at a time from each worker.
func (s *scanner) gather(threads int, rel bool, mask uint64, bs []*bucket) error {
	for _, b := range bs {
		b.cand = make([]uint64, b.count)
	}
	type local struct {
		n   [4]int
		buf [4][batch]uint64
	}
	locals := make([]local, max(1, threads))
	return s.bucketPass(threads, rel, mask, bs, func(w, j int, x uint64) {
		l := &locals[w]
		if j >= len(l.n) {
			// More buckets than the local buffers: one at a time.
			if end := int(bs[j].filled.Add(1)); end <= len(bs[j].cand) {
				bs[j].cand[end-1] = x
			}
			return
		}
		l.buf[j][l.n[j]] = x
		l.n[j]++
	}, func(w int) {
		l := &locals[w]
		for j, n := range l.n[:min(len(bs), len(l.n))] {
			if n == 0 {
				continue
			}
			b := bs[j]
			if end := int(b.filled.Add(int64(n))); end <= len(b.cand) {
				copy(b.cand[end-n:end], l.buf[j][:n])
			}
			l.n[j] = 0
		}
	})
}

// bucketPass calls visit for every non-zero error whose bits under mask
// are a bucket's prefix (j: that bucket, w: the worker), and end, when
// given, after each batch of them.
func (s *scanner) bucketPass(threads int, rel bool, mask uint64, bs []*bucket, visit func(w, j int, x uint64), end func(w int)) error {
	return s.errPass(threads, rel, func(w, _ int, e *errBatch) {
		for k := 0; k < e.n; k++ {
			v, ok := pick(rel, e.abs[k], e.rel[k], e.relOK[k])
			x := math.Float64bits(v)
			if !ok || x == 0 {
				continue
			}
			for j, b := range bs {
				if x&mask == b.prefix {
					visit(w, j, x)
					break
				}
			}
		}
		if end != nil {
			end(w)
		}
	}, nil)
}

// selectKth is the k-th smallest of v (which it reorders): a quickselect
// with a median-of-three pivot, falling back to a sort when the
// partitions stop shrinking (so never quadratic).
func selectKth(v []uint64, k int) uint64 {
	lo, hi := 0, len(v)
	budget := 2 * bits.Len(uint(len(v)))
	for hi-lo > 16 {
		if budget == 0 {
			slices.Sort(v[lo:hi])
			return v[k]
		}
		budget--
		mid := lo + (hi-lo)/2
		a, b, c := v[lo], v[mid], v[hi-1]
		p := max(min(a, b), min(max(a, b), c))
		// Three-way partition: < p, == p, > p.
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch {
			case v[i] < p:
				v[lt], v[i] = v[i], v[lt]
				lt++
				i++
			case v[i] > p:
				gt--
				v[gt], v[i] = v[i], v[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return p
		}
	}
	slices.Sort(v[lo:hi])
	return v[k]
}
