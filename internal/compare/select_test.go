package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// numpyQuantile is numpy's quantile(v, q, method='linear') of sorted v.
func numpyQuantile(v []float64, q float64) float64 {
	h := float64(len(v)-1) * q
	lo := min(int(math.Floor(h)), len(v)-1)
	if lo == len(v)-1 || h == float64(lo) {
		return v[lo]
	}
	return lerp(v[lo], v[lo+1], h-float64(lo))
}

func numpyMedian(v []float64) float64 {
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// TestSelectionMatchesSort checks the median and quantile of the errors
// against a sort of them, with the in-memory gathering bounded so low that
// the refining passes run (one, two, or down to all 64 bits), on
// distributions that crowd one bucket: many zeros, many equal errors,
// subnormals, and errors spread over many octaves; exact and tolerant,
// one worker and several.
func TestSelectionMatchesSort(t *testing.T) {
	defer func(n int) { maxCandidates = n }(maxCandidates)
	rng := rand.New(rand.NewPCG(3, 4))
	gens := map[string]func(i int) float64{
		"spread":     func(int) float64 { return rng.NormFloat64() * math.Pow(2, float64(rng.IntN(60)-30)) },
		"mostlyzero": func(int) float64 { return float64(rng.IntN(20)/19) * rng.Float64() },
		"ties":       func(int) float64 { return float64(rng.IntN(3)) * 0.25 },
		"narrow":     func(int) float64 { return 1 + rng.Float64()*1e-9 },
		"subnormal":  func(int) float64 { return float64(rng.IntN(1000)) * 5e-324 },
	}
	for name, gen := range gens {
		for _, n := range []int{1, 2, 3, 999, 70_001} {
			a, b := make([]float64, n), make([]float64, n)
			errs := make([]float64, n)
			for i := range a {
				a[i] = float64(rng.IntN(5))
				b[i] = a[i] + gen(i)
				errs[i] = math.Abs(b[i] - a[i])
			}
			slices.Sort(errs)
			ta := tensor(t, "float64", []int{n}, f64s(a...))
			tb := tensor(t, "float64", []int{n}, f64s(b...))
			for _, cands := range []int{1 << 21, 1000, 1} {
				maxCandidates = cands
				for _, o := range []Options{exact(), isclose(0, 1e-300)} {
					o.Stat, o.Quantile = "quantile", 0.37
					if !o.Tolerant {
						o.Stat = ""
					}
					for _, threads := range []int{1, 3} {
						o.Threads = threads
						r := mustCompare(t, ta, tb, o)
						if got, want := float64(*r.MedianAbsDiff), numpyMedian(errs); got != want {
							t.Errorf("%s n=%d cands=%d tolerant=%v j=%d: median %g, sort says %g", name, n, cands, o.Tolerant, threads, got, want)
						}
						if o.Tolerant {
							if got, want := float64(*r.QuantileAbsDiff), numpyQuantile(errs, 0.37); got != want {
								t.Errorf("%s n=%d cands=%d j=%d: quantile %g, sort says %g", name, n, cands, threads, got, want)
							}
						}
					}
				}
			}
		}
	}
}

func TestSelectKth(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 5, 17, 100, 5000} {
		for _, spread := range []uint64{1, 3, 1 << 40} {
			v := make([]uint64, n)
			for i := range v {
				v[i] = rng.Uint64N(spread)
			}
			sorted := slices.Sorted(slices.Values(v))
			for _, k := range []int{0, n / 2, n - 1} {
				w := slices.Clone(v)
				if got := selectKth(w, k); got != sorted[k] {
					t.Errorf("n=%d spread=%d k=%d: %d, want %d", n, spread, k, got, sorted[k])
				}
			}
		}
	}
	// Sorted and reversed inputs: the pivot keeps them linear.
	v := make([]uint64, 100_000)
	for i := range v {
		v[i] = uint64(len(v) - i)
	}
	if got := selectKth(v, 500); got != 501 {
		t.Errorf("reversed: %d, want 501", got)
	}
}
