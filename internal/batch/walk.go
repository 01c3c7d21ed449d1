package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// item is one entry of the batch list: a tensor file to transform, or a
// problem found while walking (err set), which is reported as that
// entry's failure so that, under --shard, exactly one process reports it.
type item struct {
	input  string // the path as given or found: "data/a/x.npy"
	rel    string // slash-separated path relative to its argument
	key    string // the sort key: rel, with "/" after a directory's name
	output string // the output path under --out-dir ("" for a walk error)
	size   int64  // input bytes, for -j and progress
	arg    int    // index of the command-line argument it came from
	err    error
}

// IsTensorName says whether a file met in a directory walk is taken as a
// tensor: by its extension, as format detection reads it (.npy, .json,
// .raw, .bin, and the other formats package format knows, such as .pb and
// .npz; case-insensitive). Files named on the command line are taken
// whatever their name.
func IsTensorName(name string) bool {
	return format.KindByExtension(name) != ""
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

// The batch's items come as a stream (lister), never as a whole list:
// memory grows with the largest directory and the depth of the tree,
// not with the number of files (a batch over 200,000 files held 85 MiB
// when it sorted one list of them all).
//
// The order is byte-wise by relative path, then by argument, as sorting
// every relative path would give: each directory's entries are sorted
// with a subdirectory's name followed by "/" (so "a.npy" < "a/x.npy", as
// '.' < '/'), its subtree walked where that key falls, and the arguments'
// streams merged.

// lister gives the batch's items in order. Two inputs that would write
// the same output are found as they come: both are in the same
// directory of the merged order (only the extension differs, or the
// relative path is the same), so a set per directory open on the walk's
// path is enough; the later one is a failure item.
type lister struct {
	heads  sourceHeap
	to     format.Kind
	outDir string
	open   []outDirSet // the directories of the merged order being walked
}

// outDirSet is one directory of the outputs being written: the output
// names taken in it so far, and by which inputs.
type outDirSet struct {
	dir  string
	seen map[string]string
}

// source is one argument's items in order.
type source interface {
	next() (item, bool)
}

// newLister starts the walk of inputs. It fails, before any work, for a
// problem with the batch as a whole: an input that is the output
// directory, an object store that cannot be configured.
func newLister(inputs []string, outDir string, outInfo os.FileInfo, to format.Kind) (*lister, error) {
	l := &lister{to: to, outDir: outDir}
	for i, arg := range inputs {
		src, err := argSource(i, arg, outInfo)
		if err == nil {
			src, err = skipOutDir(src, arg, outDir) // walk_objects.go
		}
		if err != nil {
			return nil, err
		}
		l.heads.push(src, i)
	}
	return l, nil
}

// next is the next item of the batch, its output named.
func (l *lister) next() (item, bool) {
	it, ok := l.heads.pop()
	if !ok {
		return item{}, false
	}
	if it.err != nil {
		return it, true
	}
	name := OutputName(it.rel, l.to)
	it.output = outputPath(l.outDir, name) // a path, or an object under an s3:// prefix
	set := l.dirSet(path.Dir(name))
	if other, dup := set.seen[name]; dup {
		it.err = &pipeline.PathError{Path: it.output, Err: fmt.Errorf(
			"would be the output of both %s and %s (inputs with the same relative path); not written: run them in separate batches or to separate --out-dir",
			other, it.input)}
		it.output = ""
		return it, true
	}
	set.seen[name] = it.input
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
		l.open = append(l.open, outDirSet{dir: dir, seen: map[string]string{}})
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

// sourceHeap merges the arguments' streams: the smallest key first, then
// the first argument.
type sourceHeap []*sourceHead

type sourceHead struct {
	src source
	arg int
	it  item
}

func (h *sourceHeap) push(src source, arg int) {
	if it, ok := src.next(); ok {
		h.up(&sourceHead{src, arg, it})
	}
}

func (h *sourceHeap) less(i, j int) bool {
	a, b := (*h)[i], (*h)[j]
	if a.it.key != b.it.key {
		return a.it.key < b.it.key
	}
	return a.arg < b.arg
}

func (h *sourceHeap) up(s *sourceHead) {
	*h = append(*h, s)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h.less(i, p) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *sourceHeap) pop() (item, bool) {
	if len(*h) == 0 {
		return item{}, false
	}
	top := (*h)[0]
	it := top.it
	if next, ok := top.src.next(); ok {
		top.it = next
	} else {
		last := len(*h) - 1
		(*h)[0] = (*h)[last]
		*h = (*h)[:last]
	}
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(*h) && h.less(l, m) {
			m = l
		}
		if r < len(*h) && h.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		(*h)[i], (*h)[m] = (*h)[m], (*h)[i]
		i = m
	}
	return it, true
}

// one is a source of one item (a file argument, or its error).
type one struct {
	it   item
	done bool
}

func (o *one) next() (item, bool) {
	if o.done {
		return item{}, false
	}
	o.done = true
	return o.it, true
}

// argSource is the stream of one argument: a file, a directory walked,
// or an object store's object or prefix (walk_objects.go).
func argSource(i int, arg string, outInfo os.FileInfo) (source, error) {
	if arg == "-" {
		return nil, errors.New("standard input (-) cannot be part of a batch; give files or directories")
	}
	if isObject(arg) {
		return objectSource(i, arg) // walk_objects.go
	}
	base := path.Base(filepath.ToSlash(arg))
	fi, err := os.Stat(arg)
	if err != nil {
		return &one{it: item{input: arg, rel: base, key: base, arg: i, err: statError(arg, err)}}, nil
	}
	if !fi.IsDir() {
		return &one{it: item{input: arg, rel: base, key: base, size: fi.Size(), arg: i}}, nil
	}
	if outInfo != nil && os.SameFile(fi, outInfo) {
		return nil, &pipeline.PathError{Path: arg, Err: errors.New("is the output directory too; --out-dir must be another directory")}
	}
	w := &dirWalk{arg: i, outInfo: outInfo}
	w.enter(arg, "", []dir{{arg, fi}})
	return w, nil
}

// dirWalk walks one directory argument depth first, each directory's
// entries in key order. Symbolic links are followed (to files and to
// directories); a link back to a directory on the current path is a
// loop, reported once and not followed.
type dirWalk struct {
	arg     int
	outInfo os.FileInfo
	stack   []*frame
}

// frame is a directory being walked: its entries, read and sorted when
// the walk entered it, and the next one.
type frame struct {
	p, rel  string
	path    []dir // the directories from the argument down to this one
	entries []entry
	next    int
}

// entry is what the walk needs of a directory entry: a tensor file's
// size, a subdirectory's identity (loops), or what went wrong.
type entry struct {
	name, key string
	isDir     bool
	info      os.FileInfo // a subdirectory's
	size      int64
	err       error
}

// dir is a directory on the current walk path, for loop detection.
type dir struct {
	path string
	info os.FileInfo
}

func (w *dirWalk) next() (item, bool) {
	for len(w.stack) > 0 {
		f := w.stack[len(w.stack)-1]
		if f.next == len(f.entries) {
			w.stack[len(w.stack)-1] = nil
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		e := &f.entries[f.next]
		f.next++
		child, crel, ckey := filepath.Join(f.p, e.name), joinRel(f.rel, e.name), joinRel(f.rel, e.key)
		switch {
		case e.err != nil:
			return item{input: child, rel: crel, key: ckey, arg: w.arg, err: e.err}, true
		case !e.isDir:
			return item{input: child, rel: crel, key: ckey, size: e.size, arg: w.arg}, true
		}
		if loop := findDir(f.path, e.info); loop != "" {
			return item{input: child, rel: crel, key: ckey, arg: w.arg, err: &pipeline.PathError{Path: child,
				Err: fmt.Errorf("symbolic link loop (leads back to %s); not followed", loop)}}, true
		}
		if it, failed := w.enter(child, crel, append(f.path[:len(f.path):len(f.path)], dir{child, e.info})); failed {
			return it, true
		}
	}
	return item{}, false
}

// enter reads directory p and puts it on the walk's stack. A directory
// that cannot be read is a failure item (failed), and what could be read
// of it is walked all the same.
func (w *dirWalk) enter(p, rel string, path []dir) (it item, failed bool) {
	entries, err := w.read(p)
	w.stack = append(w.stack, &frame{p: p, rel: rel, path: path, entries: entries})
	if err != nil {
		return item{input: p, rel: rel, key: rel + "/", arg: w.arg, err: &pipeline.PathError{Path: p, Err: fmt.Errorf("cannot read the directory: %w", unwrap(err))}}, true
	}
	return item{}, false
}

// read lists the entries of directory p that the walk takes, sorted by
// key: tensor files (their sizes from fstatat in the directory, no
// FileInfo made), subdirectories (not the output directory), links
// resolved, and failures; other files are skipped unseen.
func (w *dirWalk) read(p string) ([]entry, error) {
	d, des, err := readDir(p)
	if d != nil {
		defer d.Close() // closed before going down: open directories do not pile up with the depth
	}
	var out []entry
	for _, e := range des {
		name := e.Name()
		child := filepath.Join(p, name)
		if e.Type().IsRegular() {
			if !IsTensorName(name) {
				continue
			}
			if size, ok, serr := regularSize(d, name); serr == nil && ok {
				out = append(out, entry{name: name, key: name, size: size})
				continue
			}
		}
		info, ierr := e.Info()
		if ierr != nil {
			out = append(out, entry{name: name, key: name, err: &pipeline.PathError{Path: child, Err: unwrap(ierr)}})
			continue
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, serr := os.Stat(child)
			if serr != nil {
				// A dangling link is reported if it would have been a
				// tensor; a link loop ("too many levels of symbolic
				// links") or an unreadable target always.
				if IsTensorName(name) || !errors.Is(serr, fs.ErrNotExist) {
					out = append(out, entry{name: name, key: name, err: statError(child, serr)})
				}
				continue
			}
			info = target
		}
		switch {
		case info.IsDir():
			if w.outInfo != nil && os.SameFile(info, w.outInfo) {
				continue // the output directory: never an input
			}
			out = append(out, entry{name: name, key: name + "/", isDir: true, info: info})
		case info.Mode().IsRegular() && IsTensorName(name):
			out = append(out, entry{name: name, key: name, size: info.Size()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out, err
}

// readDir opens the directory p and reads its entries (in no order: read
// sorts them). d stays open for regularSize; it is nil when p
// could not be opened.
func readDir(p string) (d *os.File, entries []fs.DirEntry, err error) {
	d, err = os.Open(p)
	if err != nil {
		return nil, nil, err
	}
	entries, err = d.ReadDir(-1)
	return d, entries, err
}

func findDir(path []dir, info os.FileInfo) string {
	for _, d := range path {
		if os.SameFile(d.info, info) {
			return d.path
		}
	}
	return ""
}

func joinRel(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func statError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(p); lerr == nil {
			err = errors.New("broken symbolic link (its target does not exist)")
		} else {
			err = errors.New("no such file or directory")
		}
	case errors.Is(err, fs.ErrPermission):
		err = errors.New("permission denied")
	default:
		err = unwrap(err)
	}
	return &pipeline.PathError{Path: p, Err: err}
}

func unwrap(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// Files lists the tensor files under dir the way a batch finds them
// (recursively, symbolic links followed, by extension, in byte-wise order
// of their relative paths), for `info DIR`. A problem met on the way (a
// loop, an unreadable directory) is an entry with Err set.
func Files(dir string) ([]File, error) {
	items, err := list([]string{dir}, "", nil, "")
	if err != nil {
		return nil, err
	}
	files := make([]File, len(items))
	for i, it := range items {
		files[i] = File{Path: it.input, Rel: it.rel, Err: it.err}
	}
	return files, nil
}

// File is one entry of Files: its path, its path relative to the
// directory (with '/'), or what went wrong.
type File struct {
	Path, Rel string
	Err       error
}
