package pipeline

import (
	"archive/tar"
	"bufio"
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

// WebDataset shards: a tar of samples (000123.input.npy, 000123.cls,
// 000123.json, …). The job runs on the tensor members — the .npy files
// by default, the ones --member picks otherwise (.png and .safetensors
// included) — each in its own format; every other member is copied
// through byte for byte. The output keeps every member's name, order,
// mode, owner and time. The archive is read and written in one pass, from
// a file or a pipe to a file or a pipe, one member at a time: memory holds
// one member, whatever the size of the shard.
//
// Names are never used as paths: a member called ../x.npy is worked on and
// written back into the output tar under the same name, never to the file
// system.

// isTar reports whether the job's input is a tar shard: --from tar, the
// .tar extension, or a file with the ustar magic.
func isTar(opts Options) bool {
	switch {
	case opts.From != "":
		return opts.From == format.KindTar
	case opts.Path == "-":
		return false // a piped tar needs --from tar
	case format.KindByExtension(opts.Path) != "":
		return format.KindByExtension(opts.Path) == format.KindTar
	}
	f, err := os.Open(opts.Path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := io.ReadFull(f, head)
	return format.SniffTar(head[:n])
}

// transformTar runs opts on every tensor member of a tar shard.
func transformTar(opts Options) (*Result, error) {
	to := outputKind(opts.To, opts.Output, format.KindTar)
	if to != format.KindTar {
		return nil, pathErr(opts.Path, fmt.Errorf("is a tar shard; its output is a tar shard too (-o OUT.tar), not %s", to))
	}
	if opts.Output == "-" && opts.StdoutTTY {
		return nil, pathErr("stdout", errors.New("refusing to write a binary tar to a terminal; use -o FILE or a redirect"))
	}
	var r io.Reader
	if opts.Path == "-" {
		r = opts.Stdin
	} else {
		f, err := os.Open(opts.Path)
		if err != nil {
			return nil, pathErr(opts.Path, err)
		}
		defer f.Close()
		r = f
		if o, err := os.Stat(opts.Output); err == nil && opts.Output != "-" {
			if in, err := f.Stat(); err == nil && os.SameFile(in, o) {
				return nil, pathErr(opts.Output, errors.New("is the input file (or a link to it); write the result to another path"))
			}
		}
	}
	out, err := fileio.Create(opts.Output, opts.Stdout)
	if err != nil {
		return nil, pathErr(opts.Output, err)
	}
	res, err := copyTar(opts, r, out)
	if err != nil {
		out.Abort()
		return nil, err
	}
	if err := out.Commit(); err != nil {
		return nil, pathErr(displayName(opts.Output), err)
	}
	return res, nil
}

// maxTarMember bounds one tensor member held in memory.
const maxTarMember = 16 << 30

func copyTar(opts Options, r io.Reader, w io.Writer) (*Result, error) {
	name := displayInput(opts.Path)
	// Buffered both ways: a shard is thousands of small members, and
	// archive/tar reads and writes in 512-byte blocks.
	tr := tar.NewReader(bufio.NewReaderSize(r, 1<<20))
	bw := bufio.NewWriterSize(w, 1<<20)
	tw := tar.NewWriter(bw)
	var in, out []byte // reused across members
	plans := map[string]*ops.Plan{}
	res := &Result{Input: opts.Path, Output: opts.Output}
	worked := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, pathErr(name, tarErr(err))
		}
		if hdr.Typeflag != tar.TypeReg || !isTensorMember(opts.Members, hdr.Name) {
			if err := tw.WriteHeader(hdr); err != nil {
				return nil, pathErr(name, err)
			}
			if _, err := io.Copy(tw, tr); err != nil {
				return nil, pathErr(name, fmt.Errorf("member %q: %w", hdr.Name, tarErr(err)))
			}
			continue
		}
		if hdr.Size > maxTarMember {
			return nil, pathErr(name, fmt.Errorf("member %q claims %d bytes: more than one member may hold (%d)", hdr.Name, hdr.Size, int64(maxTarMember)))
		}
		data, err := readMember(tr, hdr.Size, in[:0])
		if err != nil {
			return nil, pathErr(name, fmt.Errorf("member %q: %w", hdr.Name, tarErr(err)))
		}
		in = data
		b, mres, ok, err := npyMember(opts, plans, hdr.Name, data, out[:0])
		if !ok && err == nil {
			b, mres, err = transformMember(opts, hdr.Name, data, out[:0])
		}
		if err != nil {
			return nil, pathErr(name, fmt.Errorf("member %q: %w", hdr.Name, err))
		}
		h := *hdr
		h.Size = int64(len(b))
		if err := tw.WriteHeader(&h); err != nil {
			return nil, pathErr(name, err)
		}
		if _, err := tw.Write(b); err != nil {
			return nil, pathErr(name, err)
		}
		out = b
		worked++
		res.Members = append(res.Members, mres)
		res.Bytes += mres.Bytes
	}
	if worked == 0 {
		what := "no .npy member"
		if len(opts.Members) > 0 {
			what = "no member matching --member " + strings.Join(opts.Members, " --member ")
		}
		return nil, pathErr(name, fmt.Errorf("the tar shard has %s: nothing to do", what))
	}
	if err := tw.Close(); err != nil {
		return nil, pathErr(name, err)
	}
	if err := bw.Flush(); err != nil {
		return nil, pathErr(name, err)
	}
	first := res.Members[0]
	res.InShape, res.OutShape, res.DType = first.InShape, first.OutShape, first.DType
	return res, nil
}

// isTensorMember says whether a regular member is worked on: .npy members
// by default, those --member picks (by name or base name) otherwise.
func isTensorMember(globs []string, name string) bool {
	if len(globs) == 0 {
		return strings.HasSuffix(strings.ToLower(name), ".npy")
	}
	return selected(globs, name) || selected(globs, path.Base(name))
}

// readMember reads a member of size bytes into buf's storage. What is
// read is what is there, never what the header claims: a buffer is sized
// from the claim only up to 64 MiB, beyond that it grows with the bytes
// read, so a lying size ends in "truncated", not in a large allocation.
func readMember(r io.Reader, size int64, buf []byte) ([]byte, error) {
	const trusted = 64 << 20
	if size <= trusted {
		if int64(cap(buf)) < size {
			buf = make([]byte, size)
		}
		buf = buf[:size]
		_, err := io.ReadFull(r, buf)
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return buf, err
	}
	data, err := io.ReadAll(io.LimitReader(r, size))
	if err == nil && int64(len(data)) != size {
		err = io.ErrUnexpectedEOF
	}
	return data, err
}

// npyMember is transformMember for the common member, a C-order npy
// tensor of an operator job, without the machinery a large file needs:
// one kernel call into the member's output buffer, the plan kept per
// dtype and shape for the thousands of members of a shard that share
// them. ok is false where it does not apply (the caller then takes the
// general path).
func npyMember(opts Options, plans map[string]*ops.Plan, name string, data, out []byte) (b []byte, res *Result, ok bool, err error) {
	if !strings.HasSuffix(strings.ToLower(name), ".npy") || opts.DType != "" || opts.Shape != "" {
		return nil, nil, false, nil
	}
	npy, err := format.ParseNpy(data)
	if err != nil || npy.Fortran || int64(len(data))-npy.DataOffset != npy.DataBytes() {
		return nil, nil, false, nil // the general path says what is wrong
	}
	key := npy.DType.Descr() + format.ShapeString(npy.Shape)
	p := plans[key]
	if p == nil {
		t := &Tensor{Header: npy.Header, Kind: format.KindNpy}
		if p, err = opts.plan(t); err != nil {
			return nil, nil, false, err
		}
		if p.Bytes() != p.InBytes() || !p.Streams() {
			return nil, nil, false, nil // a crop or pad: the general path
		}
		plans[key] = p
	}
	h := format.Header{DType: npy.DType, Shape: p.Out}
	pre := format.EncodeNpy(h)
	n := len(pre) + p.Bytes()
	if cap(out) < n {
		out = make([]byte, n)
	}
	out = out[:n]
	copy(out, pre)
	if err := p.Run(out[len(pre):], data[npy.DataOffset:], 1); err != nil {
		return nil, nil, false, err
	}
	return out, &Result{Input: opts.Path, Output: opts.Output, Name: name, InShape: npy.Shape, OutShape: p.Out,
		DType: npy.DType.Name(), Bytes: int64(p.Bytes())}, true, nil
}

// transformMember runs the job on one member's bytes, in the member's own
// format (its extension, else its content), and returns the new bytes
// (in out's storage when it is large enough).
func transformMember(opts Options, name string, data, out []byte) ([]byte, *Result, error) {
	sub := opts
	sub.Path = name
	sub.Members = nil // --member chose this file; inside it, every tensor
	kind := format.KindByExtension(name)
	if kind == "" {
		kind = format.Sniff(data)
	}
	if kind == "" || kind == format.KindTar || kind == format.KindRaw {
		return nil, nil, errors.New("is not a tensor file depthspace reads by itself (npy, json, npz, safetensors, png, onnx)")
	}
	sub.From, sub.To = kind, kind
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
	r.Input, r.Output, r.Name = opts.Path, opts.Output, name
	return buf.Bytes(), r, nil
}

func tarErr(err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return errors.New("truncated tar archive")
	}
	if errors.Is(err, tar.ErrHeader) {
		return errors.New("not a valid tar archive (bad header)")
	}
	return err
}

// decodeTar reads the tensor members of a tar shard for the commands that
// read tensors (info, compare): every regular .npy, .npz, .safetensors and
// .png member (a WebDataset .json is metadata), named by its member name
// (an npz or safetensors member's tensors as MEMBER/NAME). Their data are slices of the mapped
// shard where the format stores bytes as they are (npy, safetensors).
func decodeTar(src Source, in *fileio.Input) (*Tensor, error) {
	cr := &countingReader{r: bytes.NewReader(in.Data)}
	tr := tar.NewReader(cr)
	sh := &sharedInput{in: in}
	container := &Tensor{Kind: format.KindTar}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, tarErr(err)
		}
		kind := format.KindByExtension(hdr.Name)
		switch {
		case hdr.Typeflag != tar.TypeReg:
			continue
		case kind == format.KindNpy, kind == format.KindNpz, kind == format.KindSafetensors, kind == format.KindPNG:
		default:
			continue
		}
		if hdr.Size > int64(len(in.Data))-cr.n {
			return nil, fmt.Errorf("member %q: truncated tar archive", hdr.Name)
		}
		data := in.Data[cr.n : cr.n+hdr.Size : cr.n+hdr.Size]
		msrc := src
		msrc.Path, msrc.From = hdr.Name, kind
		t, err := decode(msrc, &fileio.Input{Data: data})
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", hdr.Name, err)
		}
		ts := []*Tensor{t}
		if t.members != nil {
			ts = t.members
			for _, m := range ts {
				m.Name = hdr.Name + "/" + m.Name
			}
		} else {
			t.Name = hdr.Name
		}
		for _, m := range ts {
			// The member's data is in the shard's file, cr.n bytes in.
			m.input, m.shared, m.Stream = in, sh, nil
			m.dataOff += cr.n
			container.members = append(container.members, m)
		}
	}
	if len(container.members) == 0 {
		return nil, errors.New("the tar shard holds no tensor member (.npy, .npz, .safetensors, .png)")
	}
	sh.refs.Store(int32(len(container.members)))
	return container, nil
}

// countingReader counts the bytes read through it: after tar's Next, the
// position of the member's content in the shard.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
