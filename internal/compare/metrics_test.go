package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/testpeer"
	"github.com/x448/float16"
)

// polygraphyPeer is a numpy transcription of Polygraphy's comparator
// functions (polygraphy/comparator/compare.py: CompareFunc.indices,
// distance_metrics' compute_l2_norm and compute_cosine_similarity,
// quality_metrics' compute_psnr and compute_snr), evaluated in float64
// where Polygraphy's cast_up keeps float32, as depthspace does. Two
// deliberate differences, both marked: a NaN cosine stays NaN (Python's
// min and max would make it 1.0), and --infinities-compare-equal, which
// Polygraphy applies to its simple comparison's absolute error, makes
// A−B zero where both are the same infinity. For each case it prints
// the metric as Polygraphy logs it ("%.5g") and, for indices, the least
// index tolerance with which Polygraphy's own loop passes.
const polygraphyPeer = `
import json, sys
import numpy as np

def diff(a, b, inf_equal):
    d = a - b
    if inf_equal:
        d = np.where(np.isinf(a) & (a == b), 0, d)
    return d

def l2(a, b, inf_equal):
    return np.sqrt(np.sum(np.power(diff(a, b, inf_equal), 2)))

def cosine(a, b, inf_equal):
    a1, b1 = np.ravel(a), np.ravel(b)
    dot = np.sum(np.multiply(a1, b1))
    m1 = np.sqrt(np.sum(np.power(a1, 2)))
    m2 = np.sqrt(np.sum(np.power(b1, 2)))
    if m1 == 0 and m2 == 0:
        return 1.0
    elif m1 == 0 or m2 == 0:
        return 0.0
    c = dot / (m1 * m2)
    return float(np.clip(c, -1.0, 1.0))  # Polygraphy: max(-1.0, min(1.0, c)), which makes NaN 1.0

def psnr(a, b, inf_equal):
    mse = np.mean(np.power(diff(a, b, inf_equal), 2))
    if mse == 0:
        return float("inf")
    max_val = np.max(a)
    if max_val <= 0:
        max_val = 1.0
    return 20 * np.log10(max_val) - 10 * np.log10(mse)

def snr(a, b, inf_equal):
    signal_power = np.mean(np.power(a, 2))
    noise_power = np.mean(np.power(diff(a, b, inf_equal), 2))
    if noise_power == 0:
        return float("inf")
    if signal_power == 0:
        return -float("inf")
    return 10 * np.log10(signal_power / noise_power)

def indices_pass(output0, output1, per_out_index_tol):
    # CompareFunc.indices' match, as it is.
    for batch in np.ndindex(output0.shape[:-1]):
        out0_vals = output0[batch]
        if per_out_index_tol > 0:
            out0_vals = out0_vals[:-per_out_index_tol]
        out1_vals = output1[batch]
        for index0, val0 in enumerate(out0_vals):
            if val0 == out1_vals[index0]:
                continue
            index1 = np.ravel(np.argwhere(out1_vals == val0))
            if np.size(index1) < 1:
                return False
            index1 = index1[0]
            if abs(index1 - index0) > per_out_index_tol:
                return False
    return True

def required_index_tolerance(a, b):
    t = 0
    while not indices_pass(a, b, t):
        t += 1
    return t

funcs = {"l2": l2, "cosine-similarity": cosine, "psnr": psnr, "snr": snr}
out = {}
with np.errstate(all="ignore"):
    for c in json.load(open(sys.argv[1])):
        a, b = np.load(c["a"]), np.load(c["b"])
        if c["func"] == "indices":
            out[c["name"]] = str(required_index_tolerance(a, b))
        else:
            a, b = a.astype(np.float64), b.astype(np.float64)
            out[c["name"]] = "%.5g" % funcs[c["func"]](a, b, c["inf_equal"])
json.dump(out, sys.stdout)
`

// Each compare function against the numpy transcription of Polygraphy's,
// to the last digit Polygraphy prints, on float16, float32 and float64
// pairs with NaN and infinities, and on the index outputs of a top-k.
func TestCompareFuncsAgainstNumpy(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(3))
	type peerCase struct {
		Name     string `json:"name"`
		A        string `json:"a"`
		B        string `json:"b"`
		Func     string `json:"func"`
		InfEqual bool   `json:"inf_equal"`
		pair     string
	}
	var cases []peerCase
	tensors := map[string][2]Tensor{}
	encode := func(descr string, v []float64) [][]byte {
		var out [][]byte
		for _, x := range v {
			switch descr {
			case "<f2":
				out = append(out, le(2, uint64(float16.Fromfloat32(float32(x)).Bits())))
			case "<f4":
				out = append(out, le(4, uint64(math.Float32bits(float32(x)))))
			case "<f8":
				out = append(out, le(8, math.Float64bits(x)))
			case "<i8":
				out = append(out, le(8, uint64(int64(x))))
			}
		}
		return out
	}
	add := func(name, descr string, shape []int, a, b []float64, fns ...string) {
		ta := writeNpy(t, filepath.Join(dir, name+".a.npy"), descr, encode(descr, a))
		tb := writeNpy(t, filepath.Join(dir, name+".b.npy"), descr, encode(descr, b))
		ta.Shape, tb.Shape = shape, shape
		// writeNpy writes a vector: rewrite with the shape.
		for _, side := range []struct {
			p string
			t Tensor
		}{{name + ".a.npy", ta}, {name + ".b.npy", tb}} {
			if err := os.WriteFile(filepath.Join(dir, side.p), append(npy.EncodeNpy(side.t.Header), side.t.Data...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		tensors[name] = [2]Tensor{ta, tb}
		for _, fn := range fns {
			for _, ie := range []bool{false, true} {
				cases = append(cases, peerCase{fmt.Sprintf("%s %s %v", name, fn, ie), filepath.Join(dir, name+".a.npy"), filepath.Join(dir, name+".b.npy"), fn, ie, name})
			}
		}
	}
	metrics := []string{FuncL2, FuncCosine, FuncPSNR, FuncSNR}
	n := 1000
	for _, descr := range []string{"<f2", "<f4", "<f8"} {
		base := make([]float64, n)
		near := make([]float64, n)
		for i := range base {
			base[i] = rng.NormFloat64() * 3
			near[i] = base[i] + rng.NormFloat64()*1e-2
		}
		with := func(v []float64, at map[int]float64) []float64 {
			out := append([]float64(nil), v...)
			for i, x := range at {
				out[i] = x
			}
			return out
		}
		inf, nan := math.Inf(1), math.NaN()
		add(descr+" near", descr, []int{10, 100}, base, near, metrics...)
		add(descr+" same", descr, []int{n}, base, base, metrics...)
		add(descr+" nan in b", descr, []int{n}, base, with(near, map[int]float64{7: nan}), metrics...)
		add(descr+" nan in a", descr, []int{n}, with(base, map[int]float64{7: nan}), near, metrics...)
		add(descr+" same infinities", descr, []int{n}, with(base, map[int]float64{3: inf, 9: -inf}), with(near, map[int]float64{3: inf, 9: -inf}), metrics...)
		add(descr+" other infinity", descr, []int{n}, with(base, map[int]float64{3: inf}), with(near, map[int]float64{3: -inf}), metrics...)
		add(descr+" inf against a number", descr, []int{n}, base, with(near, map[int]float64{5: inf}), metrics...)
		neg := make([]float64, n)
		zero := make([]float64, n)
		for i := range neg {
			neg[i] = -math.Abs(base[i]) - 1
		}
		add(descr+" negative", descr, []int{n}, neg, with(neg, map[int]float64{0: -2.5}), metrics...)
		add(descr+" zeros", descr, []int{n}, zero, zero, metrics...)
		add(descr+" zero a", descr, []int{n}, zero, near, metrics...)
		add(descr+" zero b", descr, []int{n}, base, zero, metrics...)
		add(descr+" opposite", descr, []int{n}, base, with(base, nil), metrics...)
	}
	// Top-k indices: rows of 8, values moved by up to three places, one
	// missing; float rows with a NaN.
	rowsA, rowsB := make([]float64, 0, 48), make([]float64, 0, 48)
	for r := 0; r < 6; r++ {
		perm := rng.Perm(8)
		moved := append([]int(nil), perm...)
		if r > 0 {
			i := rng.Intn(8 - r%4)
			moved[i], moved[i+r%4] = moved[i+r%4], moved[i]
		}
		if r == 5 {
			moved[2] = 99
		}
		for j := range perm {
			rowsA, rowsB = append(rowsA, float64(perm[j])), append(rowsB, float64(moved[j]))
		}
	}
	add("i8 indices", "<i8", []int{2, 3, 8}, rowsA, rowsB, FuncIndices)
	add("i8 indices same", "<i8", []int{6, 8}, rowsA, rowsA, FuncIndices)
	fa := append([]float64(nil), rowsA...)
	fb := append([]float64(nil), rowsA...)
	fa[3], fb[3] = math.NaN(), math.NaN()
	fb[10], fb[12] = fb[12], fb[10]
	add("f4 indices nan", "<f4", []int{6, 8}, fa, fb, FuncIndices)
	add("f8 indices nan at the end", "<f8", []int{6, 8}, append(append([]float64(nil), rowsA[:47]...), math.NaN()), append(append([]float64(nil), rowsA[:47]...), math.NaN()), FuncIndices)

	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cpath := filepath.Join(dir, "cases.json")
	if err := os.WriteFile(cpath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, "-c", polygraphyPeer, cpath).Output()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	var want map[string]string
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	python := strings.NewReplacer("Infinity", "inf", "NaN", "nan")
	for _, c := range cases {
		pair := tensors[c.pair]
		for _, threads := range []int{1, 3} {
			o := Options{Func: c.Func, Threshold: DefaultThreshold(c.Func), InfEqual: c.InfEqual, MaxReport: 3, Threads: threads}
			r, err := Tensors(pair[0], pair[1], o)
			if err != nil {
				t.Fatalf("%s: %v", c.Name, err)
			}
			got := python.Replace(metricText(float64(*r.Metric)))
			if c.Func == FuncIndices {
				got = fmt.Sprint(float64(*r.Metric))
			}
			if got != want[c.Name] {
				t.Errorf("%s (-j %d): depthspace %s, numpy %s", c.Name, threads, got, want[c.Name])
			}
			m := float64(*r.Metric)
			pass := m <= o.Threshold
			if funcs[c.Func].atLeast {
				pass = m >= o.Threshold
			}
			if r.Equal != pass {
				t.Errorf("%s: equal %v with metric %v, threshold %v", c.Name, r.Equal, m, o.Threshold)
			}
		}
	}
	t.Logf("%d metrics checked against numpy", len(cases))
}

// A failing pair says what would have passed it: the metric as the
// threshold (a compare function), or the tolerances alone that pass the
// statistic checked (simple), exactly; none when a NaN or an infinity
// differs.
func TestRequiredTolerances(t *testing.T) {
	a := tensor(t, "float64", []int{5}, f64s(1, 2, 0, 4, 8))
	b := tensor(t, "float64", []int{5}, f64s(1, 2.5, 0, 3, 8.5))
	r := mustCompare(t, a, b, isclose(0.01, 0.1))
	if q := r.Required; q == nil || q.Stat != "elemwise" || *q.ATol != 1 || *q.RTol != 0.25 {
		t.Errorf("elemwise: %+v", q)
	}
	// Each required tolerance passes alone, as it says.
	for _, o := range []Options{isclose(0, float64(*r.Required.ATol)), isclose(float64(*r.Required.RTol), 0)} {
		if r := mustCompare(t, a, b, o); !r.Equal {
			t.Errorf("rtol %v atol %v: the required tolerance fails", o.RTol, o.ATol)
		}
	}
	// A difference where A is 0: no rtol passes.
	c := tensor(t, "float64", []int{5}, f64s(1, 2.5, 0.5, 3, 8.5))
	if r := mustCompare(t, a, c, exact()); !math.IsInf(float64(*r.Required.RTol), 1) || *r.Required.ATol != 1 {
		t.Errorf("zero reference: %+v", r.Required)
	}
	// The median: of |B−A| = 0, 0.5, 0, 1, 0.5 and of the relative
	// errors 0, 0.25, 0.25, 0.0625 (A = 0 left out).
	o := isclose(0.01, 0.1)
	o.Stat = "median"
	r = mustCompare(t, a, b, o)
	if q := r.Required; q == nil || *q.ATol != 0.5 || *q.RTol != 0.15625 {
		t.Errorf("median: %+v", q)
	}
	// Without --rtol the relative errors' median (passes of its own) is
	// not computed for the report.
	o.RTol = 0
	r = mustCompare(t, a, b, o)
	if q := r.Required; q == nil || *q.ATol != 0.5 || q.RTol != nil {
		t.Errorf("median without --rtol: %+v", q)
	}
	o.RTol = 0.01
	o.Stat, o.Quantile = "quantile", 0.75
	r = mustCompare(t, a, b, o)
	if q := r.Required; q == nil || *q.ATol != 0.5 || *q.RTol != 0.25 {
		t.Errorf("quantile: %+v", q)
	}
	o.Stat = "mean"
	r = mustCompare(t, a, b, o)
	if q := r.Required; q == nil || *q.ATol != 0.4 || *q.RTol != 0.140625 {
		t.Errorf("mean: %+v", q)
	}
	// A NaN against a number: nothing passes.
	d := tensor(t, "float64", []int{5}, f64s(1, 2.5, 0, math.NaN(), 8.5))
	if r := mustCompare(t, a, d, isclose(0, 0.1)); r.Required == nil || r.Required.NonFinite != 1 || r.Required.ATol != nil {
		t.Errorf("NaN: %+v", r.Required)
	}
	// A compare function: its metric.
	r = mustCompare(t, a, b, Options{Func: FuncL2, Threshold: 0.5, MaxReport: 1, Threads: 1})
	if r.Equal || r.Required == nil || float64(*r.Required.Threshold) != math.Sqrt(0.25+1+0.25) {
		t.Errorf("l2: equal %v, %+v", r.Equal, r.Required)
	}
	if r := mustCompare(t, a, a, isclose(0, 0)); r.Required != nil {
		t.Errorf("an equal pair needs nothing: %+v", r.Required)
	}
}

// A compare function's JUnit report: the failure is the function's
// verdict line and the report, valid against both schemas.
func TestJUnitCompareFunc(t *testing.T) {
	t.Chdir(t.TempDir())
	writeNpz(t, "a.npz", []string{"out0", "out1"}, [][]float64{{1, 2, 3, 4}, {1, 2}})
	writeNpz(t, "b.npz", []string{"out0", "out1"}, [][]float64{{1, 2, 3, 4.5}, {1, 2}})
	o := exact()
	o.Func, o.Threshold, o.MemberThreshold = FuncSNR, 20, map[string]float64{"out0": 21}
	doc, p, equal := junitOf(t, job("a.npz", "b.npz", o))
	if equal || p.Suites[0].Failures != 1 || p.Suites[0].Tests != 2 {
		t.Fatalf("equal %v, %d failures of %d\n%s", equal, p.Suites[0].Failures, p.Suites[0].Tests, doc)
	}
	f := p.Suites[0].Cases[0].Failure
	if want := "a.npz:out0 and b.npz:out0 differ by snr: snr 20.792 < --snr-tolerance 21; shape 4, float64; 1 of 4 elements differ"; f == nil || f.Message != want {
		t.Errorf("failure %+v, want message %q", f, want)
	}
	if !strings.Contains(f.Text, "required tolerance: --snr-tolerance 20.79") {
		t.Errorf("failure text:\n%s", f.Text)
	}
	validateJUnit(t, doc)
}

// The metrics of Fortran-order inputs (summed by a pass of their own)
// are those of the same values in C order (summed by the scan), to the
// bit, and do not depend on -j.
func TestMetricStorageOrders(t *testing.T) {
	rows, cols := 300, 700 // several statsChunks
	rng := rand.New(rand.NewSource(5))
	c := make([]float64, rows*cols)
	d := make([]float64, rows*cols)
	for i := range c {
		c[i] = rng.NormFloat64()
		d[i] = c[i] + rng.NormFloat64()*1e-3
	}
	fortran := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i := 0; i < rows; i++ {
			for j := 0; j < cols; j++ {
				out[j*rows+i] = v[i*cols+j]
			}
		}
		return out
	}
	mk := func(v []float64, f bool) Tensor {
		tt := tensor(t, "float64", []int{rows, cols}, f64s(v...))
		tt.Fortran = f
		return tt
	}
	cA, cB, fA, fB := mk(c, false), mk(d, false), mk(fortran(c), true), mk(fortran(d), true)
	for _, fn := range []string{FuncL2, FuncCosine, FuncPSNR, FuncSNR} {
		var want float64
		for i, pair := range [][2]Tensor{{cA, cB}, {fA, fB}, {cA, fB}, {fA, cB}} {
			for _, threads := range []int{1, 4} {
				r := mustCompare(t, pair[0], pair[1], Options{Func: fn, Threshold: DefaultThreshold(fn), MaxReport: 1, Threads: threads})
				got := float64(*r.Metric)
				if i == 0 && threads == 1 {
					want = got
				} else if math.Float64bits(got) != math.Float64bits(want) {
					t.Errorf("%s: pair %d -j %d: %v, C order %v", fn, i, threads, got, want)
				}
			}
		}
	}
}
