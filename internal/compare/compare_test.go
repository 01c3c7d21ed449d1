package compare

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/pipeline"
)

func dtype(t *testing.T, name string) format.DType {
	t.Helper()
	d, err := format.ParseDType(name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func f32s(big bool, v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		if big {
			binary.BigEndian.PutUint32(b[4*i:], math.Float32bits(f))
		} else {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
		}
	}
	return b
}

func f64s(v ...float64) []byte {
	b := make([]byte, 8*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f))
	}
	return b
}

func i64s(v ...int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

func tensor(t *testing.T, dt string, shape []int, data []byte) Tensor {
	t.Helper()
	return Tensor{Header: format.Header{DType: dtype(t, dt), Shape: shape}, Data: data}
}

func exact() Options { return Options{MaxReport: DefaultMaxReport, Threads: 1} }

func isclose(rtol, atol float64) Options {
	return Options{Tolerant: true, RTol: rtol, ATol: atol, MaxReport: DefaultMaxReport, Threads: 1}
}

func mustCompare(t *testing.T, a, b Tensor, o Options) *Report {
	t.Helper()
	r, err := Tensors(a, b, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func indices(r *Report) [][]int {
	out := [][]int{}
	for _, d := range r.First {
		out = append(out, d.Index)
	}
	return out
}

var (
	nanA = math.Float32frombits(0x7fc00000)
	nanB = math.Float32frombits(0x7fc00001) // another payload
	negZ = float32(math.Copysign(0, -1))
)

// Exact mode is bits: -0.0 differs from 0.0, NaNs with the same bits are
// equal and NaNs with different payloads are not.
func TestExactIsBitwise(t *testing.T) {
	a := tensor(t, "float32", []int{2, 3}, f32s(false, 1, 0, nanA, nanA, 5, 6))
	b := tensor(t, "float32", []int{2, 3}, f32s(false, 1, negZ, nanA, nanB, 5, 6.5))
	r := mustCompare(t, a, b, exact())
	if r.Equal || r.Different != 3 || r.Elements != 6 || r.Mode != "exact" {
		t.Fatalf("got %+v", r)
	}
	if want := [][]int{{0, 1}, {1, 0}, {1, 2}}; !reflect.DeepEqual(indices(r), want) {
		t.Errorf("indices %v, want %v", indices(r), want)
	}
	d := r.First[0]
	if string(d.A) != "0" || string(d.B) != "-0" || d.ABits != "" {
		t.Errorf("-0 difference printed as %s vs %s (%s)", d.A, d.B, d.ABits)
	}
	d = r.First[1]
	if string(d.A) != `"NaN"` || string(d.B) != `"NaN"` || d.ABits != "0x7fc00000" || d.BBits != "0x7fc00001" {
		t.Errorf("NaN payloads printed as %s %s %s %s", d.A, d.B, d.ABits, d.BBits)
	}
	if *r.MaxAbsDiff != 0.5 || !reflect.DeepEqual(r.MaxAbsDiffIndex, []int{1, 2}) {
		t.Errorf("max abs diff %v at %v", *r.MaxAbsDiff, r.MaxAbsDiffIndex)
	}
	if got, want := float64(*r.MaxRelDiff), 0.5/6; got != want || !reflect.DeepEqual(r.MaxRelDiffIndex, []int{1, 2}) {
		t.Errorf("max rel diff %v at %v, want %v (relative to a, the reference)", got, r.MaxRelDiffIndex, want)
	}
	if r := mustCompare(t, a, a, exact()); !r.Equal || r.Different != 0 || *r.MaxAbsDiff != 0 || r.MaxAbsDiffIndex != nil {
		t.Errorf("a tensor with NaNs differs from itself: %+v", r)
	}
}

// isclose mode compares values: -0 == 0, any NaN equals any NaN at the
// same position, but not a number.
func TestIsCloseValues(t *testing.T) {
	a := tensor(t, "float32", []int{5}, f32s(false, 0, nanA, nanA, 100, float32(math.Inf(1))))
	b := tensor(t, "float32", []int{5}, f32s(false, negZ, nanB, 1, 100.5, float32(math.Inf(1))))
	r := mustCompare(t, a, b, isclose(0, 0))
	if r.Different != 2 || !reflect.DeepEqual(indices(r), [][]int{{2}, {3}}) {
		t.Fatalf("rtol 0 atol 0: %d different at %v", r.Different, indices(r))
	}
	if r := mustCompare(t, a, b, isclose(0.005, 0)); r.Different != 1 || r.First[0].Index[0] != 2 {
		t.Errorf("rtol 0.005 (|b-a| = 0.5 <= 0.005*100): %d different at %v", r.Different, indices(r))
	}
	if r := mustCompare(t, a, b, isclose(0.004, 0)); r.Different != 2 {
		t.Errorf("rtol 0.004: %d different", r.Different)
	}
	if r := mustCompare(t, a, b, isclose(0, 0.5)); r.Different != 1 {
		t.Errorf("atol 0.5: %d different", r.Different)
	}
	if *r.RTol != 0 || *r.ATol != 0 || r.Mode != "isclose" {
		t.Errorf("tolerances not reported: %+v", r)
	}
}

// The reference is a, the first tensor: the relative tolerance scales
// with |a|, as numpy.isclose(b, a) scales with its second argument.
func TestIsCloseReferenceIsFirst(t *testing.T) {
	a := tensor(t, "float64", []int{1}, f64s(10))
	b := tensor(t, "float64", []int{1}, f64s(11))
	// |b-a| = 1; rtol*|a| = 1 (close); rtol*|b| would be 1.1 either way, so
	// use rtol 0.095: 0.95 with a, 1.045 with b.
	if r := mustCompare(t, a, b, isclose(0.095, 0)); r.Equal {
		t.Error("rtol 0.095: |11-10| <= 0.095*10 should fail with a as the reference")
	}
	if r := mustCompare(t, b, a, isclose(0.095, 0)); !r.Equal {
		t.Error("rtol 0.095: |10-11| <= 0.095*11 should hold with the first tensor (11) as the reference")
	}
}

// Byte order is storage: a big-endian tensor equals the little-endian one
// with the same values, in both modes.
func TestByteOrderIgnored(t *testing.T) {
	le := tensor(t, "<f4", []int{3}, f32s(false, 1, nanB, 3))
	be := tensor(t, ">f4", []int{3}, f32s(true, 1, nanB, 3))
	if r := mustCompare(t, le, be, exact()); !r.Equal {
		t.Errorf("<f4 and >f4 with the same values differ: %+v", r.First)
	}
	be2 := tensor(t, ">f4", []int{3}, f32s(true, 1, nanA, 3))
	if r := mustCompare(t, le, be2, exact()); r.Different != 1 || r.First[0].BBits != "0x7fc00000" {
		t.Errorf("a NaN payload across byte orders: %+v", r.First)
	}
	c1 := tensor(t, "<c8", []int{1}, f32s(false, 1, 2))
	c2 := tensor(t, ">c8", []int{1}, f32s(true, 1, 2))
	if r := mustCompare(t, c1, c2, exact()); !r.Equal {
		t.Error("<c8 and >c8 with the same value differ")
	}
}

func TestMismatch(t *testing.T) {
	a := tensor(t, "float32", []int{2, 3}, make([]byte, 24))
	b := tensor(t, "float32", []int{3, 2}, make([]byte, 24))
	r := mustCompare(t, a, b, exact())
	if r.Equal || r.Mismatch != MismatchShape || !reflect.DeepEqual(r.B.Shape, []int{3, 2}) {
		t.Errorf("shapes 2,3 and 3,2: %+v", r)
	}
	if r := mustCompare(t, a, tensor(t, "float32", []int{6}, make([]byte, 24)), isclose(1, 1)); r.Mismatch != MismatchShape {
		t.Errorf("shapes 2,3 and 6 compare: %+v", r)
	}
	c := tensor(t, "int32", []int{2, 3}, make([]byte, 24))
	r = mustCompare(t, a, c, exact())
	if r.Equal || r.Mismatch != MismatchDType || r.B.DType != "int32" {
		t.Errorf("float32 and int32, exact: %+v", r)
	}
	// With tolerances, numbers of any type are compared by value, like numpy.
	if r := mustCompare(t, a, c, isclose(0, 0)); !r.Equal || r.Mismatch != "" {
		t.Errorf("float32 zeros and int32 zeros with atol 0: %+v", r)
	}
	s := tensor(t, "S4", []int{2, 3}, make([]byte, 24))
	if r := mustCompare(t, s, c, isclose(0, 0)); r.Mismatch != MismatchDType {
		t.Errorf("S4 and int32 with tolerances: %+v", r)
	}
	// Non-numeric elements are compared exactly even with tolerances.
	s2 := tensor(t, "S4", []int{2, 3}, []byte("aaaabbbbccccddddeeeeffff"))
	s3 := tensor(t, "S4", []int{2, 3}, []byte("aaaabbbbccccddddeeeefffg"))
	r = mustCompare(t, s2, s3, isclose(1, 1))
	if r.Different != 1 || string(r.First[0].A) != `"ffff"` || string(r.First[0].B) != `"fffg"` || r.MaxAbsDiff != nil {
		t.Errorf("S4: %+v", r)
	}
}

// int64 extremes: exact mode compares the integers themselves; isclose
// mode converts to float64 as numpy does, so neighbours above 2^53 are
// close even with zero tolerance. The reported difference is exact.
func TestIntegerExtremes(t *testing.T) {
	a := tensor(t, "int64", []int{3}, i64s(math.MaxInt64, math.MinInt64, 1<<53))
	b := tensor(t, "int64", []int{3}, i64s(math.MaxInt64-1, math.MaxInt64, 1<<53+1))
	r := mustCompare(t, a, b, exact())
	if r.Different != 3 {
		t.Fatalf("exact: %d different", r.Different)
	}
	if string(r.First[0].A) != "9223372036854775807" || string(r.First[0].B) != "9223372036854775806" {
		t.Errorf("values printed as %s, %s", r.First[0].A, r.First[0].B)
	}
	if *r.MaxAbsDiff != Float(math.Exp2(64)-1) || !reflect.DeepEqual(r.MaxAbsDiffIndex, []int{1}) {
		t.Errorf("max abs diff %v at %v, want 2^64-1 at [1]", float64(*r.MaxAbsDiff), r.MaxAbsDiffIndex)
	}
	r = mustCompare(t, a, b, isclose(0, 0))
	if r.Different != 1 || r.First[0].Index[0] != 1 {
		t.Errorf("isclose(0, 0) on int64 extremes: %d different at %v (numpy: only MinInt64 vs MaxInt64)", r.Different, indices(r))
	}
	u := tensor(t, "uint64", []int{2}, i64s(-1, 0))
	v := tensor(t, "uint64", []int{2}, i64s(-2, 1))
	if r := mustCompare(t, u, v, exact()); r.Different != 2 || *r.MaxAbsDiff != 1 {
		t.Errorf("uint64: %+v", r)
	}
	// Mixed signedness with tolerances: by value.
	i8 := tensor(t, "int8", []int{2}, []byte{0xff, 0x80})
	u8 := tensor(t, "uint8", []int{2}, []byte{0xff, 0x80})
	if r := mustCompare(t, i8, u8, isclose(0, 0)); r.Different != 2 || string(r.First[0].A) != "-1" || string(r.First[0].B) != "255" {
		t.Errorf("int8 -1 vs uint8 255: %+v", r.First)
	}
}

// Fortran order is storage too: logical elements are compared, and
// indices are logical.
func TestFortranOrder(t *testing.T) {
	// Logical [[1, 2, 3], [4, 5, 6]]; Fortran stores 1 4 2 5 3 6.
	c := tensor(t, "float32", []int{2, 3}, f32s(false, 1, 2, 3, 4, 5, 6))
	f := tensor(t, "float32", []int{2, 3}, f32s(false, 1, 4, 2, 5, 3, 6))
	f.Fortran = true
	if r := mustCompare(t, c, f, exact()); !r.Equal {
		t.Errorf("C and Fortran storage of the same tensor differ at %v", indices(r))
	}
	g := tensor(t, "float32", []int{2, 3}, f32s(false, 1, 4, 2, 9, 3, 7))
	g.Fortran = true
	for _, pair := range [][2]Tensor{{c, g}, {f, g}, {g, c}} {
		r := mustCompare(t, pair[0], pair[1], exact())
		if want := [][]int{{1, 1}, {1, 2}}; !reflect.DeepEqual(indices(r), want) {
			t.Errorf("differences at %v, want %v", indices(r), want)
		}
		if r.B.Order != "F" && r.A.Order != "F" {
			t.Errorf("order not reported: %+v", r)
		}
	}
}

func TestZeroAndScalar(t *testing.T) {
	a := tensor(t, "float64", []int{2, 0, 3}, nil)
	if r := mustCompare(t, a, a, exact()); !r.Equal || r.Elements != 0 {
		t.Errorf("empty: %+v", r)
	}
	s := tensor(t, "float64", []int{}, f64s(1))
	s2 := tensor(t, "float64", []int{}, f64s(2))
	r := mustCompare(t, s, s2, exact())
	if r.Different != 1 || !reflect.DeepEqual(indices(r), [][]int{{}}) {
		t.Errorf("0-d: %+v", r)
	}
	b, err := json.Marshal(r)
	if err != nil || !strings.Contains(string(b), `"index":[]`) || !strings.Contains(string(b), `"shape":[]`) {
		t.Errorf("0-d JSON: %s, %v", b, err)
	}
}

func TestOptionsRefused(t *testing.T) {
	a := tensor(t, "float64", []int{1}, f64s(1))
	for _, o := range []Options{
		{Tolerant: true, RTol: -1, Threads: 1},
		{Tolerant: true, ATol: math.NaN(), Threads: 1},
		{MaxReport: -1, Threads: 1},
		{Threads: 0},
	} {
		if _, err := Tensors(a, a, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestFloatJSON(t *testing.T) {
	b, err := json.Marshal([]Float{1.5, Float(math.Inf(1)), Float(math.Inf(-1)), Float(math.NaN()), 1e-7, 1e21})
	if err != nil || string(b) != `[1.5,"Infinity","-Infinity","NaN",1e-7,1e+21]` {
		t.Errorf("%s, %v", b, err)
	}
}

// Complex values: isclose uses the modulus of the difference.
func TestComplex(t *testing.T) {
	a := tensor(t, "complex128", []int{2}, f64s(0, 0, 1, math.NaN()))
	b := tensor(t, "complex128", []int{2}, f64s(3, 4, math.NaN(), 2))
	r := mustCompare(t, a, b, isclose(0, 5))
	if !r.Equal {
		t.Errorf("|3+4i| = 5 <= atol 5, and NaN parts on both sides: %+v", r.First)
	}
	if r := mustCompare(t, a, b, isclose(0, 4.999)); r.Different != 1 || string(r.First[0].B) != "[3, 4]" {
		t.Errorf("atol 4.999: %+v", r.First)
	}
	// complex vs real: the real is promoted.
	re := tensor(t, "float64", []int{2}, f64s(0, 1))
	if r := mustCompare(t, re, b, isclose(0, 5)); r.Different != 1 {
		t.Errorf("float64 vs complex128: %+v", r)
	}
}

// ---------------------------------------------------------------------------
// The oracle: one element at a time, straight from the definitions, over
// logical indices.

func oracle(a, b Tensor, o Options) (diff []int, maxAbs float64, maxAbsAt int) {
	n := a.Elements()
	ra, rb := newReader(a.DType), newReader(b.DType)
	sa, sb := newSide(a), newSide(b)
	maxAbsAt = -1
	for i := 0; i < n; i++ {
		idx := unravel(i, a.Shape)
		ea, eb := sa.elem(sa.offset(idx)), sb.elem(sb.offset(idx))
		var same bool
		if o.Tolerant {
			if ra.class == complexClass || rb.class == complexClass {
				ar, ai := ra.complex(ea)
				br, bi := rb.complex(eb)
				same = closeComplex(br, bi, ar, ai, o.RTol, o.ATol)
			} else {
				same = closeReal(rb.float(eb), ra.float(ea), o.RTol, o.ATol)
			}
		} else {
			same = sameBits(ra, rb, ea, eb)
		}
		if !same {
			diff = append(diff, i)
		}
		x, y := ra.float(ea), rb.float(eb)
		if ra.class == integer {
			na, ma := ra.integer(ea)
			nb, mb := rb.integer(eb)
			if na == nb {
				d := ma - mb
				if mb > ma {
					d = mb - ma
				}
				if v := float64(d); v > maxAbs || maxAbsAt < 0 {
					maxAbs, maxAbsAt = v, i
				}
				continue
			}
		}
		if finite(x) && finite(y) && (o.Tolerant || !same) {
			if v := math.Abs(x - y); v > maxAbs || maxAbsAt < 0 {
				maxAbs, maxAbsAt = v, i
			}
		}
	}
	return diff, maxAbs, maxAbsAt
}

// Random tensors of every layout, with random differences: the parallel
// scan reports what the oracle finds, whatever -j.
func TestScanMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	special := []float32{0, negZ, nanA, nanB, float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, 1}
	for iter := 0; iter < 60; iter++ {
		rank := rng.Intn(4) + 1
		shape := make([]int, rank)
		for i := range shape {
			shape[i] = rng.Intn(7) + 1
		}
		if iter%20 == 0 {
			shape = []int{3, 50000} // several chunks
		}
		if iter%10 == 5 {
			// Mixed orders walk in 64x64 tiles: shapes with partial tiles,
			// extent-1 axes around and between the long ones, several units.
			shape = [][]int{{130, 3, 70}, {1, 200, 5, 1, 100}, {65, 65}, {300, 2, 2, 300}, {1, 1, 77, 1}, {100, 1}}[iter/10%6]
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		dt := []string{"float32", "int16", "uint8"}[iter%3]
		size := dtype(t, dt).Size
		data := make([]byte, n*size)
		rng.Read(data)
		if dt == "float32" {
			for i := 0; i < n; i += 1 + rng.Intn(5) {
				binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(special[rng.Intn(len(special))]))
			}
		}
		other := slices.Clone(data)
		for k := rng.Intn(n/3 + 2); k > 0; k-- {
			other[rng.Intn(len(other))] ^= byte(1 << rng.Intn(8))
		}
		a := tensor(t, dt, shape, data)
		b := tensor(t, dt, shape, other)
		a.Fortran, b.Fortran = rng.Intn(2) == 0, rng.Intn(2) == 0
		if iter%20 == 0 { // several chunks: both Fortran, then each alone
			a.Fortran, b.Fortran = iter != 20, iter != 40
		}
		if iter%10 == 5 {
			a.Fortran = iter%20 == 5
			b.Fortran = !a.Fortran
		}
		for _, o := range []Options{exact(), isclose(1e-3, 1e-6), isclose(0, 0)} {
			o.MaxReport = 1 + rng.Intn(40)
			want, wantMax, wantAt := oracle(a, b, o)
			var first *Report
			for _, threads := range []int{1, 2, 3, 8} {
				o.Threads = threads
				r := mustCompare(t, a, b, o)
				if r.Different != len(want) {
					t.Fatalf("%s %v F=%v/%v %s -j %d: %d different, oracle %d", dt, shape, a.Fortran, b.Fortran, r.Mode, threads, r.Different, len(want))
				}
				for i, d := range r.First {
					if w := unravel(want[i], shape); !reflect.DeepEqual(d.Index, w) {
						t.Fatalf("%s %v %s -j %d: difference %d at %v, oracle %v", dt, shape, r.Mode, threads, i, d.Index, w)
					}
				}
				if len(r.First) != min(o.MaxReport, len(want)) {
					t.Fatalf("%d listed, want %d", len(r.First), min(o.MaxReport, len(want)))
				}
				if wantAt >= 0 && (float64(*r.MaxAbsDiff) != wantMax || wantMax > 0 && !reflect.DeepEqual(r.MaxAbsDiffIndex, unravel(wantAt, shape))) {
					t.Fatalf("%s %v %s -j %d: max abs %v at %v, oracle %v at %v", dt, shape, r.Mode, threads,
						float64(*r.MaxAbsDiff), r.MaxAbsDiffIndex, wantMax, unravel(wantAt, shape))
				}
				if first == nil {
					first = r
				} else if !reflect.DeepEqual(first, r) {
					t.Fatalf("-j %d gives another report than -j 1", threads)
				}
			}
		}
	}
}

func TestWriteText(t *testing.T) {
	a := tensor(t, "float32", []int{1, 2, 2}, f32s(false, 1, 2, nanA, 4))
	b := tensor(t, "float32", []int{1, 2, 2}, f32s(false, 1, 2.5, nanB, 4))
	r := mustCompare(t, a, b, Options{MaxReport: 1, Threads: 1})
	r.A.Path, r.B.Path = "a.npy", "b.npy"
	var sb strings.Builder
	if err := r.WriteText(&sb); err != nil {
		t.Fatal(err)
	}
	want := `a.npy and b.npy differ: 2 of 4 elements, shape 1,2,2, float32, bit for bit
max abs diff 0.5 at [0, 0, 1]
max rel diff 0.25 at [0, 0, 1]
mean abs diff 0.16666666666666666, median abs diff 0; 2 mismatching (0.5 of the elements)
required tolerances (elemwise error, either alone): [atol=0.5] OR [rtol=0.25]
first 1 of 2 differences (index: a vs b):
  [0, 0, 1]: 2 vs 2.5
`
	if sb.String() != want {
		t.Errorf("got\n%s\nwant\n%s", sb.String(), want)
	}
}

// BenchmarkCompare measures the scan on 64 MiB of float32 per side.
func BenchmarkCompare(b *testing.B) {
	n := 16 << 20
	rng := rand.New(rand.NewSource(1))
	x, y := make([]byte, 4*n), make([]byte, 4*n)
	for i := 0; i < n; i++ {
		v := rng.Float32()
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(v*(1+1e-7)))
	}
	y[len(y)-1] ^= 1
	ta := Tensor{Header: format.Header{DType: format.DType{Kind: 'f', Size: 4, Order: '<'}, Shape: []int{n}}, Data: x}
	tb := ta
	tb.Data = y
	for _, bc := range []struct {
		name string
		o    Options
	}{
		{"exact", Options{MaxReport: 10, Threads: 1}},
		{"isclose", Options{Tolerant: true, RTol: 1e-5, MaxReport: 10, Threads: 1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(2 * len(x)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := Tensors(ta, tb, bc.o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// An input truncated by another process while it is mapped faults on
// access; Files reports that as an error instead of dying of SIGBUS, on
// one thread and several.
func TestTruncatedWhileMapped(t *testing.T) {
	dir := t.TempDir()
	// 1.5 MiB: files under 1 MiB are read, not mapped.
	shape := []int{6, 256, 256}
	data := make([]byte, 6*256*256*4)
	a := filepath.Join(dir, "a.npy")
	b := filepath.Join(dir, "b.npy")
	for _, p := range []string{a, b} {
		h := format.Header{DType: dtype(t, "float32"), Shape: shape}
		if err := os.WriteFile(p, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, threads := range []int{1, 3} {
		for _, o := range []Options{{Threads: threads}, {Tolerant: true, Threads: threads}} {
			ta, err := pipeline.Load(pipeline.Source{Path: a})
			if err != nil {
				t.Fatal(err)
			}
			tb, err := pipeline.Load(pipeline.Source{Path: b})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(b, 128); err != nil {
				t.Fatal(err)
			}
			_, err = Tensors(Tensor{Header: ta.Header, Data: ta.Data}, Tensor{Header: tb.Header, Data: tb.Data}, o)
			if err == nil || !strings.Contains(err.Error(), "was the file truncated while in use?") {
				t.Errorf("-j %d %v: %v", threads, o.Tolerant, err)
			}
			ta.Close()
			tb.Close()
			h := format.Header{DType: dtype(t, "float32"), Shape: shape}
			if err := os.WriteFile(b, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Files names both inputs in a report, and refuses two standard inputs.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.json")
	if err := os.WriteFile(a, []byte("[1, 2]"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Files(Job{A: pipeline.Source{Path: a}, B: pipeline.Source{Path: "-", Stdin: strings.NewReader("[1, 3]")}, Options: exact()})
	if err != nil {
		t.Fatal(err)
	}
	if r.A.Path != a || r.B.Path != "-" || r.A.Format != "json" || r.Different != 1 || r.A.DType != "int64" {
		t.Errorf("%+v", r)
	}
	if _, err := Files(Job{A: pipeline.Source{Path: "-"}, B: pipeline.Source{Path: "-"}, Options: exact()}); err == nil {
		t.Error("two standard inputs accepted")
	}
	if _, err := Files(Job{A: pipeline.Source{Path: a}, B: pipeline.Source{Path: filepath.Join(dir, "none")}, Options: exact()}); err == nil || !strings.Contains(err.Error(), "none: no such file") {
		t.Errorf("missing B: %v", err)
	}
}
