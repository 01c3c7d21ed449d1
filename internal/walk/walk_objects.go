package walk

import (
	"errors"
	"fmt"
	"iter"
	"os"
	"path"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// objectSource is an argument naming an object of a place (s3://…,
// fileio.Place): one object, or every object under a prefix (s3://B/P/,
// s3://B, or s3://B/P where no object P exists but keys under P/ do),
// walked like a directory: tensor names only, relative keys kept, in the
// byte-wise order of their keys (Place.List), which is the order a
// directory's relative paths sort in. The listing is a stream: its first
// page starts the work, and no more than a page is held, whatever the
// number of keys.
func objectSource(i int, arg string) (source, error) {
	fail := func(rel string, err error) (source, error) {
		return &one{it: Item{Input: arg, Rel: rel, Key: rel, Arg: i, Err: &pipeline.PathError{Path: arg, Err: err}}}, nil
	}
	p := fileio.PlaceOf(arg)
	dir, err := p.Parse(arg)
	if err != nil {
		return fail(arg[strings.LastIndexByte(arg, '/')+1:], err)
	}
	if err := fileio.Ready(p); err != nil {
		// The configuration: every object would fail the same way.
		return nil, &pipeline.PathError{Path: arg, Err: err}
	}
	if !dir {
		_, size, err := p.ReadFirst(arg, nil)
		if err == nil {
			rel := urlBase(arg)
			it := Item{Input: arg, Rel: rel, Key: rel, Size: size, Arg: i}
			if err := checkRel(rel); err != nil {
				it.Err = &pipeline.PathError{Path: arg, Err: err}
			}
			return &one{it: it}, nil
		}
		// No such object: a prefix without its final "/", if keys are
		// under it; else the HEAD's error.
		l := objectList(i, arg, p.List(arg))
		if !l.peek() || l.first.Err != nil {
			l.close()
			return fail(urlBase(arg), err)
		}
		return l, nil
	}
	return objectList(i, arg, p.List(arg)), nil
}

// urlBase is the last element of a URL's key ("s3://b/a/x.npy":
// "x.npy"; "" for a prefix, which ends in "/", and for a bucket alone,
// which has no key: "s3://b" sorts and shards as "s3://b/" does).
func urlBase(name string) string {
	rest := name
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	j := strings.IndexByte(rest, '/')
	if j < 0 {
		return ""
	}
	key := rest[j+1:]
	return key[strings.LastIndexByte(key, '/')+1:]
}

// objectStream is the tensor objects of the listing of the argument arg,
// in its order, pulled from the place as the walk asks for them. An
// error of the listing is one failure item naming arg, and ends it.
type objectStream struct {
	arg  int
	name string
	pull func() (fileio.Entry, error, bool)
	stop func()
	skip string // keys of this prefix are not inputs (the output prefix)
	// stores: whether each directory of the listing met so far (its
	// path below the prefix, "" the prefix itself) is a store;
	// inStore: the directory of the last store given, whose keys are
	// its objects, not inputs.
	stores  map[string]bool
	inStore string
	first   *Item // an item pulled ahead (peek)
	done    bool
}

func objectList(i int, arg string, entries iter.Seq2[fileio.Entry, error]) *objectStream {
	pull, stop := iter.Pull2(entries)
	return &objectStream{arg: i, name: arg, pull: pull, stop: stop}
}

// peek pulls the first item ahead: false when the listing is empty.
func (l *objectStream) peek() bool {
	if l.first == nil {
		it, ok := l.pullItem()
		if !ok {
			return false
		}
		l.first = &it
	}
	return true
}

func (l *objectStream) close() {
	l.done = true
	l.stop()
}

func (l *objectStream) next() (Item, bool) {
	if l.first != nil {
		it := *l.first
		l.first = nil
		return it, true
	}
	return l.pullItem()
}

func (l *objectStream) pullItem() (Item, bool) {
	for !l.done {
		e, err, ok := l.pull()
		if !ok {
			l.close()
			break
		}
		if err != nil {
			l.close()
			rel := urlBase(l.name)
			return Item{Input: l.name, Rel: rel, Key: rel, Arg: l.arg, Err: &pipeline.PathError{Path: l.name, Err: err}}, true
		}
		if l.skip != "" && strings.HasPrefix(e.Name, l.skip) {
			continue
		}
		if l.inStore != "" && strings.HasPrefix(e.Rel, l.inStore) {
			continue // the rest of a store already given
		}
		if format.StoreMarker(e.Rel) != "" {
			if it, ok := l.storeItem(e); ok {
				return it, true
			}
			continue
		}
		if !IsTensorName(e.Rel) {
			continue
		}
		if it, in, ok := l.inNamedStore(e); in {
			if ok {
				return it, true
			}
			continue
		}
		it := Item{Input: e.Name, Rel: e.Rel, Key: e.Rel, Size: e.Size, Arg: l.arg}
		if err := checkRel(e.Rel); err != nil {
			it.Err = &pipeline.PathError{Path: it.Input, Err: err}
		}
		return it, true
	}
	return Item{}, false
}

// storeItem is the input of a store met by the listing at e, one of
// the objects that mark one (format.StoreMarker): the store it marks, or
// the topmost directory above it that is a store too (a group holding
// the array, whose own metadata a v3 listing gives after its members'),
// as one input that the walk does not walk into, named by its prefix. A
// local directory walk takes a store the same way (IsStore). ok is
// false for a store already given.
func (l *objectStream) storeItem(e fileio.Entry) (Item, bool) {
	base, dir := splitEntry(e)
	if l.stores == nil {
		l.stores = map[string]bool{}
	}
	l.stores[dir] = true
	root, _ := l.topStore(base, dir, func(string) bool { return true })
	return l.storeInput(base, root)
}

// inNamedStore is the input of the store a tensor-named key e lies in,
// when a directory above it is named as a store is (x.zarr/) and is one:
// a v3 store lists its zarr.json after its other keys, so such a key
// comes before the marker that would have skipped it. Only directories
// with a store's extension are asked, so that a tree of tensors costs no
// request. ok is false when e is not in such a store, or its store was
// given already.
func (l *objectStream) inNamedStore(e fileio.Entry) (it Item, in, ok bool) {
	base, dir := splitEntry(e)
	if dir == "" {
		return Item{}, false, false
	}
	root, found := l.topStore(base, dir, func(anc string) bool {
		k := format.KindByExtension(anc)
		return anc != "" && k != "" && format.StoreOf(k) != nil
	})
	if !found {
		return Item{}, false, false
	}
	it, ok = l.storeInput(base, root)
	return it, true, ok
}

// splitEntry is the listed prefix of e (with its "/") and the directory
// of its key below it ("" for the prefix itself).
func splitEntry(e fileio.Entry) (base, dir string) {
	base = strings.TrimSuffix(e.Name, e.Rel)
	dir = path.Dir(e.Rel)
	if dir == "." {
		dir = ""
	}
	return base, dir
}

// topStore is the topmost store among the directories above dir and dir
// itself that ask allows asking about, each asked once.
func (l *objectStream) topStore(base, dir string, ask func(string) bool) (string, bool) {
	for _, anc := range append(ancestors(dir), dir) {
		if is, seen := l.stores[anc]; seen && is || !seen && ask(anc) && l.isStore(base, anc) {
			return anc, true
		}
	}
	return "", false
}

// isStore says whether the directory dir of the listing is a store
// (Claims; one request or a few), and records it.
func (l *objectStream) isStore(base, dir string) bool {
	if l.stores == nil {
		l.stores = map[string]bool{}
	}
	if is, seen := l.stores[dir]; seen {
		return is
	}
	name := base
	if dir != "" {
		name += dir + "/"
	}
	d, ok := fileio.OpenDir(name)
	is := ok && format.StoreKind(d) != ""
	l.stores[dir] = is
	return is
}

// storeInput is the item of the store at root ("" the listed prefix),
// whose keys are then skipped; ok is false for one already given.
func (l *objectStream) storeInput(base, root string) (Item, bool) {
	if root == "" {
		// The prefix itself is a store: its only input.
		l.close()
		rel := storeName(l.name)
		return Item{Input: base, Rel: rel, Key: rel, Arg: l.arg}, true
	}
	if l.inStore == root+"/" {
		return Item{}, false
	}
	l.inStore = root + "/"
	it := Item{Input: base + root + "/", Rel: root, Key: root, Arg: l.arg}
	if err := checkRel(root); err != nil {
		it.Err = &pipeline.PathError{Path: it.Input, Err: err}
	}
	return it, true
}

// ancestors are the directories above dir, the prefix ("") first, dir
// left out.
func ancestors(dir string) []string {
	if dir == "" {
		return nil
	}
	out := []string{""}
	for i := 0; i < len(dir); i++ {
		if dir[i] == '/' {
			out = append(out, dir[:i])
		}
	}
	return out
}

// storeName is the name of a store that is the whole argument name
// (s3://b/data/x.zarr/: "x.zarr"; a bucket alone: its name), as a
// local store's is its directory's.
func storeName(name string) string {
	rest := strings.TrimSuffix(name, "/")
	if i := strings.Index(rest, "://"); i >= 0 {
		rest = rest[i+3:]
	}
	return path.Base(rest)
}

// checkRel refuses a relative path taken from a key, which is anything
// its writer chose: a ".." segment would put its output outside
// --out-dir, and "." or an empty segment ("a//b", "/a") would not name
// the path the key does.
func checkRel(rel string) error {
	for _, seg := range strings.Split(rel, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("its key below the prefix, %q, has an empty, \".\" or \"..\" segment: refused (its output would not be under --out-dir as that path)", rel)
		}
	}
	return nil
}

// skipOutDir keeps a prefix's walk out of an s3:// --out-dir, as a
// directory walk keeps out of the output directory: keys under the
// output prefix are not inputs (a rerun would take the outputs for
// inputs), and an input prefix that is the output prefix is refused.
func skipOutDir(src source, arg, outDir string) (source, error) {
	l, ok := src.(*objectStream)
	if !ok || !isObject(arg) || !isObject(outDir) {
		return src, nil
	}
	_, err1 := fileio.PlaceOf(arg).Parse(arg)
	_, err2 := fileio.PlaceOf(outDir).Parse(outDir)
	in, out := fileio.DirURL(arg), fileio.DirURL(outDir)
	if err1 != nil || err2 != nil {
		return src, nil
	}
	if in == out {
		l.close()
		return nil, &pipeline.PathError{Path: arg, Err: errors.New("is the output prefix too; --out-dir must be another prefix")}
	}
	l.skip = out
	if l.first != nil && strings.HasPrefix(l.first.Input, out) {
		l.first = nil
	}
	return l, nil
}

// IsDir says whether path is walked like a directory: a directory
// (symbolic links followed), or an s3:// prefix (fileio.ObjectIsDir),
// that is not a store (one input).
func IsDir(path string) bool {
	if isObject(path) {
		return fileio.ObjectIsDir(path) && !IsStore(path)
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir() && !IsStore(path)
}

// isObject: a URL of a place (s3://…), not a local path.
func isObject(p string) bool { return fileio.IsObject(p) }
