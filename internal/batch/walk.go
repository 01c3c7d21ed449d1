package batch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// item is one entry of the batch list: a tensor file to transform, or a
// problem found while walking (err set), which is reported as that
// entry's failure so that, under --shard, exactly one process reports it.
type item struct {
	input  string // the path as given or found: "data/a/x.npy"
	rel    string // slash-separated path relative to its argument: the sort key
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

// list walks the inputs and returns every item in the batch's order:
// sorted byte-wise by relative path, then by argument (deterministic on
// every machine). outDir (may be nil) is never walked into. It fails,
// before any work, when two items would write the same output.
func list(inputs []string, outDir string, outInfo os.FileInfo, to format.Kind) ([]item, error) {
	var (
		mu    sync.Mutex
		items []item
	)
	add := func(it item) {
		mu.Lock()
		items = append(items, it)
		mu.Unlock()
	}
	// Directories are read by up to GOMAXPROCS more goroutines at once:
	// listing 5,000 small files in 100 directories took 23-26 ms, all
	// before the first file could start, and 19-23 ms this way.
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for i, arg := range inputs {
		w := walker{arg: i, outInfo: outInfo, add: add, sem: sem}
		if err := w.input(arg); err != nil {
			return nil, err
		}
		w.wg.Wait()
	}
	sort.SliceStable(items, func(a, b int) bool {
		if items[a].rel != items[b].rel {
			return items[a].rel < items[b].rel
		}
		return items[a].arg < items[b].arg
	})
	seen := make(map[string]int, len(items))
	for i := range items {
		it := &items[i]
		if it.err != nil {
			continue
		}
		name := OutputName(it.rel, to)
		it.output = outputPath(outDir, name) // a path, or an object under an s3:// prefix
		if j, dup := seen[name]; dup {
			return nil, &pipeline.PathError{Path: it.output, Err: fmt.Errorf(
				"would be the output of both %s and %s (inputs with the same relative path); run them in separate batches or to separate --out-dir",
				items[j].input, it.input)}
		}
		seen[name] = i
	}
	return items, nil
}

type walker struct {
	arg     int
	outInfo os.FileInfo
	add     func(item) // safe for concurrent use
	// sem holds a token for every goroutine reading directories; a
	// subdirectory met when none is free is read by its parent's.
	sem chan struct{}
	wg  sync.WaitGroup
}

// dir is a directory on the current walk path, for loop detection.
type dir struct {
	path string
	info os.FileInfo
}

func (w *walker) input(arg string) error {
	if arg == "-" {
		return errors.New("standard input (-) cannot be part of a batch; give files or directories")
	}
	if isObject(arg) {
		return w.object(arg) // walk_objects.go
	}
	fi, err := os.Stat(arg)
	if err != nil {
		w.add(item{input: arg, rel: path.Base(filepath.ToSlash(arg)), arg: w.arg, err: statError(arg, err)})
		return nil
	}
	if !fi.IsDir() {
		w.add(item{input: arg, rel: path.Base(filepath.ToSlash(arg)), size: fi.Size(), arg: w.arg})
		return nil
	}
	if w.outInfo != nil && os.SameFile(fi, w.outInfo) {
		return &pipeline.PathError{Path: arg, Err: errors.New("is the output directory too; --out-dir must be another directory")}
	}
	w.dir(arg, "", []dir{{arg, fi}})
	return nil
}

// dir walks one directory, its subdirectories on other goroutines when
// tokens are free (the batch sorts what is found). Symbolic links are
// followed (to files and to directories); a link back to a directory on
// the current path is a loop, reported once and not followed.
func (w *walker) dir(p, rel string, path []dir) {
	d, entries, err := readDir(p)
	if err != nil {
		w.add(item{input: p, rel: rel, arg: w.arg, err: &pipeline.PathError{Path: p, Err: fmt.Errorf("cannot read the directory: %w", unwrap(err))}})
		// ReadDir returns what it could read before the error: walk that.
	}
	type sub struct {
		p, rel string
		path   []dir
	}
	var subs []sub
	for _, e := range entries {
		child := filepath.Join(p, e.Name())
		crel := joinRel(rel, e.Name())
		if e.Type().IsRegular() {
			// Most entries: a tensor file's size is looked up in d, no
			// FileInfo made; other files are skipped unseen.
			if !IsTensorName(e.Name()) {
				continue
			}
			if size, ok, err := regularSize(d, e.Name()); err == nil && ok {
				w.add(item{input: child, rel: crel, size: size, arg: w.arg})
				continue
			}
		}
		info, err := e.Info()
		if err != nil {
			w.add(item{input: child, rel: crel, arg: w.arg, err: &pipeline.PathError{Path: child, Err: unwrap(err)}})
			continue
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Stat(child)
			if err != nil {
				// A dangling link is reported if it would have been a
				// tensor; a link loop ("too many levels of symbolic
				// links") or an unreadable target always.
				if IsTensorName(e.Name()) || !errors.Is(err, fs.ErrNotExist) {
					w.add(item{input: child, rel: crel, arg: w.arg, err: statError(child, err)})
				}
				continue
			}
			info = target
		}
		if info.IsDir() {
			if w.outInfo != nil && os.SameFile(info, w.outInfo) {
				continue // the output directory: never an input
			}
			if loop := findDir(path, info); loop != "" {
				w.add(item{input: child, rel: crel, arg: w.arg, err: &pipeline.PathError{Path: child,
					Err: fmt.Errorf("symbolic link loop (leads back to %s); not followed", loop)}})
				continue
			}
			subs = append(subs, sub{child, crel, append(path[:len(path):len(path)], dir{child, info})})
			continue
		}
		if info.Mode().IsRegular() && IsTensorName(e.Name()) {
			w.add(item{input: child, rel: crel, size: info.Size(), arg: w.arg})
		}
	}
	// Closed before going down: open directories do not pile up with the
	// tree's depth.
	if d != nil {
		d.Close()
	}
	for _, s := range subs {
		select {
		case w.sem <- struct{}{}:
			w.wg.Add(1)
			go func() {
				defer func() { <-w.sem; w.wg.Done() }()
				w.dir(s.p, s.rel, s.path)
			}()
		default:
			w.dir(s.p, s.rel, s.path)
		}
	}
}

// readDir opens the directory p and reads its entries (in no order: the
// batch sorts by path). d stays open for regularSize; it is nil when p
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
