package batch

import (
	"context"
	"os"
	"path/filepath"

	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/objstore"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// object adds an s3:// argument: one object, or every object under a
// prefix (s3://B/P/, s3://B, or s3://B/P where no object P exists but
// keys under P/ do), walked like a directory: tensor names only, relative
// keys kept, in the byte-wise order of their keys (objstore.List), which
// is the order a directory's relative paths sort in.
func (w *walker) object(arg string) error {
	u, err := objstore.ParseURL(arg)
	if err != nil {
		w.add(item{input: arg, rel: objstore.Base(arg), arg: w.arg, err: &pipeline.PathError{Path: arg, Err: err}})
		return nil
	}
	s, err := objstore.Default()
	if err != nil {
		// The configuration: every object would fail the same way.
		return &pipeline.PathError{Path: arg, Err: err}
	}
	ctx := context.Background()
	var objs []objstore.Object
	if u.IsPrefix() {
		if objs, err = s.List(ctx, u); err != nil {
			w.add(item{input: arg, rel: objstore.Base(u.Key), arg: w.arg, err: &pipeline.PathError{Path: arg, Err: err}})
			return nil
		}
	} else {
		info, err := s.Stat(ctx, u)
		if err == nil {
			w.add(item{input: arg, rel: objstore.Base(u.Key), size: info.Size, arg: w.arg})
			return nil
		}
		// No such object: a prefix without its final "/", if keys are
		// under it; else the HEAD's error.
		objs, lerr := s.List(ctx, u)
		if lerr != nil || len(objs) == 0 {
			w.add(item{input: arg, rel: objstore.Base(u.Key), arg: w.arg, err: &pipeline.PathError{Path: arg, Err: err}})
			return nil
		}
		return w.objects(u, objs)
	}
	return w.objects(u, objs)
}

func (w *walker) objects(u objstore.URL, objs []objstore.Object) error {
	for _, o := range objs {
		if IsTensorName(o.Rel) {
			w.add(item{input: objstore.URL{Bucket: u.Bucket, Key: o.Key}.String(), rel: o.Rel, size: o.Size, arg: w.arg})
		}
	}
	return nil
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
