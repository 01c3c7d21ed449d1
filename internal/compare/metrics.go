package compare

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Polygraphy's other compare functions (SPEC, compare: --compare-func),
// with the formulas of its comparator (polygraphy/comparator/compare.py:
// CompareFunc.indices, distance_metrics and quality_metrics), A being
// its first output (out0) and B the second (out1):
//
//	l2                 ‖A−B‖₂ = sqrt(Σ (A−B)²)                     ≤ --l2-tolerance (1e-5)
//	cosine-similarity  ΣA·B / (sqrt(ΣA²)·sqrt(ΣB²)), in [−1, 1]    ≥ --cosine-similarity-threshold (0.997)
//	                   (1 when both norms are 0, 0 when one is)
//	psnr               20·log10(max A) − 10·log10(mean (A−B)²)      ≥ --psnr-tolerance (30)
//	                   (+Inf when the mean is 0; max A ≤ 0 counts as 1)
//	snr                10·log10(mean A² / mean (A−B)²)              ≥ --snr-tolerance (20)
//	                   (+Inf when the noise is 0, −Inf when the signal is)
//	indices            along the last axis, each value of A at most
//	                   --index-tolerance (0) places from where B has it
//	                   first; the last --index-tolerance values of a row
//	                   are not checked.
//
// Polygraphy evaluates them in the inputs' precision (float32 for float16
// and float32) with numpy's sums; depthspace evaluates them in float64
// with sums of 256 terms added into compensated sums over fixed chunks,
// added in order: far closer to the exact sums than numpy's pairwise
// float32 ones, the same for any -j, in one pass and bounded memory. Where Polygraphy would turn a NaN cosine into 1
// (Python's min and max skip a NaN), depthspace keeps NaN, and a NaN
// metric fails: a NaN in an output is never "similar".

// Compare functions.
const (
	FuncSimple  = "simple"
	FuncIndices = "indices"
	FuncL2      = "l2"
	FuncCosine  = "cosine-similarity"
	FuncPSNR    = "psnr"
	FuncSNR     = "snr"
)

// funcInfo is what a compare function's threshold is called and what it
// is by default, and whether a larger metric is better.
type funcInfo struct {
	flag    string  // the threshold's flag
	def     float64 // its default, Polygraphy's
	atLeast bool    // the metric must be >= the threshold (else <=)
	label   string  // the metric, in the text report
}

var funcs = map[string]funcInfo{
	FuncIndices: {"--index-tolerance", 0, false, "required index tolerance"},
	FuncL2:      {"--l2-tolerance", 1e-5, false, "l2 norm"},
	FuncCosine:  {"--cosine-similarity-threshold", 0.997, true, "cosine similarity"},
	FuncPSNR:    {"--psnr-tolerance", 30, true, "psnr"},
	FuncSNR:     {"--snr-tolerance", 20, true, "snr"},
}

// FuncNames lists the compare functions, simple first.
func FuncNames() []string {
	names := []string{FuncSimple}
	for n := range funcs {
		names = append(names, n)
	}
	sort.Strings(names[1:])
	return names
}

// ThresholdFlag is the flag of a compare function's threshold ("" for
// simple, whose tolerances are --rtol and --atol).
func ThresholdFlag(fn string) string { return funcs[fn].flag }

// DefaultThreshold is Polygraphy's default threshold of a compare function.
func DefaultThreshold(fn string) float64 { return funcs[fn].def }

func checkFunc(o *Options) error {
	if o.Func == "" || o.Func == FuncSimple {
		if len(o.MemberThreshold) > 0 || o.ThresholdSet {
			return fmt.Errorf("a threshold (%s) needs its --compare-func", thresholdFlags())
		}
		return nil
	}
	fi, ok := funcs[o.Func]
	if !ok {
		return fmt.Errorf("--compare-func %q is not a compare function (want %s)", o.Func, strings.Join(FuncNames(), ", "))
	}
	if o.Stat != "" && o.Stat != "elemwise" {
		return fmt.Errorf("--check-error-stat %s goes with --compare-func simple, not %s", o.Stat, o.Func)
	}
	bad := func(v float64) bool {
		switch o.Func {
		case FuncIndices:
			return v < 0 || v != math.Trunc(v) || v > math.MaxInt32
		case FuncL2:
			return math.IsNaN(v) || v < 0
		}
		return math.IsNaN(v)
	}
	if bad(o.Threshold) {
		return fmt.Errorf("%s %v is not a valid threshold", fi.flag, o.Threshold)
	}
	for name, v := range o.MemberThreshold {
		if bad(v) {
			return fmt.Errorf("%s %s:%v is not a valid threshold", fi.flag, Name(name), v)
		}
	}
	return nil
}

func thresholdFlags() string {
	var flags []string
	for _, n := range FuncNames()[1:] {
		flags = append(flags, funcs[n].flag)
	}
	return strings.Join(flags, ", ")
}

// metricSums are the sums a chunk of a metric pass adds up, each a
// compensated (Neumaier) sum: Σ(A−B)², ΣA·B, ΣA², ΣB², and the largest A.
type metricSums struct {
	d2, d2c, ab, abc, aa, aac, bb, bbc float64
	maxA                               float64
	nanA                               bool // some A is NaN: numpy's max is NaN
}

// addBatch adds a batch of pairs (a the reference's values, b the
// other's): plain float64 sums of at most a batch's terms (an error of at
// most that many ulps of the batch's sum), each added to the compensated
// sums.
func (p *metricSums) addBatch(a, b []float64, infEqual bool) {
	var d2, ab, aa, bsq float64
	maxA := math.Inf(-1)
	for j, x := range a {
		y := b[j]
		d := x - y
		if infEqual && x == y && math.IsInf(x, 0) {
			d = 0
		}
		d2 += d * d
		ab += x * y
		aa += x * x
		bsq += y * y
		if x > maxA {
			maxA = x
		} else if x != x {
			p.nanA = true
		}
	}
	p.d2, p.d2c = sumInf(p.d2, p.d2c, d2)
	p.ab, p.abc = sumInf(p.ab, p.abc, ab)
	p.aa, p.aac = sumInf(p.aa, p.aac, aa)
	p.bb, p.bbc = sumInf(p.bb, p.bbc, bsq)
	p.maxA = math.Max(p.maxA, maxA)
}

func newMetricSums() metricSums { return metricSums{maxA: math.Inf(-1)} }

func (m *metricSums) merge(o *metricSums) {
	m.d2, m.d2c = sumInf(m.d2, m.d2c, o.d2)
	m.d2c += o.d2c
	m.ab, m.abc = sumInf(m.ab, m.abc, o.ab)
	m.abc += o.abc
	m.aa, m.aac = sumInf(m.aa, m.aac, o.aa)
	m.aac += o.aac
	m.bb, m.bbc = sumInf(m.bb, m.bbc, o.bb)
	m.bbc += o.bbc
	m.maxA = math.Max(m.maxA, o.maxA)
	m.nanA = m.nanA || o.nanA
}

// metric computes the compare function's metric of the pair in one pass.
func (s *scanner) metric(fn string, threads int, infEqual bool) (float64, error) {
	if s.a.r.class == complexClass || s.b.r.class == complexClass {
		return 0, fmt.Errorf("--compare-func %s compares real values, not complex ones", fn)
	}
	chunks := (s.n + statsChunk - 1) / statsChunk
	parts := s.msums // summed by the scan (C order), else by a pass here
	if parts == nil {
		var err error
		if parts, err = s.metricPass(threads, chunks, infEqual); err != nil {
			return 0, err
		}
	}
	total := newMetricSums()
	for i := range parts {
		total.merge(&parts[i])
	}
	return metricOf(fn, total, s.n)
}

// metricPass sums the pairs for a metric with a pass of its own, chunk
// by chunk (the scan does it for C-order inputs).
func (s *scanner) metricPass(threads, chunks int, infEqual bool) ([]metricSums, error) {
	parts := make([]metricSums, chunks)
	type scratch struct {
		idx        []int
		offA, offB [batch]int
	}
	sc := make([]scratch, max(1, min(threads, chunks)))
	for w := range sc {
		sc[w].idx = make([]int, len(s.shape))
	}
	err := parallel(len(sc), chunks, func(w int, bb *bufs, c int) {
		p := newMetricSums()
		lo, hi := c*statsChunk, min((c+1)*statsChunk, s.n)
		for i := lo; i < hi; i += batch {
			m := min(batch, hi-i)
			s.decodeBatch(bb, sc[w].idx, &sc[w].offA, &sc[w].offB, i, m, false)
			p.addBatch(bb.ya[:m], bb.xb[:m], infEqual)
		}
		parts[c] = p
	})
	return parts, err
}

// metricOf is the metric fn of the sums of n pairs.
func metricOf(fn string, total metricSums, count int) (float64, error) {
	d2, ab, aa, bb := total.d2+total.d2c, total.ab+total.abc, total.aa+total.aac, total.bb+total.bbc
	n := float64(count)
	switch fn {
	case FuncL2:
		return math.Sqrt(d2), nil
	case FuncCosine:
		m1, m2 := math.Sqrt(aa), math.Sqrt(bb)
		switch {
		case m1 == 0 && m2 == 0:
			return 1, nil
		case m1 == 0 || m2 == 0:
			return 0, nil
		}
		c := ab / (m1 * m2)
		if c != c {
			return c, nil
		}
		return math.Max(-1, math.Min(1, c)), nil
	case FuncPSNR:
		mse := d2 / n
		if mse == 0 {
			return math.Inf(1), nil
		}
		maxA := total.maxA
		if total.nanA {
			maxA = math.NaN()
		}
		if maxA <= 0 {
			maxA = 1
		}
		return 20*math.Log10(maxA) - 10*math.Log10(mse), nil
	case FuncSNR:
		signal, noise := aa/n, d2/n
		switch {
		case noise == 0:
			return math.Inf(1), nil
		case signal == 0:
			return math.Inf(-1), nil
		}
		return 10 * math.Log10(signal/noise), nil
	}
	return 0, fmt.Errorf("internal error: no metric %q", fn)
}

// maxIndexRow is the longest row --compare-func indices takes: its
// values are held in memory (top-k outputs are short).
const maxIndexRow = 1 << 22

// requiredIndexTolerance is the least --index-tolerance with which
// Polygraphy's indices comparison passes: the largest over the rows (the
// last axis) of the least t for which every value of A's row before its
// last t is either where B has it or found first in B's row at most t
// places away. A value B's row lacks (a NaN among them) needs the row's
// whole length, as only a tolerance that skips it passes.
func (s *scanner) requiredIndexTolerance() (int, error) {
	rank := len(s.shape)
	row := 1
	if rank > 0 {
		row = s.shape[rank-1]
	}
	if row > maxIndexRow {
		return 0, fmt.Errorf("--compare-func indices compares rows (the last axis) of at most %d values, as top-k outputs; this one has %d", maxIndexRow, row)
	}
	if s.n == 0 || row == 0 {
		return 0, nil
	}
	ints := s.a.r.class == integer && s.b.r.class == integer
	type key struct {
		neg bool
		mag uint64
		f   float64
	}
	keyOf := func(sd *side, off int) key {
		e := sd.elem(off)
		if ints {
			neg, mag := sd.r.integer(e)
			if mag == 0 {
				neg = false
			}
			return key{neg: neg, mag: mag}
		}
		return key{f: sd.r.float(e)}
	}
	first := make(map[key]int, row)
	need := make([]int, row)
	prefix := make([]int, row+1) // prefix[k] = max(need[:k])
	idx := make([]int, rank)
	required := 0
	err := parallel(1, 1, func(_ int, _ *bufs, _ int) {
		for r := 0; r < s.n/row; r++ {
			clear(first)
			base := r * row
			for j := row - 1; j >= 0; j-- {
				copy(idx, unravel(base+j, s.shape))
				first[keyOf(&s.b, s.b.offset(idx))] = j
			}
			for j := 0; j < row; j++ {
				copy(idx, unravel(base+j, s.shape))
				ka, kb := keyOf(&s.a, s.a.offset(idx)), keyOf(&s.b, s.b.offset(idx))
				switch k, ok := first[ka]; {
				case ka == kb && ka.f == ka.f:
					need[j] = 0
				case !ok || ka.f != ka.f:
					need[j] = row // never found: only skipping it passes
				default:
					need[j] = max(k-j, j-k)
				}
			}
			// The least t with max(need[:row-t]) <= t: grow t from the
			// row's end, where the values checked shrink as t grows.
			for k := 1; k <= row; k++ {
				prefix[k] = max(prefix[k-1], need[k-1])
			}
			t := 0
			for prefix[row-t] > t {
				t++
			}
			required = max(required, t)
		}
	})
	return required, err
}

// decideByMetric decides rep.Equal by the compare function fn: its metric
// against its threshold (a NaN metric fails), and fills in what a failing
// pair needed.
func (s *scanner) decideByMetric(fn string, o Options, rep *Report) error {
	var v float64
	var err error
	if fn == FuncIndices {
		var t int
		t, err = s.requiredIndexTolerance()
		v = float64(t)
	} else {
		v, err = s.metric(fn, max(o.Threads, 1), o.InfEqual)
	}
	if err != nil {
		return err
	}
	m := Float(v)
	rep.Metric = &m
	if funcs[fn].atLeast {
		rep.Equal = v >= o.Threshold
	} else {
		rep.Equal = v <= o.Threshold
	}
	if !rep.Equal && v == v {
		rep.Required = &Required{Threshold: &m}
	}
	return nil
}

// sumInf adds v to the compensated sum (s, c) as neumaier does, and
// keeps an infinite sum infinite (or NaN, as numpy's, when infinities of
// both signs meet): the compensation of an infinity would be NaN.
func sumInf(s, c, v float64) (float64, float64) {
	t := s + v
	if math.IsInf(t, 0) || t != t {
		return t, 0
	}
	return neumaier(s, c, v)
}
