package compare

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/testpeer"
	"github.com/x448/float16"
)

// Edge values per dtype, as bit patterns or values.
var (
	edgeF64 = []float64{
		0, math.Copysign(0, -1), 5e-324, -5e-324, 1e-323, 1e-310,
		2.225073858507201e-308, 2.2250738585072014e-308, // largest denormal, smallest normal
		1, -1, 1.0000000000000002, 0.9999999999999999, 1e-8, 2e-8, 1e-5, 1.00001, 1.0000100000000001,
		3, -3, 1e300, 1.7976931348623157e308, -1.7976931348623157e308,
		math.Inf(1), math.Inf(-1),
		math.Float64frombits(0x7ff8000000000000), math.Float64frombits(0x7ff8000000000001), // NaN, NaN with a payload
		math.Float64frombits(0xfff8000000000000), // -NaN
	}
	edgeF32 = []float32{
		0, float32(math.Copysign(0, -1)), math.Float32frombits(1), -math.Float32frombits(1), // ±smallest denormal
		math.Float32frombits(0x007fffff), math.Float32frombits(0x00800000), // largest denormal, smallest normal
		1, -1, math.Nextafter32(1, 2), math.Nextafter32(1, 0), 1e-8, 1e-5, 1.00001, 3,
		math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0x7fc00001), math.Float32frombits(0xffc00000),
	}
	edgeF16 = []uint16{0x0000, 0x8000, 0x0001, 0x8001, 0x03ff, 0x0400, 0x3c00, 0xbc00, 0x3c01, 0x3bff, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x7e01, 0x1400}
	edgeI64 = []int64{math.MinInt64, math.MinInt64 + 1, -1<<53 - 1, -1 << 53, -1, 0, 1, 1 << 53, 1<<53 + 1, 1<<53 + 2, math.MaxInt64 - 1, math.MaxInt64}
	edgeU64 = []uint64{0, 1, 1<<53 + 1, 1 << 63, 1<<64 - 2, 1<<64 - 1}
	edgeI8  = []int8{-128, -127, -1, 0, 1, 126, 127}
	edgeU8  = []uint8{0, 1, 127, 128, 254, 255}
	parts   = []float64{0, math.Copysign(0, -1), 1, 3, 4, 1e-8, math.Inf(1), math.Inf(-1), math.NaN()}
)

// tolerances: numpy's defaults, zero, only one of the two, tiny and
// denormal atol, large rtol (2·|y| overflows to inf), infinite atol.
var tolerances = [][2]float64{
	{0, 0}, {1e-5, 1e-8}, {1e-3, 0}, {0, 1e-8}, {0, 5e-324}, {0.5, 0}, {1, 1}, {1e-9, 1e-300}, {2, 0}, {0, math.Inf(1)},
}

// column is one dtype's edge values as element bytes (little-endian).
type column struct {
	dtype string
	elems [][]byte
}

func le(size int, v uint64) []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint64(b, v)
	return b[:size]
}

func columns() map[string]column {
	c := map[string]column{}
	add := func(name, dt string, e [][]byte) { c[name] = column{dt, e} }
	var e [][]byte
	for _, v := range edgeF64 {
		e = append(e, le(8, math.Float64bits(v)))
	}
	add("f8", "<f8", e)
	e = nil
	for _, v := range edgeF32 {
		e = append(e, le(4, uint64(math.Float32bits(v))))
	}
	add("f4", "<f4", e)
	e = nil
	for _, v := range edgeF16 {
		e = append(e, le(2, uint64(v)))
	}
	add("f2", "<f2", e)
	e = nil
	for _, v := range edgeI64 {
		e = append(e, le(8, uint64(v)))
	}
	add("i8", "<i8", e)
	e = nil
	for _, v := range edgeU64 {
		e = append(e, le(8, v))
	}
	add("u8", "<u8", e)
	e = nil
	for _, v := range edgeI8 {
		e = append(e, []byte{byte(v)})
	}
	add("i1", "|i1", e)
	e = nil
	for _, v := range edgeU8 {
		e = append(e, []byte{v})
	}
	add("u1", "|u1", e)
	add("b1", "|b1", [][]byte{{0}, {1}})
	e = nil
	var e64 [][]byte
	for _, re := range parts {
		for _, im := range parts {
			e = append(e, append(le(8, math.Float64bits(re)), le(8, math.Float64bits(im))...))
			e64 = append(e64, append(le(4, uint64(math.Float32bits(float32(re)))), le(4, uint64(math.Float32bits(float32(im))))...))
		}
	}
	add("c16", "<c16", e)
	add("c8", "<c8", e64)
	return c
}

// peerCase is one line of cases.json (see testdata/interop/isclose_peer.py).
type peerCase struct {
	A    string `json:"a"`
	B    string `json:"b"`
	Out  string `json:"out"`
	Mode string `json:"mode"`
	RTol string `json:"rtol"`
	ATol string `json:"atol"`
	// for the Go side
	tolerant   bool
	rtol, atol float64
}

func writeNpy(t *testing.T, path, descr string, elems [][]byte) Tensor {
	t.Helper()
	d, err := format.ParseDescr(descr)
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, e := range elems {
		data = append(data, e...)
	}
	h := format.Header{DType: d, Shape: []int{len(elems)}}
	if err := os.WriteFile(path, append(npy.EncodeNpy(h), data...), 0o644); err != nil {
		t.Fatal(err)
	}
	return Tensor{Header: h, Data: data}
}

func readBools(t *testing.T, path string) []bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := npy.ParseNpy(b)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]bool, 0, n.Elements())
	for _, c := range b[n.DataOffset:] {
		out = append(out, c != 0)
	}
	return out
}

// TestIsCloseAgainstNumpy: every pair of edge values (inf, -inf, NaNs
// with and without payloads, denormals, -0.0, int64/uint64 extremes,
// complex parts), under every tolerance, gets numpy's verdict:
//
//   - float64, integers, bool, complex128 and int64-vs-float64: exactly
//     numpy.isclose(b, a, rtol, atol, equal_nan=True) on the arrays as
//     they are (numpy computes in float64 for them too);
//   - float16, float32, complex64: numpy.isclose on the values converted
//     to float64, which is the rule depthspace documents (numpy itself
//     computes in the narrower type; how often that differs is logged);
//   - exact mode: numpy's element bytes equal.
func TestIsCloseAgainstNumpy(t *testing.T) {
	py := testpeer.Python(t, "numpy")
	dir := t.TempDir()
	cols := columns()
	tensors := map[string]Tensor{}
	var cases []peerCase
	pairs := func(name string, ca, cb column) {
		var ea, eb [][]byte
		for _, x := range ca.elems {
			for _, y := range cb.elems {
				ea, eb = append(ea, x), append(eb, y)
			}
		}
		tensors[name+".a"] = writeNpy(t, filepath.Join(dir, name+".a.npy"), ca.dtype, ea)
		tensors[name+".b"] = writeNpy(t, filepath.Join(dir, name+".b.npy"), cb.dtype, eb)
	}
	addCases := func(name, mode string) {
		for i, tol := range tolerances {
			cases = append(cases, peerCase{
				A: name + ".a.npy", B: name + ".b.npy", Out: fmt.Sprintf("%s.%s.%d.npy", name, mode, i), Mode: mode,
				RTol: strconv.FormatFloat(tol[0], 'g', -1, 64), ATol: strconv.FormatFloat(tol[1], 'g', -1, 64),
				tolerant: true, rtol: tol[0], atol: tol[1],
			})
		}
	}
	for name, c := range cols {
		pairs(name, c, c)
		cases = append(cases, peerCase{A: name + ".a.npy", B: name + ".b.npy", Out: name + ".bits.npy", Mode: "bits"})
		switch name {
		case "f2", "f4", "c8":
			addCases(name, "upcast")
			addCases(name, "isclose") // logged only
		default:
			addCases(name, "isclose")
		}
	}
	pairs("i8-f8", cols["i8"], cols["f8"])
	addCases("i8-f8", "isclose")
	pairs("f8-i8", cols["f8"], cols["i8"])
	addCases("f8-i8", "isclose")

	js, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cases.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(py, filepath.Join("..", "..", "testdata", "interop", "isclose_peer.py"), dir).CombinedOutput()
	if err != nil {
		t.Fatalf("numpy: %v\n%s", err, out)
	}
	t.Logf("%s", out)

	checked := 0
	for _, c := range cases {
		a, b := tensors[c.A[:len(c.A)-len(".npy")]], tensors[c.B[:len(c.B)-len(".npy")]]
		n := a.Elements()
		o := Options{Tolerant: c.tolerant, RTol: c.rtol, ATol: c.atol, MaxReport: n, Threads: 2}
		r, err := Tensors(a, b, o)
		if err != nil {
			t.Fatal(err)
		}
		ours := make([]bool, n)
		for i := range ours {
			ours[i] = true
		}
		for _, d := range r.First {
			ours[d.Index[0]] = false
		}
		numpy := readBools(t, filepath.Join(dir, c.Out))
		native := c.Mode == "isclose" && (a.DType.Kind == 'f' && a.DType.Size < 8 || a.DType.Kind == 'c' && a.DType.Size == 8)
		bad, skipped := 0, 0
		for i := range ours {
			if c.Mode != "bits" && numpyVersionsDisagree(a, b, i, c.rtol, c.atol) {
				skipped++
				continue
			}
			if ours[i] == numpy[i] {
				continue
			}
			bad++
			if !native && bad <= 5 {
				t.Errorf("%s %s rtol %s atol %s: a=%s b=%s: depthspace says equal=%v, numpy %v",
					c.A, c.Mode, c.RTol, c.ATol, text(a.DType, a.Data[i*a.DType.Size:(i+1)*a.DType.Size]),
					text(b.DType, b.Data[i*b.DType.Size:(i+1)*b.DType.Size]), ours[i], numpy[i])
			}
		}
		if native && bad > 0 {
			t.Logf("%s rtol %s atol %s: numpy's own %s arithmetic differs from the float64 rule on %d of %d pairs",
				c.A, c.RTol, c.ATol, a.DType.Name(), bad, n)
		}
		checked += n - skipped
	}
	t.Logf("%d verdicts checked against numpy", checked)
}

// numpyVersionsDisagree marks the pairs on which numpy 1.x and 2.x give
// different answers, which are left out of the comparison with whichever
// numpy is installed (depthspace's answer for them is tested in
// compare_test.go):
//
//   - complex pairs where both values have an infinite or NaN part: numpy
//     1.x multiplies the arrays by ones_like(...) first, and (0+inf j)·1
//     is NaN+inf j, so every such pair counts as "both NaN", equal; numpy
//     2 (and depthspace) compare them as they are;
//   - an infinity against a finite reference when atol + rtol·|a| is
//     itself infinite: numpy 2 accepts it (inf <= inf), numpy 1.x and
//     depthspace require an infinity to equal the same infinity.
func numpyVersionsDisagree(a, b Tensor, i int, rtol, atol float64) bool {
	ra, rb := newReader(a.DType), newReader(b.DType)
	ea, eb := a.Data[i*a.DType.Size:(i+1)*a.DType.Size], b.Data[i*b.DType.Size:(i+1)*b.DType.Size]
	ar, ai := ra.complex(ea)
	br, bi := rb.complex(eb)
	aFinite, bFinite := finite(ar) && finite(ai), finite(br) && finite(bi)
	if (ra.class == complexClass || rb.class == complexClass) && !aFinite && !bFinite {
		return true
	}
	thr := atol + rtol*math.Hypot(ar, ai)
	return aFinite && !bFinite && math.IsInf(thr, 1) && !math.IsNaN(br) && !math.IsNaN(bi)
}

// The decoders behind the rules: float16, bfloat16 and the float16 table.
func TestDecode(t *testing.T) {
	half := newReader(format.DType{Kind: 'f', Size: 2, Order: '<'})
	bf := newReader(format.DType{Kind: 'V', Size: 2, Order: '|', BFloat16: true})
	if half.class != real || bf.class != real {
		t.Fatal("float16 and bfloat16 must be real")
	}
	for _, c := range []struct {
		bits     uint16
		half, bf float64
	}{
		{0x3c00, 1, 0.0078125}, {0x3f80, 1.875, 1}, {0xc000, -2, -2}, {0x0001, 0x1p-24, 9.183549615799121e-41},
	} {
		b := le(2, uint64(c.bits))
		if got := half.float(b); got != c.half {
			t.Errorf("float16 %#04x = %v, want %v", c.bits, got, c.half)
		}
		if got := bf.float(b); got != c.bf {
			t.Errorf("bfloat16 %#04x = %v, want %v", c.bits, got, c.bf)
		}
	}
	for i := 0; i < 1<<16; i++ {
		want := float64(float16.Frombits(uint16(i)).Float32())
		if got := halfTable()[i]; got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("halfTable[%#04x] = %v, want %v", i, got, want)
		}
	}
}
