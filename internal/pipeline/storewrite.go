package pipeline

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// writeStore writes jobs as a store (a directory: format.StoreFormat),
// its members in order as into a container of members, built beside the
// target and put in its place at the end; a store already there is
// replaced only then, and anything else there is refused before any
// work. On an s3:// prefix, which has no rename, its metadata objects go
// last instead (fileio.CreateStore).
func writeStore(d dest, f *format.Format, sf *format.StoreFormat, jobs []MemberJob) (*Result, error) {
	for _, j := range jobs {
		if err := storeNotInput(d.path, j.Input); err != nil {
			return nil, err
		}
	}
	isMeta := func(key string) bool { return format.StoreMarker(key) != "" }
	out, err := fileio.CreateStore(d.path, func(dir *fileio.Dir) bool { return format.StoreKind(dir) != "" }, isMeta)
	if err != nil {
		return nil, pathErr(displayName(d.path), err)
	}
	specs := make([]format.MemberSpec, len(jobs))
	for i, j := range jobs {
		specs[i] = format.MemberSpec{Name: j.Name, Header: j.Header, Compressed: j.Compressed}
	}
	var meta any
	if len(jobs) > 0 && jobs[0].From == f.Kind {
		meta = keptChunks(jobs[0].Meta, jobs)
	}
	err = func() error {
		mw, err := sf.Create(out, specs, meta, d.store)
		if err != nil {
			return err
		}
		// Each member chunk to chunk where it can be (storechunks.go),
		// else its bytes in order.
		for i := range jobs {
			w := &writing{f: f, jobs: jobs[i : i+1], limit: d.limit}
			if done, err := w.byChunks(&jobs[i], mw); err != nil {
				return err
			} else if done {
				continue
			}
			if err := w.inOrder(nil, mw); err != nil {
				return err
			}
		}
		return mw.Close()
	}()
	if err == nil {
		err = out.Commit()
	} else {
		err = out.Abandon(err)
	}
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, pathErr(displayName(d.path), err)
	}
	res := &Result{Output: d.path, Written: out.Written()}
	for _, j := range jobs {
		res.add(j.Result)
	}
	res.describeFirst()
	return res, nil
}

// storeNotInput refuses a store output that is its input directory (or
// a link to it), or lies inside it: the store is replaced at the end, or
// changed while it is read. A file output over its input is refused the
// same way (checkNotInput).
func storeNotInput(out, input string) error {
	if fileio.IsObject(out) || fileio.IsObject(input) {
		if !fileio.IsObject(out) || !fileio.IsObject(input) {
			return nil
		}
		o, in := fileio.DirURL(out), fileio.DirURL(input)
		switch {
		case o == in:
			return pathErr(out, errors.New("is the input store; write the result to another prefix"))
		case strings.HasPrefix(o, in):
			return pathErr(out, fmt.Errorf("is inside the input %s; write the result to another prefix", input))
		}
		return nil
	}
	if input == "" || input == "-" {
		return nil
	}
	in, err := filepath.EvalSymlinks(input)
	if err != nil {
		return nil // not a path here: the read said so already
	}
	in, _ = filepath.Abs(in)
	o, err := resolveOutput(out)
	if err != nil {
		return nil
	}
	switch {
	case o == in:
		return pathErr(out, errors.New("is the input store (or a link to it); write the result to another path"))
	case strings.HasPrefix(o, in+string(filepath.Separator)):
		return pathErr(out, fmt.Errorf("is inside the input %s; write the result to another path", input))
	}
	return nil
}

// resolveOutput is out as an absolute path with its links resolved, as
// far as it exists (an output store need not exist yet).
func resolveOutput(out string) (string, error) {
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	var rest []string
	for p := abs; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		if filepath.Dir(p) == p {
			return abs, nil
		}
		rest = append([]string{filepath.Base(p)}, rest...)
	}
}
