package compare

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
)

// WriteText prints the report for people: one line with the verdict, then
// for differences the maxima and the first differing elements.
//
//	a.npy and b.npy differ: 2 of 48 elements, shape 1,8,2,3, float32, bit for bit
//	max abs diff 0.5 at [0, 1, 1, 2]
//	max rel diff 0.25 at [0, 1, 1, 2]
//	first 2 differences (index: a vs b):
//	  [0, 0, 0, 1]: 1 vs 1.5
//	  [0, 1, 1, 2]: 2 vs 2.5
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	names := Name(r.A.Path) + " and " + Name(r.B.Path)
	switch {
	case r.Mismatch == MismatchShape:
		fmt.Fprintf(&b, "%s differ in shape: %s and %s", names, shapeText(r.A.Shape), shapeText(r.B.Shape))
		if r.A.DType != r.B.DType {
			fmt.Fprintf(&b, " (and dtype: %s and %s)", r.A.DType, r.B.DType)
		}
		b.WriteString("\n")
	case r.Mismatch == MismatchDType:
		fmt.Fprintf(&b, "%s differ in dtype: %s and %s%s\n", names, r.A.DType, r.B.DType, r.dtypeHint())
	case r.CompareFunc != "":
		r.writeFunc(&b, names)
	default:
		verdict := "are equal"
		if r.Mode == "isclose" {
			verdict = "are close"
		}
		count := fmt.Sprintf("%d elements", r.Elements)
		if !r.Equal {
			verdict, count = "differ", fmt.Sprintf("%d of %d elements", r.Different, r.Elements)
		}
		dtype := r.A.DType
		if r.B.DType != r.A.DType {
			dtype += " and " + r.B.DType
		}
		how := "bit for bit"
		if r.Mode == "isclose" {
			how = fmt.Sprintf("rtol %s, atol %s", numText(*r.RTol), numText(*r.ATol))
		}
		fmt.Fprintf(&b, "%s %s: %s, shape %s, %s, %s\n", names, verdict, count, shapeText(r.A.Shape), dtype, how)
		if r.MaxAbsDiff != nil && (!r.Equal || r.Mode == "isclose") {
			writeMax(&b, "max abs diff", *r.MaxAbsDiff, r.MaxAbsDiffIndex)
			writeMax(&b, "max rel diff", *r.MaxRelDiff, r.MaxRelDiffIndex)
			if r.MeanAbsDiff != nil {
				fmt.Fprintf(&b, "mean abs diff %s", numText(float64(*r.MeanAbsDiff)))
				if r.MedianAbsDiff != nil {
					fmt.Fprintf(&b, ", median abs diff %s", numText(float64(*r.MedianAbsDiff)))
				}
				if r.QuantileAbsDiff != nil {
					fmt.Fprintf(&b, ", %s-quantile abs diff %s", numText(*r.Quantile), numText(float64(*r.QuantileAbsDiff)))
				}
				fmt.Fprintf(&b, "; %d mismatching (%s of the elements)\n", r.Different, numText(r.DifferentShare))
			}
			if r.CheckErrorStat != "" && r.CheckErrorStat != "elemwise" {
				fmt.Fprintf(&b, "decided by the %s of the errors (--check-error-stat), not element by element\n", r.CheckErrorStat)
			}
		}
		r.writeRequired(&b)
		if r.DiffImage != "" {
			fmt.Fprintf(&b, "difference picture %s: black 0, white |b - a| = %s, cyan where NaN or Inf do not match\n", r.DiffImage, numText(float64(*r.DiffImageMax)))
		}
		r.writeFirst(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeFunc is the report of a compare function other than simple:
//
//	a.npy and b.npy differ by l2: l2 norm 0.5 > --l2-tolerance 1e-05; shape 4, float32; 1 of 4 elements differ
//	max abs diff 0.5 at [3]
//	max rel diff 0.125 at [3]
//	required tolerance: --l2-tolerance 0.5
//	1 differences (index: a vs b):
//	  [3]: 4 vs 4.5
//
// The metric is printed to five significant digits, as Polygraphy
// prints it ("%.5g"); --json has it whole, and the required tolerance is
// printed whole, so that it passes.
func (r *Report) writeFunc(b *strings.Builder, names string) {
	fi := funcs[r.CompareFunc]
	verdict, cmp := "agree", "<="
	if !r.Equal {
		verdict, cmp = "differ", ">"
	}
	if fi.atLeast {
		cmp = map[string]string{"<=": ">=", ">": "<"}[cmp]
	}
	dtype := r.A.DType
	if r.B.DType != r.A.DType {
		dtype += " and " + r.B.DType
	}
	fmt.Fprintf(b, "%s %s by %s: %s %s %s %s %s; shape %s, %s; %d of %d elements differ\n",
		names, verdict, r.CompareFunc, fi.label, metricText(float64(*r.Metric)), cmp, fi.flag, numText(*r.Threshold),
		shapeText(r.A.Shape), dtype, r.Different, r.Elements)
	if r.MaxAbsDiff != nil && r.Different > 0 {
		writeMax(b, "max abs diff", *r.MaxAbsDiff, r.MaxAbsDiffIndex)
		writeMax(b, "max rel diff", *r.MaxRelDiff, r.MaxRelDiffIndex)
	}
	r.writeRequired(b)
	r.writeFirst(b)
}

// metricText prints a metric as Polygraphy does ("%.5g").
func metricText(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return numText(f)
	}
	return strconv.FormatFloat(f, 'g', 5, 64)
}

// writeRequired prints the tolerances a failing pair needed, when there
// are any (Required).
func (r *Report) writeRequired(b *strings.Builder) {
	q := r.Required
	switch {
	case q == nil:
	case q.Threshold != nil:
		fmt.Fprintf(b, "required tolerance: %s %s\n", funcs[r.CompareFunc].flag, numText(float64(*q.Threshold)))
	case q.NonFinite > 0:
		fmt.Fprintf(b, "required tolerances: none (%d NaN or infinite values differ: no tolerance passes them)\n", q.NonFinite)
	default:
		fmt.Fprintf(b, "required tolerances (%s error, either alone): [atol=%s]", q.Stat, numText(float64(*q.ATol)))
		switch {
		case q.RTol != nil:
			fmt.Fprintf(b, " OR [rtol=%s]", numText(float64(*q.RTol)))
		case q.Stat == "mean" || q.Stat == "median" || q.Stat == "quantile":
			fmt.Fprintf(b, " (the relative error's %s is given with --rtol)", q.Stat)
		}
		b.WriteString("\n")
	}
}

// writeFirst lists the first differences.
func (r *Report) writeFirst(b *strings.Builder) {
	if len(r.First) == 0 {
		return
	}
	if len(r.First) < r.Different {
		fmt.Fprintf(b, "first %d of %d differences (index: a vs b):\n", len(r.First), r.Different)
	} else {
		fmt.Fprintf(b, "%d differences (index: a vs b):\n", len(r.First))
	}
	for _, d := range r.First {
		a, bb := string(d.A), string(d.B)
		if d.ABits != "" {
			a += " (" + d.ABits + ")"
			bb += " (" + d.BBits + ")"
		}
		fmt.Fprintf(b, "  %s: %s vs %s\n", indexText(d.Index), a, bb)
	}
}

// dtypeHint says how to compare anyway, when there is a way.
func (r *Report) dtypeHint() string {
	a, errA := format.ParseDType(r.A.DType)
	b, errB := format.ParseDType(r.B.DType)
	if errA != nil || errB != nil {
		return ""
	}
	ra, rb := newReader(a), newReader(b)
	switch {
	case ra.numeric() && rb.numeric():
		return " (--atol 0 compares the values of any numeric types)"
	case a.Size == b.Size && (opaqueV(a) != opaqueV(b)):
		other := b
		if opaqueV(b) {
			other = a
		}
		return fmt.Sprintf(" (--dtype %s reads the opaque V%d as %s)", other.Name(), a.Size, other.Name())
	}
	return ""
}

// opaqueV: a V<n> with no other meaning.
func opaqueV(d format.DType) bool { return d.Kind == 'V' && !d.BFloat16 }

func writeMax(b *strings.Builder, what string, v Float, at []int) {
	fmt.Fprintf(b, "%s %s", what, numText(float64(v)))
	if at != nil {
		fmt.Fprintf(b, " at %s", indexText(at))
	}
	b.WriteString("\n")
}

func numText(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// indexText prints a multi-index as JSON does: [0, 3, 1, 2].
func indexText(idx []int) string {
	p := make([]string, len(idx))
	for i, v := range idx {
		p[i] = strconv.Itoa(v)
	}
	return "[" + strings.Join(p, ", ") + "]"
}

// shapeText prints a shape as --shape takes it (1,8,2,3); a 0-d shape is "()".
func shapeText(s []int) string {
	if len(s) == 0 {
		return "()"
	}
	return format.ShapeString(s)
}
