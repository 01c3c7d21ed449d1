package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/depthspace/depthspace/internal/walk"
)

// Directories are compared file by file: the tensor files under A and
// under B are paired by relative path, each pair compared as two files
// are (a container member by member), on -j workers at once; a file one
// side lacks makes the directories different and is named.

// DirReport is the result of comparing two directories.
type DirReport struct {
	A, B  string
	Equal bool
	Files []DirFile
	OnlyA []string
	OnlyB []string
}

// DirFile is one pair of files: its relative path and its report.
type DirFile struct {
	Rel    string
	Equal  bool
	Result interface{ WriteText(io.Writer) error }
	// elapsed is how long the pair took (--junit).
	elapsed time.Duration
}

// MarshalJSON writes the report as one object: the two paths, the
// verdict, one object per file pair (with its "file") and the one-sided
// files.
func (r *DirReport) MarshalJSON() ([]byte, error) {
	type file struct {
		File   string `json:"file"`
		Equal  bool   `json:"equal"`
		Report any    `json:"report"`
	}
	files := make([]file, len(r.Files))
	for i, f := range r.Files {
		files[i] = file{f.Rel, f.Equal, f.Result}
	}
	return json.Marshal(struct {
		A     string   `json:"a"`
		B     string   `json:"b"`
		Equal bool     `json:"equal"`
		Files []file   `json:"files"`
		OnlyA []string `json:"only_in_a"`
		OnlyB []string `json:"only_in_b"`
	}{r.A, r.B, r.Equal, files, r.OnlyA, r.OnlyB})
}

// isDir reports whether path names a directory (standard input never).
func isDir(path string) bool {
	return path != "-" && walk.IsDir(path) // or an s3:// prefix
}

// Dirs compares the tensor files of two directories pair by pair.
func Dirs(j Job) (*DirReport, error) {
	la, err := tensorFiles(j.A.Path)
	if err != nil {
		return nil, err
	}
	lb, err := tensorFiles(j.B.Path)
	if err != nil {
		return nil, err
	}
	rep := &DirReport{A: j.A.Path, B: j.B.Path, Equal: true, OnlyA: []string{}, OnlyB: []string{}}
	inB := map[string]walk.File{}
	for _, f := range lb {
		inB[f.Rel] = f
	}
	type pair struct{ a, b walk.File }
	var pairs []pair
	seen := map[string]bool{}
	for _, f := range la {
		seen[f.Rel] = true
		if g, ok := inB[f.Rel]; ok {
			pairs = append(pairs, pair{f, g})
		} else {
			rep.OnlyA = append(rep.OnlyA, f.Rel)
		}
	}
	for _, f := range lb {
		if !seen[f.Rel] {
			rep.OnlyB = append(rep.OnlyB, f.Rel)
		}
	}
	if len(la) == 0 && len(lb) == 0 {
		return nil, fmt.Errorf("%s and %s hold no tensor files: nothing to compare", j.A.Path, j.B.Path)
	}
	// Per-member tolerances are checked against every pair at once: a
	// name that one pair lacks is the default's there (SPEC, compare: one
	// rule in every mode), a name no pair has is an error.
	names := newNameSet()
	for _, l := range [][]walk.File{la, lb} {
		for _, f := range l {
			names.addName(stem(f.Rel))
		}
	}
	rep.Files = make([]DirFile, len(pairs))
	errs := make([]error, len(pairs))
	// The cores go to files, one each: thousands of small pairs are the
	// case this is for.
	workers := max(1, min(j.Threads, len(pairs)))
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pairs) {
					return
				}
				pj := j
				pj.A.Path, pj.B.Path = pairs[i].a.Path, pairs[i].b.Path
				pj.Threads = 1
				pj.names, pj.stem = names, stem(pairs[i].a.Rel)
				start := time.Now()
				res, equal, err := anyFiles(pj)
				if err != nil {
					res, equal, err = notTensors(pj, err)
				}
				rep.Files[i] = DirFile{Rel: pairs[i].a.Rel, Equal: equal, Result: res, elapsed: time.Since(start)}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err // the first in path order: one line
		}
	}
	if err := names.check(j.Options, "member or file", "names"); err != nil {
		return nil, err
	}
	for _, f := range rep.Files {
		rep.Equal = rep.Equal && f.Equal
	}
	rep.Equal = rep.Equal && len(rep.OnlyA) == 0 && len(rep.OnlyB) == 0
	return rep, nil
}

// stem is a file's name as a member: its relative path without the
// extension (golden/sub/out0.npy is sub/out0).
func stem(rel string) string {
	return strings.TrimSuffix(rel, path.Ext(rel))
}

// notTensors decides a pair of a directory that failed to load (why):
// files with no tensor format (a .json of metadata beside the tensors)
// are compared byte for byte; any other file that cannot be read is an
// error, never compared as bytes (SPEC, compare).
func notTensors(j Job, why error) (result interface{ WriteText(io.Writer) error }, equal bool, err error) {
	ta, tb := tensorless(j.A.Path), tensorless(j.B.Path)
	switch {
	case ta && tb:
		br, err := compareBytes(j.A.Path, j.B.Path, why)
		if err != nil {
			return nil, false, err
		}
		return br, br.Equal, nil
	case ta || tb:
		// One side is not a tensor: the pair differs, if the other side
		// is a tensor that can be read.
		tensor, other := j.B, j.A.Path
		if tb {
			tensor, other = j.A, j.B.Path
		}
		tensor.Deferred = true
		ts, err := loadPicked(tensor)
		if err != nil {
			return nil, false, err
		}
		closeAll(ts)
		return &BytesReport{A: j.A.Path, B: j.B.Path, Reason: other + " is not a tensor, " + tensor.Path + " is"}, false, nil
	}
	return nil, false, why
}

// tensorless says whether a file of a directory has no tensor format
// although its extension is one a tensor may have: its format says the
// file is metadata (format.Format.Metadata: a JSON object naming none of
// a tensor's keys, as WebDataset keeps beside its samples), and no other
// format claims its content.
func tensorless(name string) bool {
	f := format.Lookup(format.KindByExtension(name))
	if f == nil || f.Metadata == nil {
		return false
	}
	file, err := os.Open(name)
	if err != nil {
		return false
	}
	defer file.Close()
	// Metadata is small; a larger file is taken as a tensor (and its
	// error stands).
	data, err := io.ReadAll(io.LimitReader(file, maxMetadata+1))
	if err != nil || len(data) > maxMetadata || format.Detect(name, data) != f.Kind {
		return false
	}
	return f.Metadata(data)
}

// maxMetadata is the largest .json tensorless reads.
const maxMetadata = 1 << 20

// WriteText prints the report of each pair that differs (a directory of
// thousands of equal pairs would drown them; --json has every pair), the
// one-sided files and a verdict.
func (r *DirReport) WriteText(w io.Writer) error {
	for _, f := range r.Files {
		if f.Equal {
			continue
		}
		if err := f.Result.WriteText(w); err != nil {
			return err
		}
	}
	var b strings.Builder
	writeOnly(&b, r.A, r.OnlyA)
	writeOnly(&b, r.B, r.OnlyB)
	different := 0
	for _, f := range r.Files {
		if !f.Equal {
			different++
		}
	}
	verdict := "are equal"
	if !r.Equal {
		verdict = "differ"
	}
	fmt.Fprintf(&b, "directories %s and %s %s (%d file pairs compared, %d different, %d only in a, %d only in b)\n",
		Name(r.A), Name(r.B), verdict, len(r.Files), different, len(r.OnlyA), len(r.OnlyB))
	_, err := io.WriteString(w, b.String())
	return err
}

// tensorFiles lists the tensor files under dir as a batch walks them
// (by extension, links followed, loops refused), sorted by relative path.
func tensorFiles(dir string) ([]walk.File, error) {
	fs, err := walk.Files(dir)
	if err != nil {
		return nil, err
	}
	for _, f := range fs {
		if f.Err != nil {
			return nil, f.Err
		}
	}
	return fs, nil
}

// BytesReport is a pair of files of a directory that are not read as
// tensors, compared byte for byte.
type BytesReport struct {
	A      string `json:"a"`
	B      string `json:"b"`
	Equal  bool   `json:"equal"`
	Reason string `json:"not_tensors"` // why they were not read as tensors
}

// compareBytes compares two files byte for byte after they failed to
// load as tensors (why); an I/O failure is an error.
func compareBytes(a, b string, why error) (*BytesReport, error) {
	fa, err := os.Open(a)
	if err != nil {
		return nil, err
	}
	defer fa.Close()
	fb, err := os.Open(b)
	if err != nil {
		return nil, err
	}
	defer fb.Close()
	r := &BytesReport{A: a, B: b, Equal: true, Reason: why.Error()}
	var pe *pipeline.PathError
	if errors.As(why, &pe) {
		r.Reason = pe.Err.Error()
	}
	ba, bb := make([]byte, 64<<10), make([]byte, 64<<10)
	for {
		na, ea := io.ReadFull(fa, ba)
		nb, eb := io.ReadFull(fb, bb)
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			r.Equal = false
			return r, nil
		}
		if ea != nil || eb != nil {
			if (ea == io.EOF || ea == io.ErrUnexpectedEOF) && (eb == io.EOF || eb == io.ErrUnexpectedEOF) {
				return r, nil
			}
			if ea != nil && ea != io.EOF && ea != io.ErrUnexpectedEOF {
				return nil, ea
			}
			return nil, eb
		}
	}
}

// WriteText says whether the bytes are the same.
func (r *BytesReport) WriteText(w io.Writer) error {
	verdict := "are the same bytes"
	if !r.Equal {
		verdict = "differ in their bytes"
	}
	_, err := fmt.Fprintf(w, "%s and %s %s (not compared as tensors: %s)\n", Name(r.A), Name(r.B), verdict, Name(r.Reason))
	return err
}

// WriteJSONLines prints --json for directories: one JSON object per file
// pair ({"file", "equal", "report"}), then the summary.
func (r *DirReport) WriteJSONLines(w io.Writer) error {
	return writeJSONLines(w, len(r.Files), func(i int) (any, bool) {
		f := r.Files[i]
		return struct {
			File   string `json:"file"`
			Equal  bool   `json:"equal"`
			Report any    `json:"report"`
		}{f.Rel, f.Equal, f.Result}, f.Equal
	}, Summary{A: r.A, B: r.B, Equal: r.Equal, OnlyA: r.OnlyA, OnlyB: r.OnlyB})
}

// DirContainer compares a directory with a container (npz, safetensors,
// a tar shard, a Polygraphy file), either way round, as two containers
// are: the directory's tensor files are its members. Files and members
// are paired by name without a tensor extension (golden/out0.npy pairs
// with member out0, golden/sub/out0.npy with sub/out0, and a shard's
// 000001.input.npy with 000001.input.npy); a file that holds several
// tensors (an npz) gives members named FILE/MEMBER.
func DirContainer(j Job) (*ArchiveReport, error) {
	dirA := isDir(j.A.Path)
	dir, file := j.A, j.B
	if !dirA {
		dir, file = file, dir
	}
	paths := map[*pipeline.Tensor]string{}
	dms, err := dirMembers(dir, paths)
	defer closeAll(dms)
	if err != nil {
		return nil, err
	}
	file.Deferred = true
	fms, err := loadPicked(file)
	if err != nil {
		return nil, err
	}
	defer closeAll(fms)
	if len(fms) == 1 && fms[0].Name == "" {
		return nil, &pipeline.PathError{Path: Name(dir.Path), Err: fmt.Errorf("is a directory and %s one tensor: compare a directory with a container (%s) or with another directory", Name(displayPath(file.Path)), strings.Join(format.Names(format.IsContainerFormat), ", "))}
	}
	if err := memberKeys(file.Path, fms); err != nil {
		return nil, err
	}
	as, bs := dms, fms
	if !dirA {
		as, bs = fms, dms
	}
	if len(as) == 0 && len(bs) == 0 {
		return nil, fmt.Errorf("%s and %s hold no tensors: nothing to compare", j.A.Path, j.B.Path)
	}
	if err := checkMemberNames(j.Options, as, bs); err != nil {
		return nil, err
	}
	j.paths = paths
	rep, err := Archives(j, as, bs)
	if err != nil {
		return nil, err
	}
	rep.what = "directory and container"
	if !dirA {
		rep.what = "container and directory"
	}
	return rep, nil
}

// dirMembers loads the tensor files under the directory src names as the
// members of a container (see DirContainer); paths records the file each
// came from.
func dirMembers(src pipeline.Source, paths map[*pipeline.Tensor]string) ([]*pipeline.Tensor, error) {
	files, err := tensorFiles(src.Path)
	if err != nil {
		return nil, err
	}
	globs := src.Members
	var out []*pipeline.Tensor
	from := map[string]string{} // member name: the file it came from
	for _, f := range files {
		if tensorless(f.Path) {
			continue // metadata, not a tensor
		}
		s := src
		s.Path, s.Deferred, s.Members = f.Path, true, nil
		ts, err := pipeline.LoadAll(s)
		if err != nil {
			return out, err
		}
		base := stem(f.Rel)
		for _, t := range ts {
			if t.Name == "" {
				t.Name = base
			} else {
				t.Name = base + "/" + strings.TrimSuffix(t.Name, tensorExt(t.Name))
			}
			if len(globs) > 0 && !matches(globs, t.Name) {
				t.Close()
				continue
			}
			if prev, ok := from[t.Name]; ok {
				out = append(out, t)
				return out, &pipeline.PathError{Path: src.Path, Err: fmt.Errorf("%s and %s are both member %s: rename one", Name(prev), Name(f.Rel), Name(t.Name))}
			}
			from[t.Name] = f.Rel
			paths[t] = f.Path
			out = append(out, t)
		}
	}
	return out, nil
}

// memberKeys names a container's members as DirContainer pairs them:
// without a tensor extension (a shard's 000001.input.npy is
// 000001.input); two members that become one name are an error.
func memberKeys(path string, ts []*pipeline.Tensor) error {
	seen := map[string]string{}
	for _, t := range ts {
		key := strings.TrimSuffix(t.Name, tensorExt(t.Name))
		if prev, ok := seen[key]; ok {
			return &pipeline.PathError{Path: displayPath(path), Err: fmt.Errorf("members %s and %s pair with the same file %s: compare them as two containers", Name(prev), Name(t.Name), Name(key))}
		}
		seen[key] = t.Name
		t.Name = key
	}
	return nil
}

// tensorExt is name's extension when it is a tensor format's, else "".
func tensorExt(name string) string {
	if format.KindByExtension(name) == "" {
		return ""
	}
	return path.Ext(name)
}
