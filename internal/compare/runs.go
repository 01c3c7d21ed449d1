package compare

import (
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// RunsReport compares the runs one file holds (a Polygraphy RunResults
// of several runners), as Polygraphy does: every run against the first,
// iteration by iteration, output by output. Each pair of runs is an
// ArchiveReport whose members are named within the run.
type RunsReport struct {
	Path  string
	Runs  []string         // the runs' names, in file order
	Pairs []*ArchiveReport // run i+1 against run 0
	Equal bool
}

// Runs compares the runs of the one input j.A holds (j.B is unused).
func Runs(j Job) (*RunsReport, error) {
	if j.DiffImage != "" {
		return nil, errors.New("--diff-image draws one pair of tensors; give two inputs")
	}
	if err := check(&j.Options); err != nil {
		return nil, err
	}
	j.A.Deferred = true
	// --member names what the runs share ("out0", "1/out0"), the names
	// the report gives, or the file's own ("trt-runner-N0/out0"): it is
	// applied once the members are put in their runs.
	globs := j.A.Members
	j.A.Members = nil
	ts, err := pipeline.LoadAll(j.A)
	if err != nil {
		return nil, err
	}
	defer func() { closeAll(ts) }()
	runs, ok := ts[0].Meta.(format.Runs)
	if !ok || len(runs.RunNames()) < 2 {
		what := "one tensor"
		if ok {
			what = "one run"
		} else if ts[0].Name != "" {
			what = fmt.Sprintf("%d members and no runs", len(ts))
		}
		return nil, &pipeline.PathError{Path: displayPath(j.A.Path), Err: fmt.Errorf("holds %s: compare needs two inputs (A, the reference, and B), or one file of several runs (a Polygraphy RunResults of several runners)", what)}
	}
	names := runs.RunNames()
	groups := make([][]*pipeline.Tensor, len(names))
	var all []string
	for _, t := range ts {
		r, name, ok := runs.RunOf(t.Name)
		if !ok || r >= len(groups) {
			return nil, &pipeline.PathError{Path: displayPath(j.A.Path), Err: fmt.Errorf("internal error: member %q belongs to no run", t.Name)}
		}
		all = append(all, name)
		if len(globs) > 0 && !matches(globs, name) && !matches(globs, t.Name) {
			continue
		}
		t.Name = name
		groups[r] = append(groups[r], t)
	}
	if len(groups[0]) == 0 {
		return nil, &pipeline.PathError{Path: displayPath(j.A.Path), Err: fmt.Errorf("--member %s matches none of the runs' members (%s)", strings.Join(globs, " --member "), strings.Join(uniq(all), ", "))}
	}
	if err := checkMemberNames(j.Options, groups[0], nil); err != nil {
		return nil, err
	}
	rep := &RunsReport{Path: j.A.Path, Runs: names, Equal: true}
	for r := 1; r < len(names); r++ {
		jr := j
		jr.A.Path = j.A.Path + ":" + names[0]
		jr.B.Path = j.A.Path + ":" + names[r]
		ar, err := Archives(jr, groups[0], groups[r])
		if err != nil {
			return nil, err
		}
		rep.Pairs = append(rep.Pairs, ar)
		rep.Equal = rep.Equal && ar.Equal
	}
	return rep, nil
}

func displayPath(p string) string {
	if p == "-" {
		return "stdin"
	}
	return p
}

// WriteText prints each pair of runs, then a verdict line: the runs
// that agree with the first, or those that differ from it.
//
//	runs of out.json agree: trt-runner-N0 checked against onnxrt-runner-N0
//	runs of out.json differ: trt-runner-N0 differs from onnxrt-runner-N0 (1 of 2 runs checked)
func (r *RunsReport) WriteText(w io.Writer) error {
	for _, p := range r.Pairs {
		if err := p.WriteText(w); err != nil {
			return err
		}
	}
	var differ []string
	for i, p := range r.Pairs {
		if !p.Equal {
			differ = append(differ, Name(r.Runs[i+1]))
		}
	}
	var err error
	if len(differ) == 0 {
		checked := make([]string, len(r.Runs)-1)
		for i, n := range r.Runs[1:] {
			checked[i] = Name(n)
		}
		_, err = fmt.Fprintf(w, "runs of %s agree: %s checked against %s\n", Name(r.Path), strings.Join(checked, ", "), Name(r.Runs[0]))
	} else {
		verb := "differs"
		if len(differ) > 1 {
			verb = "differ"
		}
		_, err = fmt.Fprintf(w, "runs of %s differ: %s %s from %s (%d of %d runs checked)\n", Name(r.Path), strings.Join(differ, ", "), verb, Name(r.Runs[0]), len(differ), len(r.Runs)-1)
	}
	return err
}

// WriteJSONLines writes one record per member pair of every pair of runs
// (with "a" and "b" naming the runs), then one summary.
func (r *RunsReport) WriteJSONLines(w io.Writer) error {
	type rec struct {
		A      string `json:"a"`
		B      string `json:"b"`
		Member string `json:"member"`
		*Report
	}
	var recs []rec
	s := Summary{A: r.Path, B: r.Path, Equal: r.Equal, OnlyA: []string{}, OnlyB: []string{}}
	for _, p := range r.Pairs {
		for i, m := range p.Members {
			recs = append(recs, rec{p.A, p.B, p.names[i], m})
		}
		for _, n := range p.OnlyA {
			s.OnlyA = append(s.OnlyA, p.B+": "+n)
		}
		for _, n := range p.OnlyB {
			s.OnlyB = append(s.OnlyB, p.B+": "+n)
		}
	}
	return writeJSONLines(w, len(recs), func(i int) (any, bool) { return recs[i], recs[i].Equal }, s)
}

// matches says whether name matches one of globs.
func matches(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// uniq keeps the first of each name, in order.
func uniq(names []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
