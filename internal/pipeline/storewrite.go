package pipeline

import (
	"errors"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// writeStore writes jobs as a store (a directory: format.StoreFormat),
// its members in order as into a container of members, built beside the
// target and put in its place at the end; a store already there is
// replaced only then, and anything else there is refused before any
// work.
func writeStore(d dest, f *format.Format, sf *format.StoreFormat, jobs []MemberJob) (*Result, error) {
	out, err := fileio.CreateDir(d.path, func(dir *fileio.Dir) bool { return format.StoreKind(dir) != "" })
	if err != nil {
		return nil, pathErr(displayName(d.path), err)
	}
	specs := make([]format.MemberSpec, len(jobs))
	for i, j := range jobs {
		specs[i] = format.MemberSpec{Name: j.Name, Header: j.Header, Compressed: j.Compressed}
	}
	var meta any
	if len(jobs) > 0 && jobs[0].From == f.Kind {
		meta = jobs[0].Meta
	}
	err = func() error {
		mw, err := sf.Create(out, specs, meta, d.store)
		if err != nil {
			return err
		}
		w := &writing{f: f, jobs: jobs, limit: d.limit}
		if err := w.inOrder(nil, mw); err != nil {
			return err
		}
		return mw.Close()
	}()
	if err == nil {
		err = out.Commit()
	} else {
		out.Abort()
	}
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, pathErr(displayName(d.path), err)
	}
	res := &Result{Output: d.path}
	for _, j := range jobs {
		res.add(j.Result)
	}
	res.describeFirst()
	return res, nil
}
