// Package walk finds the tensor files of the command line's arguments in
// one order, byte-wise by relative path, then by argument: files, directory
// trees (symbolic links followed, loops reported), s3:// objects and
// prefixes. It is a stream, never a list: each directory's entries are read
// and sorted when the walk comes to them (a subdirectory's name sorts as if
// followed by "/", which gives exactly the byte-wise order of the whole
// paths), its subtree walked where it falls, and the arguments' walks
// merged. Memory holds the directories on the current path, not the files.
// Batches (package batch), compare and info of directories use it.
package walk

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// Item is one file of the walk, or a problem met on the way (Err set: a
// loop, an unreadable directory, a missing argument), which a batch
// reports as that entry's failure so that, under --shard, exactly one
// process reports it.
type Item struct {
	Input string // the path as given or found: "data/a/x.npy", or an s3:// URL
	Rel   string // slash-separated path relative to its argument
	Key   string // the sort key: Rel, with "/" after a directory's name
	Size  int64  // bytes
	Arg   int    // index of the argument it came from
	Err   error
}

// Walker gives the items of the arguments in order.
type Walker struct{ heads sourceHeap }

// New starts the walk of inputs. outDir (may be "") and outInfo (its
// FileInfo, may be nil) are never walked into. It fails, before any work,
// for a problem with the walk as a whole: standard input as an argument,
// an input that is the output directory or prefix, an object store that
// cannot be configured.
func New(inputs []string, outDir string, outInfo os.FileInfo) (*Walker, error) {
	w := &Walker{}
	for i, arg := range inputs {
		src, err := argSource(i, arg, outInfo)
		if err == nil {
			src, err = skipOutDir(src, arg, outDir)
		}
		if err != nil {
			return nil, err
		}
		w.heads.push(src, i)
	}
	return w, nil
}

// SetOutDir tells the walk of an output directory made after it started
// (a batch's new --out-dir): directories read from now on leave it out.
func (w *Walker) SetOutDir(info os.FileInfo) {
	for _, h := range w.heads {
		if d, ok := h.src.(*dirWalk); ok {
			d.outInfo = info
		}
	}
}

// Next is the next item, false at the end of the walk.
func (w *Walker) Next() (Item, bool) { return w.heads.pop() }

// source is one argument's items in order.
type source interface {
	next() (Item, bool)
}

// sourceHeap merges the arguments' streams: the smallest key first, then
// the first argument.
type sourceHeap []*sourceHead

type sourceHead struct {
	src source
	arg int
	it  Item
}

func (h *sourceHeap) push(src source, arg int) {
	if it, ok := src.next(); ok {
		h.up(&sourceHead{src, arg, it})
	}
}

func (h *sourceHeap) less(i, j int) bool {
	a, b := (*h)[i], (*h)[j]
	if a.it.Key != b.it.Key {
		return a.it.Key < b.it.Key
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

func (h *sourceHeap) pop() (Item, bool) {
	if len(*h) == 0 {
		return Item{}, false
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
	it   Item
	done bool
}

func (o *one) next() (Item, bool) {
	if o.done {
		return Item{}, false
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
		return &one{it: Item{Input: arg, Rel: base, Key: base, Arg: i, Err: statError(arg, err)}}, nil
	}
	if !fi.IsDir() || IsStore(arg) {
		return &one{it: Item{Input: arg, Rel: base, Key: base, Size: fi.Size(), Arg: i}}, nil
	}
	if outInfo != nil && os.SameFile(fi, outInfo) {
		return nil, &pipeline.PathError{Path: arg, Err: errors.New("is the output directory too; --out-dir must be another directory")}
	}
	w := &dirWalk{arg: i, outInfo: outInfo}
	if it, failed := w.enter(arg, "", []dir{{arg, fi}}); failed {
		w.first = &it // an argument that cannot be read: its failure first
	}
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
	first   *Item  // the argument's own failure, given before its entries
	dirents []byte // listDir's buffer (Linux)
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

// child is the path of f's entry name and its path relative to the
// argument. The path (cleaned by filepath.Join) usually ends in the
// relative one, which is then taken from its end, checked, instead of
// being made: one string a file, not two.
func (f *frame) child(name string) (path, rel string) {
	path = filepath.Join(f.p, name)
	n := len(name)
	if f.rel != "" {
		n += len(f.rel) + 1
	}
	if filepath.Separator == '/' && len(path) > n && path[len(path)-n-1] == '/' {
		if rel = path[len(path)-n:]; isJoined(rel, f.rel, name) {
			return path, rel
		}
	}
	return path, joinRel(f.rel, name)
}

// isJoined says whether s is joinRel(rel, name).
func isJoined(s, rel, name string) bool {
	if rel == "" {
		return s == name
	}
	return len(s) == len(rel)+1+len(name) && s[:len(rel)] == rel && s[len(rel)] == '/' && s[len(rel)+1:] == name
}

func (w *dirWalk) next() (Item, bool) {
	if w.first != nil {
		it := *w.first
		w.first = nil
		return it, true
	}
	for len(w.stack) > 0 {
		f := w.stack[len(w.stack)-1]
		if f.next == len(f.entries) {
			w.stack[len(w.stack)-1] = nil
			w.stack = w.stack[:len(w.stack)-1]
			continue
		}
		e := &f.entries[f.next]
		f.next++
		child, crel := f.child(e.name)
		ckey := crel // a file's key is its name: the same string
		if e.key != e.name {
			ckey = joinRel(f.rel, e.key)
		}
		switch {
		case e.err != nil:
			return Item{Input: child, Rel: crel, Key: ckey, Arg: w.arg, Err: e.err}, true
		case !e.isDir:
			return Item{Input: child, Rel: crel, Key: ckey, Size: e.size, Arg: w.arg}, true
		}
		if loop := findDir(f.path, e.info); loop != "" {
			return Item{Input: child, Rel: crel, Key: ckey, Arg: w.arg, Err: &pipeline.PathError{Path: child,
				Err: fmt.Errorf("symbolic link loop (leads back to %s); not followed", loop)}}, true
		}
		if it, failed := w.enter(child, crel, append(f.path[:len(f.path):len(f.path)], dir{child, e.info})); failed {
			return it, true
		}
	}
	return Item{}, false
}

// enter reads directory p and puts it on the walk's stack. A directory
// that cannot be read is a failure item (failed), and what could be read
// of it is walked all the same.
func (w *dirWalk) enter(p, rel string, path []dir) (it Item, failed bool) {
	entries, err := w.read(p)
	w.stack = append(w.stack, &frame{p: p, rel: rel, path: path, entries: entries})
	if err != nil {
		key := rel + "/" // where its entries would sort
		if rel == "" {
			key = "" // the argument itself: before anything under it
		}
		return Item{Input: p, Rel: rel, Key: key, Arg: w.arg, Err: &pipeline.PathError{Path: p, Err: fmt.Errorf("cannot read the directory: %w", unwrap(err))}}, true
	}
	return Item{}, false
}

// read lists the entries of directory p that the walk takes, sorted by
// key: tensor files (their sizes from fstatat in the directory, no
// FileInfo made), subdirectories (not the output directory), links
// resolved, and failures; other files are skipped unseen.
func (w *dirWalk) read(p string) ([]entry, error) {
	d, des, err := w.listDir(p)
	if d != nil {
		defer d.Close() // closed before going down: open directories do not pile up with the depth
	}
	out := make([]entry, 0, len(des))
	for _, e := range des {
		name := e.name
		if e.regular {
			if size, ok, serr := regularSize(d, name); serr == nil && ok {
				out = append(out, entry{name: name, key: name, size: size})
				continue
			}
		}
		child := filepath.Join(p, name)
		info, ierr := os.Lstat(child)
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
		case info.IsDir() && IsStore(child):
			out = append(out, entry{name: name, key: name})
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

// IsTensorName says whether a file met in a directory walk is taken as a
// tensor: by its extension, as format detection reads it (.npy, .json,
// .raw, .bin, and the other formats package format knows, such as .pb and
// .npz; case-insensitive). Files named on the command line are taken
// whatever their name.
func IsTensorName(name string) bool {
	return format.KindByExtension(name) != ""
}

// dirEntry is an entry of a directory as listDir gives it.
type dirEntry struct {
	name string
	// regular: the directory says it is a regular file, and its name is
	// a tensor's (IsTensorName); other regular files are left out. An
	// entry of another or an unknown type is looked at with lstat.
	regular bool
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
	w, err := New([]string{dir}, "", nil)
	if err != nil {
		return nil, err
	}
	var files []File
	for it, ok := w.Next(); ok; it, ok = w.Next() {
		files = append(files, File{Path: it.Input, Rel: it.Rel, Err: it.Err})
	}
	return files, nil
}

// File is one entry of Files: its path, its path relative to the
// directory (with '/'), or what went wrong.
type File struct {
	Path, Rel string
	Err       error
}
