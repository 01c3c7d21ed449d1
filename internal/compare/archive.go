package compare

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
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
	// what the two inputs are, for the verdict line: "archives", or a
	// directory and a container.
	what string
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
			return nil, &pipeline.PathError{Path: fmt.Sprintf("%s and %s, member %s", Name(j.A.Path), Name(j.B.Path), Name(ta.Name)), Err: err}
		}
		r.A.Path, r.A.Format = j.memberPath(j.A.Path, ta), string(ta.Kind)
		r.B.Path, r.B.Format = j.memberPath(j.B.Path, tb), string(tb.Kind)
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
	what := r.what
	if what == "" {
		what = "archives"
	}
	fmt.Fprintf(&b, "%s %s and %s %s (%d members compared)\n", what, Name(r.A), Name(r.B), verdict, len(r.Members))
	_, err := io.WriteString(w, b.String())
	return err
}

// memberPath is how a report names a member: the file it came from (a
// directory's), else the container's path and its name.
func (j Job) memberPath(container string, t *pipeline.Tensor) string {
	if p, ok := j.paths[t]; ok {
		return p
	}
	return container + ":" + t.Name
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
	if v, ok := o.MemberThreshold[name]; ok {
		o.Threshold = v
	}
	return o
}

// checkMemberNames refuses a per-member tolerance that names no member of
// either input: a misspelt name would silently fall back to the default.
func checkMemberNames(o Options, a, b []*pipeline.Tensor) error {
	ns := newNameSet()
	ns.add(a, b)
	return ns.check(o, "member", "members")
}

// nameSet is the names of the members (or files) compared, in the order
// first met; a directory's pairs add theirs from several workers.
type nameSet struct {
	mu    sync.Mutex
	have  map[string]bool
	names []string
}

func newNameSet() *nameSet { return &nameSet{have: map[string]bool{}} }

func (n *nameSet) add(sides ...[]*pipeline.Tensor) {
	for _, ts := range sides {
		for _, t := range ts {
			n.addName(t.Name)
		}
	}
}

func (n *nameSet) addName(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if name != "" && !n.have[name] {
		n.have[name] = true
		n.names = append(n.names, name)
	}
}

// check refuses a per-member tolerance (--atol NAME:A, or a compare
// function's threshold) for a name none of the pairs has; what says what
// the names are of ("member", "member or file"), and list how a list of
// them is introduced.
func (n *nameSet) check(o Options, what, list string) error {
	for _, m := range o.memberFlags() {
		for _, name := range sortedKeys(m.values) {
			if n.have[name] {
				continue
			}
			have := "they have no named members"
			if len(n.names) > 0 {
				quoted := make([]string, len(n.names))
				for i, x := range n.names {
					quoted[i] = Name(x)
				}
				have = list + ": " + strings.Join(quoted, ", ")
			}
			return fmt.Errorf("%s %s:…: no %s of either input is called %q (%s)", m.flag, Name(name), what, name, have)
		}
	}
	return nil
}

// sortedKeys lists a map's keys in order, so that the first error is
// always the same one.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeOnly names what only side has, when it has anything.
func writeOnly(b *strings.Builder, side string, only []string) {
	if len(only) > 0 {
		shown := make([]string, len(only))
		for i, n := range only {
			shown[i] = Name(n)
		}
		fmt.Fprintf(b, "only in %s: %s\n", Name(side), strings.Join(shown, ", "))
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
