package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/depthspace/depthspace/internal/pipeline"
)

// ArchiveReport compares two archives (npz) member by member: members are
// matched by name; each pair has its own Report.
type ArchiveReport struct {
	A, B    string    `json:"-"`
	Equal   bool      `json:"equal"`
	Members []*Report `json:"members"`
	names   []string  // each member's name, for the JSON records
	// OnlyA and OnlyB name the members the other side lacks; either makes
	// the archives different.
	OnlyA []string `json:"only_in_a"`
	OnlyB []string `json:"only_in_b"`
}

// MarshalJSON adds the two paths as the single-tensor report has them.
func (r *ArchiveReport) MarshalJSON() ([]byte, error) {
	type plain ArchiveReport
	return json.Marshal(struct {
		A string `json:"a"`
		B string `json:"b"`
		*plain
	}{r.A, r.B, (*plain)(r)})
}

// Archives compares every member of a with the member of b that has the
// same name, in a's order.
func Archives(j Job, a, b []*pipeline.Tensor) (*ArchiveReport, error) {
	rep := &ArchiveReport{A: j.A.Path, B: j.B.Path, Equal: true, OnlyA: []string{}, OnlyB: []string{}, Members: []*Report{}}
	byName := map[string]*pipeline.Tensor{}
	for _, t := range b {
		byName[t.Name] = t
	}
	seen := map[string]bool{}
	for _, ta := range a {
		seen[ta.Name] = true
		tb, ok := byName[ta.Name]
		if !ok {
			if err := ta.Verify(); err != nil { // a corrupt member is an error, paired or not
				return nil, err
			}
			rep.OnlyA = append(rep.OnlyA, ta.Name)
			rep.Equal = false
			continue
		}
		start := time.Now()
		if err := bring(ta, tb); err != nil {
			return nil, err
		}
		r, err := Tensors(Tensor{Header: ta.Header, Data: ta.Data}, Tensor{Header: tb.Header, Data: tb.Data}, j.Options.forMember(ta.Name))
		ta.Release()
		tb.Release()
		if err != nil {
			return nil, &pipeline.PathError{Path: fmt.Sprintf("%s and %s, member %s", j.A.Path, j.B.Path, ta.Name), Err: err}
		}
		r.A.Path, r.A.Format = j.A.Path+":"+ta.Name, string(ta.Kind)
		r.B.Path, r.B.Format = j.B.Path+":"+tb.Name, string(tb.Kind)
		r.elapsed = time.Since(start)
		rep.Members = append(rep.Members, r)
		rep.names = append(rep.names, ta.Name)
		rep.Equal = rep.Equal && r.Equal
	}
	for _, tb := range b {
		if !seen[tb.Name] {
			if err := tb.Verify(); err != nil {
				return nil, err
			}
			rep.OnlyB = append(rep.OnlyB, tb.Name)
			rep.Equal = false
		}
	}
	return rep, nil
}

// WriteText prints one report per member, then the members only one side
// has, then a verdict line.
func (r *ArchiveReport) WriteText(w io.Writer) error {
	for _, m := range r.Members {
		if err := m.WriteText(w); err != nil {
			return err
		}
	}
	var b strings.Builder
	writeOnly(&b, r.A, r.OnlyA)
	writeOnly(&b, r.B, r.OnlyB)
	verdict := "are equal"
	if !r.Equal {
		verdict = "differ"
	}
	fmt.Fprintf(&b, "archives %s and %s %s (%d members compared)\n", r.A, r.B, verdict, len(r.Members))
	_, err := io.WriteString(w, b.String())
	return err
}

// forMember is o with the tolerances given for the member name, where
// there are (--atol NAME:A), in place of the defaults.
func (o Options) forMember(name string) Options {
	if v, ok := o.MemberRTol[name]; ok {
		o.RTol = v
	}
	if v, ok := o.MemberATol[name]; ok {
		o.ATol = v
	}
	return o
}

// checkMemberNames refuses a per-member tolerance that names no member of
// either input: a misspelt name would silently fall back to the default.
func checkMemberNames(o Options, a, b []*pipeline.Tensor) error {
	have := map[string]bool{}
	var names []string
	for _, t := range append(append([]*pipeline.Tensor{}, a...), b...) {
		if t.Name != "" && !have[t.Name] {
			have[t.Name] = true
			names = append(names, t.Name)
		}
	}
	for flag, m := range map[string]map[string]float64{"--rtol": o.MemberRTol, "--atol": o.MemberATol} {
		for name := range m {
			if !have[name] {
				list := "they have no named members"
				if len(names) > 0 {
					list = "members: " + strings.Join(names, ", ")
				}
				return fmt.Errorf("%s %s:…: no member of either input is called %q (%s)", flag, name, name, list)
			}
		}
	}
	return nil
}

// writeOnly names what only side has, when it has anything.
func writeOnly(b *strings.Builder, side string, only []string) {
	if len(only) > 0 {
		fmt.Fprintf(b, "only in %s: %s\n", side, strings.Join(only, ", "))
	}
}

// Summary is the last JSON record of a comparison of containers or
// directories, told from the others by "summary": true, as a batch's.
type Summary struct {
	IsSummary bool     `json:"summary"` // always true
	A         string   `json:"a"`
	B         string   `json:"b"`
	Equal     bool     `json:"equal"`
	Compared  int      `json:"compared"`  // member or file pairs compared
	Different int      `json:"different"` // of those, the ones that differ
	OnlyA     []string `json:"only_in_a"`
	OnlyB     []string `json:"only_in_b"`
}

// WriteJSONLines prints --json for archives: one JSON object per member
// pair (the member's report, with its "member" name), then the summary.
func (r *ArchiveReport) WriteJSONLines(w io.Writer) error {
	return writeJSONLines(w, len(r.Members), func(i int) (any, bool) {
		return struct {
			Member string `json:"member"`
			*Report
		}{r.names[i], r.Members[i]}, r.Members[i].Equal
	}, Summary{A: r.A, B: r.B, Equal: r.Equal, OnlyA: r.OnlyA, OnlyB: r.OnlyB})
}

// writeJSONLines writes the n records of a container or directory
// comparison, one JSON object per line, then the summary, which it
// completes with the counts.
func writeJSONLines(w io.Writer, n int, record func(i int) (rec any, equal bool), s Summary) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for i := 0; i < n; i++ {
		rec, equal := record(i)
		if !equal {
			s.Different++
		}
		if err := enc.Encode(rec); err != nil {
			return err
		}
	}
	s.IsSummary, s.Compared = true, n
	return enc.Encode(s)
}
