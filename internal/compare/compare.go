// Package compare tells whether two tensors hold the same values: exactly,
// bit for bit, or within numpy isclose tolerances. It reads the element
// bytes in place (a mapped file is never copied, so tensors larger than
// memory are fine), visits Fortran-order tensors in logical order through
// their strides, and splits the element range among goroutines whose
// findings are combined in index order: the report never depends on -j.
package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// Tensor is a header and its element bytes, as stored (either byte order,
// C or Fortran order).
type Tensor struct {
	format.Header
	Data []byte
}

// Options says how to compare.
type Options struct {
	// Tolerant compares numeric values with numpy's isclose rule instead
	// of bits; RTol and ATol are its tolerances.
	Tolerant   bool
	RTol, ATol float64
	// MemberRTol and MemberATol override RTol and ATol for the members
	// (of archives) with these names, as Polygraphy's --rtol NAME:R.
	MemberRTol, MemberATol map[string]float64
	// Stat is what must stay within tolerance (--check-error-stat):
	// "elemwise" (or "") every element, else that statistic of the
	// absolute error (≤ atol) or of the relative error (≤ rtol): "max",
	// "mean", "median" or "quantile" (Quantile, in [0, 1]).
	Stat     string
	Quantile float64
	// DiffImage, when set, is the path of a PNG heat map of |B−A| over
	// the two last axes (diffimage.go) written for a pair of tensors.
	DiffImage string
	// Func is the compare function (--compare-func, metrics.go): "" or
	// "simple" for the tolerances above, else one of Polygraphy's other
	// functions, whose threshold is Threshold (MemberThreshold per
	// member; ThresholdSet when the default was given, not Polygraphy's).
	Func            string
	Threshold       float64
	MemberThreshold map[string]float64
	ThresholdSet    bool
	// InfEqual (--infinities-compare-equal) makes B−A 0 where both are
	// the same infinity, in the metrics of l2, psnr and snr, as
	// Polygraphy's flag does for its absolute error (simple mode already
	// takes an infinity to equal the same one, numpy's isclose rule).
	InfEqual bool
	// MaxReport is how many differences are listed (the first by index).
	MaxReport int
	Threads   int

	// names, when set, collects the names of a directory's pairs, whose
	// per-member tolerances are checked once, against every pair, rather
	// than pair by pair.
	names *nameSet
	// stem is the name of a file holding one unnamed tensor (a plain
	// .npy): its path in the directory without the extension, so that
	// --atol logits:A applies to a directory's logits.npy.
	stem string
	// paths, when set, is the file each member of a directory compared
	// with a container came from, for the reports.
	paths map[*pipeline.Tensor]string
}

// DefaultMaxReport is how many differences a report lists unless told.
const DefaultMaxReport = 10

// Mismatch values: why no element was compared.
const (
	MismatchShape = "shape"
	MismatchDType = "dtype"
)

// Input describes one side of a comparison.
type Input struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	Shape  []int  `json:"shape"`
	DType  string `json:"dtype"`
	Order  string `json:"order"` // "C" or "F"
}

// Report is the result of a comparison; the command prints it as text or,
// with --json, marshals it as it is.
type Report struct {
	A    Input  `json:"a"` // the reference
	B    Input  `json:"b"`
	Mode string `json:"mode"` // "exact" or "isclose"
	// RTol and ATol are present in isclose mode.
	RTol *float64 `json:"rtol,omitempty"`
	ATol *float64 `json:"atol,omitempty"`
	// Equal is true when every element agrees (the exit status is 0).
	Equal bool `json:"equal"`
	// Mismatch is "shape" or "dtype" when the tensors could not be compared
	// element by element; Elements and Different are then 0.
	Mismatch  string `json:"mismatch,omitempty"`
	Elements  int    `json:"elements"`
	Different int    `json:"different"`
	// The largest |a - b| and |a - b| / |a| over the elements where both
	// values are finite (and, for the relative one, a is not zero), with
	// the first index where each is reached. The values are null for
	// non-numeric dtypes and mismatches, the indices null when the
	// maximum is 0.
	MaxAbsDiff      *Float `json:"max_abs_diff"`
	MaxAbsDiffIndex []int  `json:"max_abs_diff_index"`
	MaxRelDiff      *Float `json:"max_rel_diff"`
	MaxRelDiffIndex []int  `json:"max_rel_diff_index"`
	// The mean of |a - b| over the same elements (numpy's mean of those
	// values) in tolerant modes, its median with --check-error-stat
	// median or quantile, and its quantile Quantile with quantile (null
	// otherwise); DifferentShare is Different / Elements. CheckErrorStat
	// is the statistic that decided Equal ("elemwise": every element).
	MeanAbsDiff     *Float   `json:"mean_abs_diff"`
	MedianAbsDiff   *Float   `json:"median_abs_diff"`
	QuantileAbsDiff *Float   `json:"quantile_abs_diff,omitempty"`
	Quantile        *float64 `json:"quantile,omitempty"`
	DifferentShare  float64  `json:"different_share"`
	CheckErrorStat  string   `json:"check_error_stat"`
	// DiffImage is the picture written (--diff-image), and DiffImageMax
	// the |B−A| its white stands for.
	DiffImage    string `json:"diff_image,omitempty"`
	DiffImageMax *Float `json:"diff_image_max,omitempty"`
	// CompareFunc, Metric and Threshold are present with a compare
	// function other than simple: its name, its metric (the index
	// tolerance the pair needs, for indices) and the threshold it was
	// held to (metrics.go).
	CompareFunc string   `json:"compare_func,omitempty"`
	Metric      *Float   `json:"metric,omitempty"`
	Threshold   *float64 `json:"threshold,omitempty"`
	// Required is present when the pair failed and tolerances exist that
	// would have passed it (Polygraphy's "Minimum Required Tolerance").
	Required *Required `json:"required_tolerances,omitempty"`
	// First lists the first MaxReport differing elements, by index.
	First []Difference `json:"first"`
	// elapsed is how long a member pair of archives took (--junit).
	elapsed time.Duration
}

// Difference is one differing element.
type Difference struct {
	Index []int           `json:"index"`
	A     json.RawMessage `json:"a"` // the value as JSON output prints it
	B     json.RawMessage `json:"b"`
	// The bits, when the two values print the same (NaNs with different
	// payloads, or bools stored as different non-zero bytes).
	ABits string `json:"a_bits,omitempty"`
	BBits string `json:"b_bits,omitempty"`
}

// Float is a float64 that marshals NaN and ±Inf the way depthspace's JSON
// does ("NaN", "Infinity", "-Infinity"); encoding/json refuses them.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	switch {
	case math.IsNaN(v):
		return []byte(`"NaN"`), nil
	case math.IsInf(v, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(v, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(v)
}

// sameType: the same element type, whatever byte order stores it.
func sameType(a, b format.DType) bool {
	return a.Kind == b.Kind && a.Size == b.Size && a.BFloat16 == b.BFloat16
}

func check(o *Options) error {
	if err := checkFunc(o); err != nil {
		return err
	}
	if o.Tolerant {
		if math.IsNaN(o.RTol) || o.RTol < 0 {
			return fmt.Errorf("--rtol %v must be a number >= 0", o.RTol)
		}
		if math.IsNaN(o.ATol) || o.ATol < 0 {
			return fmt.Errorf("--atol %v must be a number >= 0", o.ATol)
		}
		for flag, m := range map[string]map[string]float64{"--rtol": o.MemberRTol, "--atol": o.MemberATol} {
			for name, v := range m {
				if math.IsNaN(v) || v < 0 {
					return fmt.Errorf("%s %s:%v must be a number >= 0", flag, name, v)
				}
			}
		}
	}
	switch o.Stat {
	case "", "elemwise", "max", "mean", "median", "quantile":
	default:
		return fmt.Errorf("--check-error-stat %q is not a statistic (want elemwise, max, mean, median or quantile)", o.Stat)
	}
	if !(o.Quantile >= 0 && o.Quantile <= 1) {
		return fmt.Errorf("--error-quantile %v must be between 0 and 1", o.Quantile)
	}
	if o.MaxReport < 0 {
		return fmt.Errorf("--max-report %d must be at least 0", o.MaxReport)
	}
	if o.Threads < 1 {
		return fmt.Errorf("--threads %d must be at least 1", o.Threads)
	}
	return nil
}

func describe(t Tensor) Input {
	in := Input{Shape: append([]int{}, t.Shape...), DType: t.DType.Name(), Order: "C"}
	if t.Fortran {
		in.Order = "F"
	}
	return in
}

// Tensors compares a (the reference) with b.
//
// Exact mode (the default): the shapes and element types must be the
// same, and every element must have the same bits, byte order aside: -0.0
// differs from 0.0, and NaNs are equal only with the same payload.
//
// Tolerant mode: numeric elements of any types are compared as numpy's
// isclose(b, a, rtol, atol, equal_nan=True) does, in float64 (complex128
// when either side is complex): |b - a| <= atol + rtol*|a| for finite
// pairs, equality for infinities, and NaN equal to NaN. Non-numeric
// elements (S, U, V) are still compared exactly.
func Tensors(a, b Tensor, o Options) (*Report, error) {
	if err := check(&o); err != nil {
		return nil, err
	}
	fn := o.Func
	if fn == FuncSimple {
		fn = ""
	}
	if fn != "" {
		// The metrics compare values, of any numeric types; the scan
		// lists the elements whose values differ.
		o.Tolerant, o.RTol, o.ATol = true, 0, 0
	}
	rep := &Report{A: describe(a), B: describe(b), Mode: "exact", First: []Difference{}}
	if fn != "" {
		rep.Mode, rep.CompareFunc = fn, fn
		thr := o.Threshold
		rep.Threshold = &thr
	} else if o.Tolerant {
		rep.Mode = "isclose"
		rtol, atol := o.RTol, o.ATol
		rep.RTol, rep.ATol = &rtol, &atol
	}
	ra, rb := newReader(a.DType), newReader(b.DType)
	switch {
	case format.ShapeString(a.Shape) != format.ShapeString(b.Shape) || len(a.Shape) != len(b.Shape):
		rep.Mismatch = MismatchShape
		return rep, nil
	case o.Tolerant && ra.numeric() && rb.numeric():
	case !sameType(a.DType, b.DType):
		rep.Mismatch = MismatchDType
		return rep, nil
	}
	n := a.Elements()
	if n < 0 || int64(len(a.Data)) != a.DataBytes() || int64(len(b.Data)) != b.DataBytes() {
		return nil, errors.New("internal error: data does not match the header")
	}
	s := newScanner(a, b, n)
	s.tolerant, s.rtol, s.atol, s.maxReport = o.Tolerant, o.RTol, o.ATol, o.MaxReport
	s.numeric = ra.numeric() && rb.numeric()
	switch {
	case s.numeric && s.contig && !s.tiled && n > 0 && fn == "": // the statistics' sums
		s.parts = make([]meanPart, (n+statsChunk-1)/statsChunk)
		s.equal = make([]uint64, (n+64*batch-1)/(64*batch))
	case fn != "" && fn != FuncIndices && s.contig && !s.tiled && n > 0 && ra.class != complexClass && rb.class != complexClass:
		s.msums = make([]metricSums, (n+statsChunk-1)/statsChunk)
		for i := range s.msums {
			s.msums[i] = newMetricSums()
		}
		s.infEqual = o.InfEqual
	}
	t, err := s.run(o.Threads)
	if err != nil {
		return nil, err
	}
	rep.Elements, rep.Different, rep.Equal = n, t.different, t.different == 0
	if n > 0 {
		rep.DifferentShare = float64(t.different) / float64(n)
	}
	rep.CheckErrorStat = "elemwise"
	if o.Stat != "" {
		rep.CheckErrorStat = o.Stat
	}
	switch {
	case fn != "" && !s.numeric:
		return nil, fmt.Errorf("--compare-func %s compares numbers, not %s", fn, a.DType.Name())
	case fn != "":
		if err := s.decideByMetric(fn, o, rep); err != nil {
			return nil, err
		}
	case s.numeric:
		st, err := s.statistics(t, o, rep)
		if err != nil {
			return nil, err
		}
		if !rep.Equal {
			if err := s.required(t, o, rep, st); err != nil {
				return nil, err
			}
		}
	}
	if s.numeric {
		abs, rel := Float(0), Float(0)
		if t.maxAbsAt >= 0 {
			abs = Float(t.maxAbs)
		}
		if t.maxRelAt >= 0 {
			rel = Float(t.maxRel)
		}
		rep.MaxAbsDiff, rep.MaxRelDiff = &abs, &rel
		if abs > 0 {
			rep.MaxAbsDiffIndex = unravel(t.maxAbsAt, a.Shape)
		}
		if rel > 0 {
			rep.MaxRelDiffIndex = unravel(t.maxRelAt, a.Shape)
		}
	}
	if err := s.describe(t.first.sorted(), rep); err != nil {
		return nil, err
	}
	return rep, nil
}

// describe fills in the listed differences: index and both values.
func (s *scanner) describe(first []int, rep *Report) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = faultError(r)
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	var ea, eb [][]byte
	for _, i := range first {
		idx := unravel(i, s.shape)
		ea = append(ea, s.a.elem(s.a.offset(idx)))
		eb = append(eb, s.b.elem(s.b.offset(idx)))
		rep.First = append(rep.First, Difference{Index: idx})
	}
	ta, err := texts(s.a.r.dt, ea)
	if err != nil {
		return err
	}
	tb, err := texts(s.b.r.dt, eb)
	if err != nil {
		return err
	}
	for k := range rep.First {
		d := &rep.First[k]
		d.A, d.B = json.RawMessage(ta[k]), json.RawMessage(tb[k])
		if ta[k] == tb[k] {
			d.ABits, d.BBits = bitsText(s.a.r, ea[k]), bitsText(s.b.r, eb[k])
		}
	}
	return nil
}

// Job is a comparison of two files.
type Job struct {
	A, B pipeline.Source // A is the reference
	Options
}

// Files loads both inputs (mapped, so only the pages visited are read)
// and compares them.
func Files(j Job) (*Report, error) {
	if j.A.Path == "-" && j.B.Path == "-" {
		return nil, errors.New("only one of the inputs can be standard input (-)")
	}
	if err := check(&j.Options); err != nil {
		return nil, err
	}
	ta, err := pipeline.Load(j.A)
	if err != nil {
		return nil, err
	}
	defer ta.Close()
	tb, err := pipeline.Load(j.B)
	if err != nil {
		return nil, err
	}
	defer tb.Close()
	return tensors(j, ta, tb)
}

// Any compares two inputs that may be archives (npz) of several tensors:
// then member by member (an *ArchiveReport), otherwise as Files does (a
// *Report). The result says whether they are equal.
func Any(j Job) (result interface {
	WriteText(io.Writer) error
}, equal bool, err error) {
	if j.A.Path == "-" && j.B.Path == "-" {
		return nil, false, errors.New("only one of the inputs can be standard input (-)")
	}
	if err := check(&j.Options); err != nil {
		return nil, false, err
	}
	switch da, db := isDir(j.A.Path), isDir(j.B.Path); {
	case (da || db) && j.DiffImage != "":
		return nil, false, errors.New("--diff-image draws one pair of tensors, not directories")
	case da && db:
		rep, err := Dirs(j)
		if err != nil {
			return nil, false, err
		}
		return rep, rep.Equal, nil
	case da || db:
		rep, err := DirContainer(j)
		if err != nil {
			return nil, false, err
		}
		return rep, rep.Equal, nil
	}
	return anyFiles(j)
}

// loadPicked loads every tensor of src, or the members --member picks.
func loadPicked(src pipeline.Source) ([]*pipeline.Tensor, error) {
	ts, err := pipeline.LoadAll(src)
	if err != nil {
		return nil, err
	}
	return pipeline.Picked(src.Path, ts, src.Members)
}

// anyFiles compares two files, member by member if they are containers.
func anyFiles(j Job) (result interface {
	WriteText(io.Writer) error
}, equal bool, err error) {
	// Deflated npz members are inflated a pair at a time (Bring), not
	// all at load: memory stays bounded whatever the archives' size.
	j.A.Deferred, j.B.Deferred = true, true
	as, err := loadPicked(j.A)
	if err != nil {
		return nil, false, err
	}
	defer closeAll(as)
	bs, err := loadPicked(j.B)
	if err != nil {
		return nil, false, err
	}
	defer closeAll(bs)
	if len(as) == 0 && len(bs) == 0 {
		return nil, false, fmt.Errorf("%s and %s hold no tensors: nothing to compare", Name(displayPath(j.A.Path)), Name(displayPath(j.B.Path)))
	}
	if j.names != nil {
		j.names.add(as, bs)
	} else if err := checkMemberNames(j.Options, as, bs); err != nil {
		return nil, false, err
	}
	if j.DiffImage != "" && (len(as) > 1 || len(bs) > 1) {
		return nil, false, fmt.Errorf("--diff-image draws one pair of tensors; %s and %s hold several (pick one with convert --member)", j.A.Path, j.B.Path)
	}
	if len(as) == 1 && len(bs) == 1 {
		if as[0].Name != "" {
			j.Options = j.Options.forMember(as[0].Name)
		} else if j.stem != "" {
			j.Options = j.Options.forMember(j.stem)
		}
		rep, err := tensors(j, as[0], bs[0])
		if err != nil {
			return nil, false, err
		}
		return rep, rep.Equal, nil
	}
	rep, err := Archives(j, as, bs)
	if err != nil {
		return nil, false, err
	}
	return rep, rep.Equal, nil
}

func closeAll(ts []*pipeline.Tensor) {
	for _, t := range ts {
		t.Close()
	}
}

// bring makes the data of a pair of members readable (Release lets them
// go).
func bring(ta, tb *pipeline.Tensor) error {
	if err := ta.Bring(); err != nil {
		return err
	}
	if err := tb.Bring(); err != nil {
		ta.Release()
		return err
	}
	return nil
}

func tensors(j Job, ta, tb *pipeline.Tensor) (*Report, error) {
	if err := bring(ta, tb); err != nil {
		return nil, err
	}
	defer ta.Release()
	defer tb.Release()
	a, b := Tensor{Header: ta.Header, Data: ta.Data}, Tensor{Header: tb.Header, Data: tb.Data}
	rep, err := Tensors(a, b, j.Options)
	if err != nil {
		return nil, &pipeline.PathError{Path: j.A.Path + " and " + j.B.Path, Err: err}
	}
	if j.DiffImage != "" {
		if err := writeDiffImage(j, a, b, rep); err != nil {
			return nil, err
		}
	}
	rep.A.Path, rep.A.Format = j.A.Path, string(ta.Kind)
	rep.B.Path, rep.B.Format = j.B.Path, string(tb.Kind)
	return rep, nil
}

// memberFlag is one flag's per-member values (--atol NAME:A, …).
type memberFlag struct {
	flag   string
	values map[string]float64
}

// memberFlags are the flags whose values may be given per member.
func (o Options) memberFlags() []memberFlag {
	flags := []memberFlag{{"--rtol", o.MemberRTol}, {"--atol", o.MemberATol}}
	if f := ThresholdFlag(o.Func); f != "" {
		flags = append(flags, memberFlag{f, o.MemberThreshold})
	}
	return flags
}
