package batch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/objstore"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// objectSource is an s3:// argument: one object, or every object under
// a prefix (s3://B/P/, s3://B, or s3://B/P where no object P exists but
// keys under P/ do), walked like a directory: tensor names only,
// relative keys kept, in the byte-wise order of their keys
// (objstore.List), which is the order a directory's relative paths sort
// in. (The listing is held whole: a prefix's keys, not streamed.)
func objectSource(i int, arg string) (source, error) {
	fail := func(rel string, err error) (source, error) {
		return &one{it: item{input: arg, rel: rel, key: rel, arg: i, err: &pipeline.PathError{Path: arg, Err: err}}}, nil
	}
	u, err := objstore.ParseURL(arg)
	if err != nil {
		return fail(objstore.Base(arg), err)
	}
	s, err := objstore.Default()
	if err != nil {
		// The configuration: every object would fail the same way.
		return nil, &pipeline.PathError{Path: arg, Err: err}
	}
	ctx := context.Background()
	if !u.IsPrefix() {
		info, err := s.Stat(ctx, u)
		if err == nil {
			rel := objstore.Base(u.Key)
			return &one{it: item{input: arg, rel: rel, key: rel, size: info.Size, arg: i}}, nil
		}
		// No such object: a prefix without its final "/", if keys are
		// under it; else the HEAD's error.
		objs, lerr := s.List(ctx, u)
		if lerr != nil || len(objs) == 0 {
			return fail(objstore.Base(u.Key), err)
		}
		return objectList(i, u, objs), nil
	}
	objs, err := s.List(ctx, u)
	if err != nil {
		return fail(objstore.Base(u.Key), err)
	}
	return objectList(i, u, objs), nil
}

// objectList is the tensor objects of a listing, in its order.
func objectList(i int, u objstore.URL, objs []objstore.Object) source {
	var items []item
	for _, o := range objs {
		if IsTensorName(o.Rel) {
			items = append(items, item{input: objstore.URL{Bucket: u.Bucket, Key: o.Key}.String(), rel: o.Rel, key: o.Rel, size: o.Size, arg: i})
		}
	}
	return &itemList{items: items}
}

// itemList is a source of items already in order.
type itemList struct{ items []item }

func (l *itemList) next() (item, bool) {
	if len(l.items) == 0 {
		return item{}, false
	}
	it := l.items[0]
	l.items[0] = item{}
	l.items = l.items[1:]
	return it, true
}

// outputPath is where the output of relative path rel goes under outDir:
// a directory, or a prefix (s3://…) whose keys are rel below it.
func outputPath(outDir, rel string) string {
	if objstore.IsURL(outDir) {
		return objstore.Join(outDir, rel)
	}
	return filepath.Join(outDir, filepath.FromSlash(rel))
}

// isObject: an s3:// path, which has no directory to make or stat.
func isObject(p string) bool { return objstore.IsURL(p) }

// IsDir says whether path is walked like a directory: a directory
// (symbolic links followed), or an s3:// prefix (fileio.ObjectIsDir).
func IsDir(path string) bool {
	if isObject(path) {
		return fileio.ObjectIsDir(path)
	}
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// skipOutDir keeps a prefix's walk out of an s3:// --out-dir, as a
// directory walk keeps out of the output directory: keys under the
// output prefix are not inputs (a rerun would take the outputs for
// inputs), and an input prefix that is the output prefix is refused.
func skipOutDir(src source, arg, outDir string) (source, error) {
	l, ok := src.(*itemList)
	if !ok || !isObject(arg) || !isObject(outDir) {
		return src, nil
	}
	in, err1 := objstore.ParseURL(arg)
	out, err2 := objstore.ParseURL(outDir)
	if err1 != nil || err2 != nil || in.Bucket != out.Bucket {
		return src, nil
	}
	dirKey := func(k string) string {
		if k != "" && !strings.HasSuffix(k, "/") {
			k += "/"
		}
		return k
	}
	if dirKey(in.Key) == dirKey(out.Key) {
		return nil, &pipeline.PathError{Path: arg, Err: errors.New("is the output prefix too; --out-dir must be another prefix")}
	}
	skip := objstore.Scheme + out.Bucket + "/" + dirKey(out.Key)
	kept := l.items[:0]
	for _, it := range l.items {
		if !strings.HasPrefix(it.input, skip) {
			kept = append(kept, it)
		}
	}
	l.items = kept
	return l, nil
}
