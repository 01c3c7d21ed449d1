package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/depthspace/depthspace/internal/walk"
)

// item is one entry of the batch list: a tensor file to transform, or a
// problem found while walking (err set), which is reported as that
// entry's failure so that, under --shard, exactly one process reports it.
type item struct {
	input  string // the path as given or found: "data/a/x.npy"
	rel    string // slash-separated path relative to its argument
	output string // the output path under --out-dir ("" for a walk error)
	size   int64  // input bytes, for -j and progress
	err    error
}

// extension is the file extension of format k: the first its
// registration lists (raw: .raw before .bin; ONNX: .pb), or "." + k.
func extension(k format.Kind) string {
	if f := format.Lookup(k); f != nil && len(f.Exts) > 0 {
		return f.Exts[0]
	}
	return "." + string(k)
}

// OutputName is the relative output path of the input at rel: the same
// path, with the extension of format to when --to changes the format
// (x.npy --to json: x.json; --to onnx: x.pb). An extension that is not a
// tensor format's is kept and the new one appended (frames.dat --to npy:
// frames.dat.npy); raw data keeps .bin or .raw.
func OutputName(rel string, to format.Kind) string {
	if to == "" {
		return rel
	}
	kind := format.KindByExtension(rel)
	if kind == to {
		return rel
	}
	if kind != "" {
		rel = strings.TrimSuffix(rel, path.Ext(rel))
	}
	return rel + extension(to)
}

// The batch's items come from a walk (package walk): a stream in the
// batch's order, byte-wise by relative path, then by argument, never a
// list of every file. A batch names each item's output and finds
// collisions as they come.

// lister gives the batch's items in order. Two inputs that would write
// the same output are found as they come: both are in the same
// directory of the merged order (only the extension differs, or the
// relative path is the same), so a set per directory open on the walk's
// path is enough; the later one is a failure item.
type lister struct {
	walk   *walk.Walker
	to     format.Kind
	outDir string
	open   []outDirSet // the directories of the merged order being walked
}

// outDirSet is one directory of the outputs being written: the output
// names taken in it that a later input could still take, and by which
// inputs (names.go).
type outDirSet struct {
	dir  string
	seen takenNames
}

// newLister starts the walk of inputs. It fails, before any work, for a
// problem with the batch as a whole: an input that is the output
// directory, an object store that cannot be configured.
func newLister(inputs []string, outDir string, outInfo os.FileInfo, to format.Kind) (*lister, error) {
	w, err := walk.New(inputs, outDir, outInfo)
	if err != nil {
		return nil, err
	}
	return &lister{walk: w, to: to, outDir: outDir}, nil
}

// next is the next item of the batch, its output named.
func (l *lister) next() (item, bool) {
	w, ok := l.walk.Next()
	if !ok {
		return item{}, false
	}
	it := item{input: w.Input, rel: w.Rel, size: w.Size, err: w.Err}
	if it.err != nil {
		return it, true
	}
	name := OutputName(it.rel, l.to)
	it.output = outputPath(l.outDir, name) // a path, or an object under an s3:// prefix
	set := l.dirSet(path.Dir(name))
	if other, dup := set.seen.take(name, it.rel, it.input); dup {
		// The failure is this input's, the one skipped: it names it, the
		// output and the input written there.
		it.err = &pipeline.PathError{Path: it.input, Err: fmt.Errorf(
			"not written: its output %s is %s's (both relative paths give that output name): run them in separate batches or to separate --out-dir",
			it.output, other)}
		return it, true
	}
	return it, true
}

// dirSet is the set of output names of directory dir, the directories
// the walk has left dropped.
func (l *lister) dirSet(dir string) *outDirSet {
	for len(l.open) > 0 {
		top := l.open[len(l.open)-1].dir
		if top == dir || top == "." || strings.HasPrefix(dir, top+"/") {
			break
		}
		l.open = l.open[:len(l.open)-1]
	}
	if len(l.open) == 0 || l.open[len(l.open)-1].dir != dir {
		l.open = append(l.open, outDirSet{dir: dir})
	}
	return &l.open[len(l.open)-1]
}

// list walks the inputs to the end: every item in the batch's order (for
// the tests, and for info and compare of a directory, which hold them).
func list(inputs []string, outDir string, outInfo os.FileInfo, to format.Kind) ([]item, error) {
	l, err := newLister(inputs, outDir, outInfo, to)
	if err != nil {
		return nil, err
	}
	var items []item
	for it, ok := l.next(); ok; it, ok = l.next() {
		items = append(items, it)
	}
	return items, nil
}

// outputPath is where the output of relative path rel goes under outDir:
// a directory, or a prefix (s3://…) whose keys are rel below it.
func outputPath(outDir, rel string) string {
	if isObject(outDir) {
		return fileio.JoinURL(outDir, rel)
	}
	return filepath.Join(outDir, filepath.FromSlash(rel))
}

// isObject: an s3:// path, which has no directory to make or stat.
func isObject(p string) bool { return fileio.IsObject(p) }

// unwrap drops the path of an *fs.PathError: messages name it already.
func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
