package format

import (
	"errors"
	"fmt"
	"io"
)

// Every output is written the one way a container is (the pipeline's
// write.go): a format lays out members, and the pipeline puts each
// member's data where the layout says. A single-tensor format is a
// container of one member: a preamble followed by the data (npy, raw,
// ONNX), or a tensor encoded whole (JSON, PNG). Writers gives any
// writable format's two ways in, so the pipeline never asks which kind
// of format it writes.

// Writers returns how f's outputs are written: by position into a file
// (nil when f cannot be written so), and in order into a stream.
func Writers(f *Format) (CreateAtFunc, CreateFunc) {
	if f.Container {
		return f.CreateAt, f.Create
	}
	return f.oneAt, f.one
}

// layOutOne gives a single-tensor format its layouts of one member, made
// once at registration (a batch of small files asks for them per file).
func layOutOne(f *Format) {
	switch {
	case f.Container:
	case f.Preamble != nil:
		f.oneAt, f.one = preambleAt(f), preambleSeq(f)
	case f.Encode != nil:
		f.one = encodeSeq(f)
	}
}

// oneMember refuses a layout of other than one member to a
// single-tensor format (the pipeline never asks for one).
func oneMember(f *Format, members []MemberSpec) error {
	if len(members) != 1 {
		return fmt.Errorf("internal error: %d members for a %s output, which holds one tensor", len(members), f.Kind)
	}
	return nil
}

// preambleAt places the data after the preamble, the file sized for both
// up front.
func preambleAt(f *Format) CreateAtFunc {
	return func(out FileOut, members []MemberSpec, _ any) (PlacedWriter, error) {
		if err := oneMember(f, members); err != nil {
			return nil, err
		}
		m := members[0]
		pre, err := f.Preamble(m.Header, m.Name)
		if err != nil {
			return nil, err
		}
		if err := out.Reserve(int64(len(pre)) + m.Header.DataBytes()); err != nil {
			return nil, err
		}
		return &preamblePlaced{out: out, pre: pre}, nil
	}
}

type preamblePlaced struct {
	out FileOut
	pre []byte
}

func (p *preamblePlaced) Place(int) (int64, error) {
	if _, err := p.out.WriteAt(p.pre, 0); err != nil {
		return 0, err
	}
	return int64(len(p.pre)), nil
}
func (p *preamblePlaced) Placed(int) error { return nil }
func (p *preamblePlaced) Close() error     { return nil }

// preambleSeq writes the preamble, then hands the stream itself to the
// member's data: a caller that sees its own writer come back may write
// the data around any buffering of its own (a pipe: in large pieces,
// or with sendfile).
func preambleSeq(f *Format) CreateFunc {
	return func(w io.Writer, members []MemberSpec, _ any) (MemberWriter, error) {
		if err := oneMember(f, members); err != nil {
			return nil, err
		}
		return &preambleWriter{f: f, w: w}, nil
	}
}

type preambleWriter struct {
	f    *Format
	w    io.Writer
	done bool
}

func (p *preambleWriter) Member(name string, h Header) (io.Writer, error) {
	if p.done {
		return nil, fmt.Errorf("internal error: a second tensor in a %s output", p.f.Kind)
	}
	p.done = true
	pre, err := p.f.Preamble(h, name)
	if err != nil {
		return nil, err
	}
	if _, err := p.w.Write(pre); err != nil {
		return nil, err
	}
	return p.w, nil
}
func (p *preambleWriter) Close() error { return nil }

// encodeSeq gathers the tensor's data, which Close encodes whole.
func encodeSeq(f *Format) CreateFunc {
	return func(w io.Writer, members []MemberSpec, _ any) (MemberWriter, error) {
		if err := oneMember(f, members); err != nil {
			return nil, err
		}
		return &encodeWriter{f: f, w: w}, nil
	}
}

type encodeWriter struct {
	f    *Format
	w    io.Writer
	name string
	h    *Header
	data []byte
	n    int // bytes of data written (all of them once Gather handed them out)
}

func (e *encodeWriter) Member(name string, h Header) (io.Writer, error) {
	if _, err := e.Gather(name, h); err != nil {
		return nil, err
	}
	e.n = 0
	return (*encodeData)(e), nil
}

// Gather makes encodeWriter a Gatherer.
func (e *encodeWriter) Gather(name string, h Header) ([]byte, error) {
	if e.h != nil {
		return nil, fmt.Errorf("internal error: a second tensor in a %s output", e.f.Kind)
	}
	e.name, e.h = name, &h
	e.data = make([]byte, h.DataBytes())
	e.n = len(e.data)
	return e.data, nil
}

// encodeData takes the gathered tensor's data in order.
type encodeData encodeWriter

func (d *encodeData) Write(p []byte) (int, error) {
	if len(p) > len(d.data)-d.n {
		return 0, fmt.Errorf("internal error: more than the %d data bytes to encode", len(d.data))
	}
	d.n += copy(d.data[d.n:], p)
	return len(p), nil
}

func (e *encodeWriter) Close() error {
	if e.h == nil {
		return errors.New("internal error: no tensor to encode")
	}
	if e.n != len(e.data) {
		return fmt.Errorf("internal error: %d of %d data bytes to encode", e.n, len(e.data))
	}
	return e.f.Encode(e.w, *e.h, e.name, e.data)
}

// Gatherer is implemented by a MemberWriter that holds its tensor whole
// in memory and encodes it on Close (JSON, PNG). Gather starts the
// member, as Member does, and returns that memory, the member's exact
// size, for a caller that makes the data in place (filling all of it)
// rather than writing them in order: in order, a plan that needs a
// whole batch item first would go through a spool only to be gathered.
type Gatherer interface {
	Gather(name string, h Header) ([]byte, error)
}

// Compressor is implemented by a MemberWriter whose members are
// compressed (a deflated npz). Compressing is the cost of such an
// output, one core deflating some 25 MB/s, so the pipeline compresses
// members on several goroutines with Compress and adds them in order
// with AddCompressed.
type Compressor interface {
	// Compresses says whether this output's members are compressed.
	Compresses() bool
	// Compress writes member h, whose size data bytes it reads from
	// data, compressed to dst, and returns what AddCompressed needs:
	// the checksum and size of the uncompressed member.
	Compress(h Header, data io.Reader, size int64, dst io.Writer) (sum uint32, usize uint64, err error)
	// AddCompressed adds member name, whose compressed bytes are the
	// csize bytes of r.
	AddCompressed(name string, r io.Reader, csize int64, sum uint32, usize uint64) error
}
