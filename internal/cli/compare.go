package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/compare"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/spf13/cobra"
)

// compareFlags are the flags of compare, as the user typed them.
type compareFlags struct {
	rtol, atol []string // [NAME:]value, repeatable
	stat       string
	// compareFunc is --compare-func; thresholds holds each function's
	// threshold flag ([NAME:]value, repeatable), by function.
	compareFunc string
	thresholds  map[string]*[]string
	infEqual    bool
	quantile    float64
	diffImage   string
	junit       string
	json        bool
	threads     int
	maxReport   int
	inputFlags
}

func newCompareCmd(s *streams) *cobra.Command {
	f := &compareFlags{}
	cmd := &cobra.Command{
		Use:   "compare [flags] A B | RUNRESULTS",
		Short: "Tell whether two tensors are equal, or close",
		Long: `Tell whether two tensors hold the same values. Exit status 0: they do;
1: they differ (or their shapes or dtypes do); 2: an error.

A is the reference (expected), B the tensor checked (actual).

Without tolerances the comparison is exact, bit for bit: the dtypes must be
the same (byte order aside) and so must every element's bits, so -0.0
differs from 0.0 and NaNs are equal only with the same payload.

--check-error-stat max|mean|median|quantile checks, as Polygraphy does, that
statistic of the absolute error |B - A| (<= atol) or of the relative error
|B - A| / |A| (<= rtol) instead of every element; --error-quantile Q (default
0.99) is the quantile's. Statistics are over the elements where both values
are finite (the relative error where A is not 0 too), as numpy's mean,
median and quantile (method linear) of those values; NaN or infinite pairs
must still agree.

With --rtol and/or --atol (the one not given is 0) numbers are compared by
value with numpy's isclose rule, A being the reference:
  |B - A| <= atol + rtol*|A|
evaluated in float64 (complex128 when either side is complex), NaN equal
to NaN at the same position, an infinity equal only to the same infinity.
Numeric dtypes may then differ (int64 against float32, say); integers are
converted to float64 as numpy does. --atol 0 alone compares values
exactly: -0.0 equals 0.0 and any NaN equals any NaN.

The report gives the number of differing elements, the largest absolute
and relative (|B - A| / |A|) differences over the elements where both are
finite, and the first differences by index with both values. Fortran-order
inputs are compared element by element in logical order. Inputs are
mapped, not loaded, so they may be larger than memory; -j goroutines share
the work and the report does not depend on their number.

Containers (` + containerList() + `: a shard by its tensor members) are compared
member by member, matched by name; a member only one side has makes them
different. Two directories are compared file by file, paired by relative
path, a file only one side has being a difference. A directory against a
container pairs golden/out0.npy with
the member out0. Tolerances may be given per member, as Polygraphy's:
--atol out0:1e-5 --atol 1e-3 (1e-5 for out0, 1e-3 for the rest; a plain
file logits.npy is the member logits). A name no pair has is an error; so
is a file with a tensor extension that cannot be read, and two inputs
with nothing to compare.

--compare-func l2|cosine-similarity|psnr|snr|indices compares as
Polygraphy's functions do, against --l2-tolerance, --cosine-similarity-
threshold, --psnr-tolerance, --snr-tolerance or --index-tolerance
([NAME:]V, Polygraphy's defaults). A pair that fails says which
tolerances would have passed it ("required tolerances").

With one argument, a Polygraphy RunResults file of several runners
(polygraphy run --onnxrt --trt --save-outputs out.json), every runner is
compared against the first, iteration by iteration, output by output, as
Polygraphy's own comparison does, with the same tolerances and reports.

--junit FILE also writes the result as JUnit XML for CI test reports
(Jenkins, GitLab, GitHub): one testsuite, one testcase per member pair,
file pair or single pair, named by member name or relative path; a pair
that differs is a <failure> with its text report (shape, dtype, max, mean
and median abs error, max rel error, mismatching count, worst index,
tolerances); a member or file on one side only, or a comparison that fails
(exit 2), is an <error>. The file is put in place when complete; the exit
status and standard output are unchanged. --junit - is refused: standard
output carries the text or --json report.`,
		Example: `  # Exit 0 if identical, 1 if not
  depthspace compare expected.npy actual.npy

  # Within tolerances, as JSON for a script
  depthspace compare --rtol 1e-3 --atol 1e-6 --json ref.npy got.npy

  # Polygraphy results: against a golden npz, or its runners against each other
  depthspace compare golden.npz polygraphy_outputs.json
  depthspace compare --atol 1e-3 polygraphy_outputs.json

  # Two trees of outputs, file by file
  depthspace compare golden/ run/

  # Model outputs in CI: the text report in the log, a JUnit report for the
  # test results page (one testcase per member)
  depthspace compare --atol 1e-4 --junit compare-report.xml golden.npz run.npz

  # An fp16 build: the 99th percentile of the absolute error within 1e-3
  depthspace compare --atol 1e-3 --check-error-stat quantile ref.npy fp16.npy

  # Model outputs: a tighter tolerance for one of them
  depthspace compare --atol logits:1e-5 --atol 1e-3 golden.safetensors run.safetensors

  # Compare values across dtypes (float64 reference, float32 result)
  depthspace compare --atol 0 ref_f64.npy got_f32.npy

  # Raw data needs a description (it applies to both inputs)
  depthspace compare --dtype f4 --shape 1,8,2,3 a.raw b.raw`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 || len(args) == 2 {
				return nil
			}
			err := fmt.Errorf("compare needs two inputs, A (the reference) and B, or one file of several runs, got %d argument(s) (see '%s --help')", len(args), cmd.CommandPath())
			f.junitOnError(args, err)
			return err
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			fileio.PipeErrorsAreErrors() // a report that cannot be written: exit 2
			err := f.run(cmd, args, s)
			if err != nil && !errors.Is(err, errDifferent) {
				// Names (of members, of files) are shown escaped: the
				// error stays one line, and no control sequence reaches
				// the terminal.
				err = shownError{err}
			}
			return err
		},
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		err = fmt.Errorf("%v (see '%s --help')", err, c.CommandPath())
		f.junitOnError(nil, err)
		return err
	})
	fl := cmd.Flags()
	fl.StringArrayVar(&f.rtol, "rtol", nil, "relative tolerance [NAME:]R: compare values with numpy's isclose rule; NAME: for one member of archives (repeatable)")
	fl.StringArrayVar(&f.atol, "atol", nil, "absolute tolerance [NAME:]A: compare values with numpy's isclose rule; NAME: for one member of archives (repeatable)")
	fl.StringVar(&f.stat, "check-error-stat", "elemwise", "what must stay within tolerance: elemwise (every element), or that statistic of the errors: max, mean, median, quantile")
	fl.Float64Var(&f.quantile, "error-quantile", 0.99, "the quantile --check-error-stat quantile checks (numpy's quantile, method linear)")
	fl.StringVar(&f.diffImage, "diff-image", "", "write a "+strings.ToUpper(imageKind())+" heat map of |B - A| over the two last axes (the largest over the others): black 0, white the largest")
	fl.BoolVar(&f.json, "json", false, "print the report as one JSON object")
	fl.StringVar(&f.junit, "junit", "", "also write a JUnit XML report to this file, for CI: one test case per member or file pair, a failure for each that differs")
	fl.IntVar(&f.maxReport, "max-report", compare.DefaultMaxReport, "how many differences to list (the first by index)")
	fl.IntVarP(&f.threads, "threads", "j", runtime.NumCPU(), "goroutines sharing the work")
	fl.StringVar(&f.compareFunc, "compare-func", compare.FuncSimple, "how to compare, as Polygraphy's: "+strings.Join(compare.FuncNames(), ", ")+" (simple: --rtol/--atol; the others against their threshold)")
	f.thresholds = map[string]*[]string{}
	for _, fn := range compare.FuncNames()[1:] {
		v := new([]string)
		f.thresholds[fn] = v
		fl.StringArrayVar(v, strings.TrimPrefix(compare.ThresholdFlag(fn), "--"), nil,
			fmt.Sprintf("--compare-func %s's threshold [NAME:]V, NAME: for one member (repeatable; default %v, Polygraphy's)", fn, compare.DefaultThreshold(fn)))
	}
	fl.BoolVar(&f.infEqual, "infinities-compare-equal", false, "with --compare-func l2, psnr or snr, the same infinity on both sides is an error of 0, not NaN (simple mode already takes it as equal)")
	f.inputFlags.register(fl, "compare only the members whose names match, on both sides")
	withoutBatch(fl)
	registerCompletions(cmd)
	return cmd
}

// run is compare's work, once the flags are read.
func (f *compareFlags) run(cmd *cobra.Command, args []string, s *streams) error {
	job, err := f.job(cmd, args, s)
	if err != nil {
		f.junitOnError(args, err)
		return err
	}
	var junit *compare.JUnitFile // nil without --junit
	if f.junit != "" {
		if junit, err = compare.CreateJUnit(f.junit, *job); err != nil {
			return err
		}
	}
	var rep interface{ WriteText(io.Writer) error }
	var equal bool
	if len(args) == 1 {
		// One file of several runs (Polygraphy RunResults):
		// every run against the first.
		var rr *compare.RunsReport
		if rr, err = compare.Runs(*job); err == nil {
			rep, equal = rr, rr.Equal
		}
	} else {
		rep, equal, err = compare.Any(*job)
	}
	// The JUnit report is written even when the comparison fails
	// (an <error>), so that CI never reads a stale one.
	jerr := junit.Finish(rep, equal, err)
	if err != nil {
		return err
	}
	if f.json {
		if jl, ok := rep.(interface{ WriteJSONLines(io.Writer) error }); ok {
			// Containers and directories: one record per pair and
			// a summary, as a batch's --json.
			if err := jl.WriteJSONLines(s.out); err != nil {
				return err
			}
		} else if err := writeJSON(s.out, rep); err != nil {
			return err
		}
	} else if err := rep.WriteText(s.out); err != nil {
		return err
	}
	if jerr != nil {
		return jerr
	}
	if !equal {
		return errDifferent
	}
	return nil
}

func (f *compareFlags) job(cmd *cobra.Command, args []string, s *streams) (*compare.Job, error) {
	src := pipeline.Source{Stdin: s.in}
	if err := f.inputFlags.source(&src); err != nil {
		return nil, err
	}
	a, b := src, src
	a.Path = args[0]
	if len(args) > 1 {
		b.Path = args[1]
	}
	o := compare.Options{
		Tolerant:  cmd.Flags().Changed("rtol") || cmd.Flags().Changed("atol") || (f.stat != "elemwise" && f.stat != ""),
		MaxReport: f.maxReport,
		Threads:   f.threads,
		Stat:      strings.ToLower(f.stat),
		Quantile:  f.quantile,
		DiffImage: f.diffImage,
	}
	var err error
	if o.RTol, o.MemberRTol, err = parseTolerances("--rtol", f.rtol); err != nil {
		return nil, err
	}
	if o.ATol, o.MemberATol, err = parseTolerances("--atol", f.atol); err != nil {
		return nil, err
	}
	o.Func, o.InfEqual = strings.ToLower(f.compareFunc), f.infEqual
	for fn, vals := range f.thresholds {
		flag := compare.ThresholdFlag(fn)
		if len(*vals) == 0 {
			continue
		}
		if fn != o.Func {
			return nil, fmt.Errorf("%s is the threshold of --compare-func %s, not %s", flag, fn, o.Func)
		}
		if o.Threshold, o.MemberThreshold, err = parseTolerances(flag, *vals); err != nil {
			return nil, err
		}
		o.ThresholdSet = slices.ContainsFunc(*vals, func(v string) bool { return !strings.Contains(v, ":") })
	}
	if !o.ThresholdSet && o.Func != compare.FuncSimple {
		o.Threshold = compare.DefaultThreshold(o.Func)
	}
	if o.Func != compare.FuncSimple && (len(f.rtol) > 0 || len(f.atol) > 0) {
		return nil, fmt.Errorf("--rtol and --atol are the tolerances of --compare-func simple, not %s (its threshold is %s)", o.Func, compare.ThresholdFlag(o.Func))
	}
	return &compare.Job{A: a, B: b, Options: o}, nil
}

// parseTolerances reads repeated --rtol/--atol values: a bare number is
// the default (the last one given wins), NAME:number a member's own.
func parseTolerances(flag string, vals []string) (def float64, member map[string]float64, err error) {
	for _, v := range vals {
		name, num := "", strings.TrimSpace(v)
		if i := strings.LastIndex(v, ":"); i >= 0 {
			name, num = v[:i], strings.TrimSpace(v[i+1:])
			if name == "" {
				return 0, nil, fmt.Errorf("%s %q: the member name before ':' is empty", flag, v)
			}
		}
		x, perr := strconv.ParseFloat(num, 64)
		if perr != nil {
			if name != "" {
				return 0, nil, fmt.Errorf("%s %s: %q is not a number", flag, v, num)
			}
			return 0, nil, fmt.Errorf("%s %q is not a number (or NAME:number for one member)", flag, v)
		}
		if name == "" {
			def = x
			continue
		}
		if member == nil {
			member = map[string]float64{}
		}
		member[name] = x
	}
	return def, member, nil
}

// junitOnError replaces the --junit report with one that records err, for
// a run that failed before it compared anything (a flag, an argument, a
// tolerance it cannot read): a CI job then never reads the last run's
// report as this one's. After a flag error the flags that follow it are
// not read, so --junit is looked for among the arguments themselves.
func (f *compareFlags) junitOnError(args []string, err error) {
	path := f.junit
	if path == "" {
		path = junitArg(os.Args[1:])
	}
	if path == "" || path == "-" {
		return
	}
	var job compare.Job
	if len(args) > 0 {
		job.A.Path = args[0]
	}
	if len(args) > 1 {
		job.B.Path = args[1]
	}
	if jf, cerr := compare.CreateJUnit(path, job); cerr == nil {
		_ = jf.Finish(nil, false, err) // the run's error is the one to report
	}
}

// junitArg is the value of the last --junit among command-line arguments
// (--junit F or --junit=F, before a "--"), or "".
func junitArg(args []string) string {
	path := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			return path
		case a == "--junit" && i+1 < len(args):
			path = args[i+1]
			i++
		case strings.HasPrefix(a, "--junit="):
			path = strings.TrimPrefix(a, "--junit=")
		}
	}
	return path
}

// shownError is an error whose message shows control characters and
// bytes that are not UTF-8 escaped (compare.Escaped).
type shownError struct{ err error }

func (e shownError) Error() string { return compare.Escaped(e.err.Error()) }
func (e shownError) Unwrap() error { return e.err }
