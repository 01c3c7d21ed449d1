package pipeline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// A shard is an archive of files of the other formats (a WebDataset tar
// of samples: 000123.input.npy, 000123.cls, 000123.json, …). Its format's
// package reads and writes the archive (format.ShardFormat), one member
// at a time, in one pass, from a file or a pipe to a file or a pipe; the
// job runs here on each tensor member it hands over (shardWork), in the
// member's own format. Names are never used as paths: a member called
// ../x.npy is worked on and written back into the output under the same
// name, never to the file system.

// shardKind names the format of the job's input when it is a shard
// (format.Format.Shard), or "": --from, the extension, or the first bytes
// of a regular file.
func shardKind(opts Options) format.Kind {
	isShard := func(k format.Kind) format.Kind {
		if f := format.Lookup(k); f != nil && f.Shard != nil {
			return k
		}
		return ""
	}
	switch {
	case opts.From != "":
		return isShard(opts.From)
	case opts.Path == "-":
		return "" // a piped shard needs --from
	}
	if k := format.KindByExtension(opts.Path); k != "" {
		return isShard(k)
	}
	// Only a regular file is sniffed here: reading a pipe named by a path
	// (<(cmd), /dev/stdin, a FIFO) would take bytes the job then lacks,
	// and opening a FIFO again would wait for a writer that has gone. A
	// piped shard needs --from, as on standard input.
	if fi, err := os.Stat(opts.Path); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	f, err := os.Open(opts.Path)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	return isShard(format.Sniff(head[:n]))
}

// transformShard runs opts on every tensor member of a shard.
func transformShard(opts Options, shard format.Kind) (*Result, error) {
	f := format.Lookup(shard)
	to := outputKind(opts.To, opts.Output, shard)
	if to != shard {
		return nil, pathErr(opts.Path, fmt.Errorf("is %s; its output is %s too (an output named OUT%s), not %s", f.Noun, f.Noun, f.Exts[0], to))
	}
	if opts.Output == "-" && opts.StdoutTTY {
		return nil, pathErr("stdout", fmt.Errorf("refusing to write a binary %s to a terminal; use -o FILE or a redirect", shard))
	}
	// A shard in a file is mapped (or, when small, read once): members
	// are slices of it, and the codec skips the ones it does not need to
	// read. A pipe is read as a stream, one member at a time.
	var r io.Reader
	var all []byte
	drop := func(int64) {}
	if opts.Path == "-" && !fileio.StdinIsFile(opts.Stdin) {
		r = opts.Stdin
	} else {
		in, err := fileio.Open(opts.Path, opts.Stdin)
		if err != nil {
			return nil, pathErr(displayInput(opts.Path), err)
		}
		defer in.Close()
		if o, err := os.Stat(opts.Output); err == nil && opts.Output != "-" && in.Info != nil && fileio.SameFile(in.Info, o) {
			return nil, pathErr(opts.Output, fileio.ErrIsInput)
		}
		all, drop = in.Data, in.Drop
		r = bytes.NewReader(all)
	}
	out, err := fileio.Create(opts.Output, opts.Stdout)
	if err != nil {
		return nil, pathErr(opts.Output, err)
	}
	if all != nil {
		// Most jobs keep every member's size: blocks reserved for the
		// shard's size spare ext4 the flush of delayed allocations it
		// does when a file is renamed over another (Commit trims what
		// is not used).
		out.Expect(int64(len(all)))
	}
	res, err := copyShard(opts, f, r, all, drop, out)
	if err != nil {
		out.Abort()
		return nil, err
	}
	if err := out.Commit(); err != nil {
		return nil, pathErr(displayName(opts.Output), err)
	}
	res.Written = out.Size()
	return res, nil
}

// copyShard reads the shard of format f from r — all, when not nil,
// being its whole content, from which r reads, and drop telling it how
// much of all is done with — and writes the result to w, through f's
// codec.
func copyShard(opts Options, f *format.Format, r io.Reader, all []byte, drop func(int64), w io.Writer) (*Result, error) {
	work := &shardWork{opts: opts, plans: map[string]*ops.Plan{}, res: &Result{Input: opts.Path, Output: opts.Output}}
	_, err := f.Shard.Copy(format.ShardJob{In: r, All: all, Drop: drop, Out: w, Members: opts.Members, Work: work})
	if err != nil {
		var oe *format.ShardOutputError
		if errors.As(err, &oe) {
			return nil, pathErr(displayName(opts.Output), oe.Err)
		}
		return nil, pathErr(displayInput(opts.Path), err)
	}
	res := work.res
	first := res.Members[0]
	res.InShape, res.OutShape, res.DType = first.InShape, first.OutShape, first.DType
	return res, nil
}

// shardWork is the job on a shard's tensor members (format.MemberWork):
// the plans are kept per dtype and shape for the thousands of members of
// a shard that share them, and each member's result is counted in res.
type shardWork struct {
	opts  Options
	plans map[string]*ops.Plan
	res   *Result
}

// Sized prepares the common member, a C-order tensor of the format the
// shard works on by default (format.Format.ShardDefault) with its data in
// place, without the machinery a large file needs: one kernel call into
// the output. ok is false where it does not apply (a crop or a pad, a
// Fortran-order tensor, --dtype or --shape, another format): Whole then
// takes the general path.
func (w *shardWork) Sized(name string, data []byte) (size int, fill func(dst []byte) error, ok bool, err error) {
	opts := w.opts
	f := format.Lookup(format.KindByExtension(name))
	if f == nil || !f.ShardDefault || f.InPlace == nil || f.InPlace.Member == nil || opts.DType != "" || opts.Shape != "" {
		return 0, nil, false, nil
	}
	in, err := f.InPlace.Parse(data, int64(len(data)), format.Description{})
	if err != nil || in.Fortran {
		return 0, nil, false, nil // the general path says what is wrong
	}
	key := in.DType.Descr() + format.ShapeString(in.Shape)
	p := w.plans[key]
	if p == nil {
		t := &Tensor{Header: in.Header, Kind: f.Kind}
		if p, err = opts.plan(t); err != nil {
			return 0, nil, false, err
		}
		if p.Bytes() != p.InBytes() || !p.Streams() {
			return 0, nil, false, nil // a crop or pad: the general path
		}
		w.plans[key] = p
	}
	pre := f.InPlace.Member(format.Header{DType: in.DType, Shape: p.Out})
	src := data[in.DataOffset:]
	w.res.add(&Result{Input: opts.Path, Output: opts.Output, Name: name, InShape: in.Shape, OutShape: p.Out,
		DType: in.DType.Name(), Bytes: int64(p.Bytes())})
	return len(pre) + p.Bytes(), func(dst []byte) error {
		copy(dst, pre)
		return p.Run(dst[len(pre):], src, 1)
	}, true, nil
}

// Whole runs the job on one member's bytes, in the member's own format
// (its extension, else its content), and returns the new bytes. A member
// of a format depthspace reads but does not write (a DNG) is written in
// the Plain format, under a new name (renamedMember).
func (w *shardWork) Whole(name string, data []byte) ([]byte, string, error) {
	b, r, err := transformMember(w.opts, name, data, nil)
	if err != nil {
		return nil, "", err
	}
	w.res.add(r)
	return b, r.Name, nil
}

// transformMember runs the job on one member's bytes, in the member's own
// format (its extension, else its content), and returns the new bytes
// (in out's storage when it is large enough). A member of a format
// depthspace reads but does not write (a DNG) is written as npy, and the
// result's Name is then its new name (renamedMember).
func transformMember(opts Options, name string, data, out []byte) ([]byte, *Result, error) {
	sub := opts
	sub.Path = name
	sub.Members = nil // --member chose this file; inside it, every tensor
	kind := format.KindByExtension(name)
	if kind == "" {
		kind = format.Sniff(data)
	}
	if f := format.Lookup(kind); f == nil || !format.ReadsAlone(f) {
		return nil, nil, fmt.Errorf("is not a tensor file depthspace reads by itself (%s)", strings.Join(format.Names(format.ReadsAlone), ", "))
	}
	sub.From, sub.To = kind, kind
	outName := name
	if plain := format.Plain(); !format.Writable(format.Lookup(kind)) && plain != nil {
		sub.To, outName = plain.Kind, renamedMember(name, plain)
	}
	t, err := decode(sub.Source, &fileio.Input{Data: data})
	if err != nil {
		return nil, nil, err
	}
	ts := []*Tensor{t}
	if t.members != nil {
		ts = t.members
	}
	buf := bytes.NewBuffer(out)
	sub.Output, sub.Stdout, sub.StdoutTTY, sub.Note = "-", buf, false, nil
	r, err := transformTensors(sub, ts)
	if err != nil {
		var pe *PathError
		if errors.As(err, &pe) {
			err = pe.Err // the member's name is said by the caller
		}
		return nil, nil, err
	}
	r.Input, r.Output, r.Name = opts.Path, opts.Output, outName
	return buf.Bytes(), r, nil
}

// renamedMember is the name of a read-only member written in the Plain
// format: its last extension replaced, "000.raw.dng" → "000.raw.npy", so
// that it stays in its WebDataset sample (the key before the first dot).
func renamedMember(name string, to *format.Format) string {
	return strings.TrimSuffix(name, path.Ext(name)) + to.Exts[0]
}

// decodeShard reads the tensor members of a shard for the commands that
// read tensors (info, compare), through its format's codec: each named
// by its member name (an npz or safetensors member's tensors as
// MEMBER/NAME). Their data are slices of the mapped shard where the
// format stores bytes as they are (npy, safetensors).
func decodeShard(f *format.Format, src Source, in *fileio.Input) (*Tensor, error) {
	sh := &sharedInput{in: in}
	container := &Tensor{Kind: f.Kind}
	err := f.Shard.Members(in.Data, func(sm format.ShardMember) (int, error) {
		data := in.Data[sm.Off : sm.Off+sm.Size : sm.Off+sm.Size]
		msrc := src
		msrc.Path, msrc.From = sm.Name, sm.Kind
		t, err := decode(msrc, &fileio.Input{Data: data})
		if err != nil {
			return 0, err
		}
		ts := []*Tensor{t}
		if t.members != nil {
			ts = t.members
			for _, m := range ts {
				m.Name = sm.Name + "/" + m.Name
			}
		} else {
			t.Name = sm.Name
		}
		for _, m := range ts {
			// The member's data is in the shard's file, sm.Off bytes in.
			m.input, m.shared, m.Stream, m.member = in, sh, nil, true
			m.dataOff += sm.Off
			container.members = append(container.members, m)
		}
		return len(ts), nil
	})
	if err != nil {
		return nil, err
	}
	sh.refs.Store(int32(len(container.members)))
	return container, nil
}
