package compare

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
				start := time.Now()
				res, equal, err := anyFiles(pj)
				if err != nil {
					// Not tensors (a WebDataset label, a .json of
					// metadata): compared as cmp would, byte for byte.
					var br *BytesReport
					br, err = compareBytes(pj.A.Path, pj.B.Path, err)
					res, equal = br, br != nil && br.Equal
				}
				rep.Files[i] = DirFile{Rel: pairs[i].a.Rel, Equal: equal, Result: res, elapsed: time.Since(start)}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	for _, f := range rep.Files {
		rep.Equal = rep.Equal && f.Equal
	}
	rep.Equal = rep.Equal && len(rep.OnlyA) == 0 && len(rep.OnlyB) == 0
	return rep, nil
}

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
		r.A, r.B, verdict, len(r.Files), different, len(r.OnlyA), len(r.OnlyB))
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
	_, err := fmt.Fprintf(w, "%s and %s %s (not compared as tensors: %s)\n", r.A, r.B, verdict, r.Reason)
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
