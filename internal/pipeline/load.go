// Package pipeline runs one job the way data flows through depthspace:
// decode the input (package format), plan the permutation (package ops),
// run the kernel and encode the output, reading and writing through package
// fileio. Commands in internal/cli fill an Options struct and call here.
package pipeline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// Source says how to read an input.
type Source struct {
	Path  string      // "-" is standard input
	From  format.Kind // "" detects
	DType string      // --dtype
	Shape string      // --shape
	Stdin io.Reader
	// Stream lets standard input holding npy or raw data be read as it is
	// processed instead of all at once; Tensor.Stream is then set and
	// Tensor.Data is nil.
	Stream bool
	// Threads inflates that many deflated npz members at once (0: one).
	Threads int
	// Deferred leaves deflated npz members compressed until their job
	// needs them (Tensor.inflate), one member at a time: the transform
	// commands set it, so that an archive of any size is worked on in
	// bounded memory.
	Deferred bool
	// Arriving lets a large object input be worked on while it is still
	// being downloaded (fileio.OpenArriving): a streamed job reads its
	// chunks as their bytes come in, any other use of the data waits for
	// all of them (Tensor.arrived). The transform commands set it.
	Arriving bool
	// Members (--member GLOB, repeatable) selects the members of a
	// container to work on: the transforms copy the others to the output
	// unchanged, info and compare leave them out (Picked).
	Members []string
	// into, when set, is the Tensor a single-tensor input is decoded
	// into (Options.Reuse), instead of a new one.
	into *Tensor
}

// Picked keeps the tensors of a container whose names match globs (all
// of them for no globs) and closes the others; an error when none does.
func Picked(path string, ts []*Tensor, globs []string) ([]*Tensor, error) {
	if len(globs) == 0 {
		return ts, nil
	}
	if len(ts) == 1 && !ts[0].member {
		ts[0].Close()
		return nil, pathErr(path, fmt.Errorf("--member picks members of a container input (%s); this is one %s tensor", strings.Join(format.Names(format.IsContainerFormat), ", "), ts[0].Kind))
	}
	var keep []*Tensor
	var names []string
	for _, t := range ts {
		names = append(names, t.Name)
		if selected(globs, t.Name) {
			keep = append(keep, t)
		} else {
			t.Close()
		}
	}
	if len(keep) == 0 {
		return nil, pathErr(path, fmt.Errorf("--member %s matches none of its members (%s)", strings.Join(globs, " --member "), strings.Join(names, ", ")))
	}
	return keep, nil
}

// Tensor is a decoded input: its header and its element bytes, which for a
// mapped file are the mapping itself (never written to).
type Tensor struct {
	format.Header
	Kind format.Kind
	Data []byte
	// Stored is the header the tensor's bytes follow in its file, for
	// formats whose data lie in place (format.InPlace) and for members
	// stored as such files (an npy file in an npz): info shows its size
	// and version.
	Stored *format.Preamble
	stored format.Preamble // Stored's storage for a file's own header
	// Stream, when set, delivers the element data in order (standard
	// input, Source.Stream); its length is not checked until it is read.
	Stream io.Reader
	// Name is a container member's name or the name an ONNX TensorProto
	// gives itself; "" otherwise.
	Name string
	// member: the tensor is one of a container's, named Name even when
	// that is "" (an npz member may be), not an input that is one
	// tensor (a Zarr store of one array is opened as a member named "").
	member bool
	// Compressed says a container member was stored compressed (a
	// deflated npz member), so that its output is too.
	Compressed bool
	// Meta is what the tensor's container keeps besides its members
	// (format.Archive.Meta), on each member, for an output of the same
	// format.
	Meta any
	// inFile says Data are the file's own bytes, from dataOff on: big
	// jobs read them by position instead of through the mapping.
	inFile  bool
	dataOff int64
	input   *fileio.Input
	// members are the tensors of a container, while it is being loaded
	// (LoadAll hands them out); shared counts the members still open on
	// the one input they all point into.
	members []*Tensor
	shared  *sharedInput
	// lazy is a member whose data are still encoded in the file (a
	// deflated npz member, a base64 array: Source.Deferred): Data is nil
	// until inflate, or the data are read from scratch, a file of the
	// run's own they were decoded into.
	lazy    format.Lazy
	scratch *os.File
	unmap   func() error // Bring's mapping of scratch
}

// inflate brings a deferred member's data into memory.
func (t *Tensor) inflate() error {
	if t.lazy == nil || t.Data != nil {
		return nil
	}
	data, err := t.lazy.InflateData()
	if err != nil {
		return t.inflateErr(err)
	}
	t.Data = data
	return nil
}

// readsInPlace says a deferred member's data can be read by position as
// they are (its Lazy is an io.ReaderAt: a Polygraphy array decodes the
// base64 groups that hold the bytes asked for), so a job that runs in
// chunks reads it like a file, with no scratch copy.
func (t *Tensor) readsInPlace() bool {
	_, ok := t.lazy.(io.ReaderAt)
	return ok && t.Data == nil && t.scratch == nil
}

// scratchAbove: a deferred member whose data are at least this big is
// inflated into a scratch file, a smaller one into memory (no TMPDIR
// needed, and -j of them at a time stay well under 64 MiB). A variable
// for the tests, which take both paths with small members.
var scratchAbove int64 = 4 << 20

// load brings a deferred member's data in for a job that runs in chunks
// (streams) or whole: a big one for chunks into a scratch file, read
// from there by position like a file input (memory: buffers only).
func (t *Tensor) load(streams bool) error {
	if t.lazy == nil || t.Data != nil || t.scratch != nil {
		return nil
	}
	if !streams || t.DataBytes() < scratchAbove {
		return t.inflate()
	}
	f, err := fileio.Scratch()
	if err != nil {
		return &scratchError{op: "making", err: err}
	}
	if err := t.lazy.Inflate(scratchWriter{f}); err != nil {
		f.Close()
		var se *scratchError
		if errors.As(err, &se) {
			return err // ours, not the input's
		}
		return t.inflateErr(err)
	}
	t.scratch = f
	return nil
}

// inflateErr says which input and member could not be inflated.
func (t *Tensor) inflateErr(err error) error {
	return pathErr(t.input.Name, memberErr(t, err))
}

// release lets a deferred member's inflated data go once its job is done.
func (t *Tensor) release() {
	if t.lazy == nil {
		return
	}
	t.Data = nil
	if t.unmap != nil {
		t.unmap()
		t.unmap = nil
	}
	if t.scratch != nil {
		t.scratch.Close()
		t.scratch = nil
	}
}

// Bring makes a deferred npz member's Data readable (Source.Deferred),
// for a reader of whole tensors such as compare: a big one is inflated
// into a scratch file and mapped, so its pages are the page cache's and
// not this process's memory; a small one is inflated into memory.
// Release lets it go again. Nothing for other tensors.
func (t *Tensor) Bring() error {
	if t.lazy == nil || t.Data != nil {
		return nil
	}
	var se *scratchError
	if err := t.load(true); errors.As(err, &se) {
		return t.inflate() // no room in TMPDIR: in memory, as before
	} else if err != nil {
		return err
	}
	if t.scratch == nil {
		return nil // in memory
	}
	data, unmap, err := fileio.MapScratch(t.scratch, t.DataBytes())
	if err != nil {
		// No mapping here (Windows builds, a file system that refuses
		// it): in memory.
		t.release()
		return t.inflate()
	}
	t.Data, t.unmap = data, unmap
	return nil
}

// Verify inflates a deferred npz member without keeping its data, to
// check it (its length and CRC-32) when nothing else reads it.
func (t *Tensor) Verify() error {
	if t.lazy == nil || t.Data != nil {
		return nil
	}
	if err := t.lazy.Inflate(io.Discard); err != nil {
		return t.inflateErr(err)
	}
	return nil
}

// Release lets what Bring brought in go; the tensor can be brought again.
func (t *Tensor) Release() { t.release() }

// sharedInput is an input whose bytes several tensors (npz members) use:
// it is closed when the last of them is.
type sharedInput struct {
	in   *fileio.Input
	refs atomic.Int32
}

// headArrived: the bytes at the start of an object input that are in
// when OpenArriving returns (its first GET reads more).
const headArrived = 1 << 20

// arrived waits until the tensor's input is all there (an object still
// being downloaded, Source.Arriving): before a use of Data that is not
// a streamed job's reads.
func (t *Tensor) arrived() error {
	if t.input == nil {
		return nil
	}
	return t.input.Wait()
}

// file is the input's open file and the offset of its element data, for
// positioned reads; nil when the input is not a regular file.
func (t *Tensor) file() (*os.File, int64) {
	if t.scratch != nil {
		return t.scratch, 0
	}
	// Only data that are bytes of the file (npy, raw, safetensors, a
	// stored npz member: inFile) are read by position; decoded ones
	// (JSON, a deflated member) are not. A small file was read whole:
	// its bytes are used where they are, not read again.
	if t.input == nil || t.input.File == nil || !t.input.Mapped || t.Stream != nil || !t.inFile {
		return nil, 0
	}
	return t.input.File, t.input.Base + t.dataOff
}

// Close releases the input's mapping (for an npz member, once every
// member of the archive is closed).
func (t *Tensor) Close() {
	t.release()
	if t.shared != nil {
		if t.shared.refs.Add(-1) == 0 {
			t.shared.in.Close()
		}
		t.shared, t.input = nil, nil
		return
	}
	if t.input != nil {
		t.input.Close()
	}
}

// closeAll closes every tensor of a LoadAll.
func closeAll(ts []*Tensor) {
	for _, t := range ts {
		t.Close()
	}
}

// Info is the input's file information (nil for standard input).
func (t *Tensor) Info() os.FileInfo {
	if t.input == nil {
		return nil
	}
	return t.input.Info
}

// Load reads and decodes one input holding one tensor. An npz archive of
// one array gives that array; one of several arrays is refused (LoadAll
// reads them all).
func Load(src Source) (*Tensor, error) {
	t, err := load(src)
	if err != nil {
		return nil, err
	}
	if t.members == nil {
		return t, nil
	}
	if len(t.members) == 1 {
		return t.members[0], nil
	}
	names := make([]string, len(t.members))
	for i, m := range t.members {
		names[i] = m.Name
	}
	closeAll(t.members)
	return nil, pathErr(src.Path, fmt.Errorf("%s of %d arrays (%s); this command reads one tensor", containerName(t.Kind), len(names), strings.Join(names, ", ")))
}

// LoadAll reads and decodes every tensor of one input: the members of an
// npz archive, in archive order, or the one tensor of any other format.
// Every tensor returned must be closed.
func LoadAll(src Source) ([]*Tensor, error) {
	t, err := load(src)
	if err != nil {
		return nil, err
	}
	if t.members != nil {
		return t.members, nil
	}
	return []*Tensor{t}, nil
}

func load(src Source) (*Tensor, error) {
	if src.Path == "-" && src.Stream && !fileio.StdinIsFile(src.Stdin) {
		t, err := loadStream(src)
		var buffered errStdinBuffered
		switch {
		case errors.As(err, &buffered):
			src.Stdin = buffered.r // already peeked into: read it whole below
		case err != nil:
			return nil, pathErr("stdin", err)
		default:
			return t, nil
		}
	}
	// A file is opened first and a directory is then looked at as a
	// store: a stat of every input before its open was a tenth of a tiny
	// file's system calls. A place's name is looked at as a store first:
	// a store there is a prefix, which no object open finds (and a name
	// with a file format's extension costs no request to rule out).
	if fileio.IsObject(src.Path) {
		if t, ok, err := loadStore(src); ok {
			return t, err
		}
	}
	open := fileio.Open
	if src.Arriving {
		open = fileio.OpenArriving
	}
	in, err := open(src.Path, src.Stdin)
	if errors.Is(err, fileio.ErrDirectory) {
		if t, ok, err := loadStore(src); ok {
			return t, err
		}
	}
	if err != nil {
		return nil, pathErr(src.Path, err)
	}
	t, err := decode(src, in)
	if err != nil {
		in.Close()
		return nil, pathErr(src.Path, err)
	}
	return t, nil
}

func decode(src Source, in *fileio.Input) (*Tensor, error) {
	kind := src.From
	if kind == "" && src.Path != "-" {
		if err := format.ExtensionError(src.Path); err != nil {
			return nil, err
		}
	}
	if kind == "" {
		kind = format.Detect(src.Path, in.Data)
	}
	if kind == "" {
		if f := format.BareFormat(); f != nil && src.DType != "" && src.Shape != "" {
			kind = f.Kind
		} else if len(in.Data) == 0 {
			return nil, errors.New("empty input")
		} else {
			return nil, unknownFormat()
		}
	}
	d, err := src.description()
	if err != nil {
		return nil, err
	}
	t := src.into
	if t == nil {
		t = new(Tensor)
	}
	*t = Tensor{Kind: kind, input: in}
	f := format.Lookup(kind)
	if f == nil || f.InPlace == nil {
		// Decoded whole: every byte first (an object still arriving).
		if err := in.Wait(); err != nil {
			return nil, err
		}
	}
	switch {
	case f == nil:
		return nil, fmt.Errorf("unknown format %q", kind)
	case f.InPlace != nil:
		p, err := f.InPlace.Parse(in.Data, int64(len(in.Data)), d)
		if in.Arriving() != nil && (err != nil || p.DataOffset > headArrived) {
			// A header longer than the object's first GET may not be
			// in yet: parsed again once everything is.
			if err := in.Wait(); err != nil {
				return nil, err
			}
			p, err = f.InPlace.Parse(in.Data, int64(len(in.Data)), d)
		}
		if err != nil {
			return nil, err
		}
		t.Header, t.stored = p.Header, p
		t.Stored = &t.stored
		t.Data, t.dataOff, t.inFile = in.Data[p.DataOffset:], p.DataOffset, true
	case f.Shard != nil:
		return decodeShard(f, src, in)
	case f.Store != nil:
		what := "this input is a file"
		if src.Path == "-" {
			what = "standard input is not one"
		}
		return nil, fmt.Errorf("--from %s reads a directory (%s); %s", f.Kind, f.Noun, what)
	case f.Open != nil:
		// A container (npz, safetensors, and any format registered with
		// Open).
		return decodeArchive(f, src, in, d.DType, d.Shape)
	case f.Decode == nil:
		return nil, fmt.Errorf("unknown format %q", kind)
	default:
		// A single-tensor format that decodes (JSON, ONNX, PNG, and any
		// format registered with Decode).
		h, data, name, err := f.Decode(in.Data, d.DType)
		if err != nil {
			return nil, err
		}
		if d.Shape != nil && format.ShapeString(d.Shape) != format.ShapeString(h.Shape) {
			return nil, fmt.Errorf("--shape %s does not match the shape of the %s tensor, %s", format.ShapeString(d.Shape), kind, format.ShapeString(h.Shape))
		}
		t.Header, t.Data, t.Name = h, data, name
	}
	return t, nil
}

// description reads --dtype and --shape.
func (src Source) description() (format.Description, error) {
	var d format.Description
	if src.DType != "" {
		dt, err := format.ParseDType(src.DType)
		if err != nil {
			return d, err
		}
		d.DType = &dt
	}
	if src.Shape != "" {
		s, err := format.ParseShape(src.Shape)
		if err != nil {
			return d, err
		}
		d.Shape = s
	}
	return d, nil
}

// loadStream reads the npy header (or takes the raw description) of
// standard input and leaves the data to be streamed. For JSON, which must
// be read whole, it returns nil and Load reads everything as usual.
func loadStream(src Source) (*Tensor, error) {
	if f, ok := src.Stdin.(*os.File); ok {
		growPipe(f)
	}
	br := bufio.NewReaderSize(src.Stdin, 1<<16)
	src.Stdin = br
	head, _ := br.Peek(16)
	kind := src.From
	if kind == "" {
		kind = format.Sniff(head)
	}
	if f := format.BareFormat(); kind == "" && f != nil && src.DType != "" && src.Shape != "" {
		kind = f.Kind
	}
	f := format.Lookup(kind)
	if f == nil || f.InPlace == nil {
		// Not streamable: hand the buffered reader back for a whole read.
		return nil, errStdinBuffered{br}
	}
	d, err := src.description()
	if err != nil {
		return nil, err
	}
	p, err := f.InPlace.Read(br, d)
	if err != nil {
		return nil, err
	}
	return &Tensor{Header: p.Header, Kind: kind, Stored: &p, Stream: br}, nil
}

// errStdinBuffered carries the buffered standard input back to Load.
type errStdinBuffered struct{ r io.Reader }

func (errStdinBuffered) Error() string { return "internal: stdin buffered" }

// decodeArchive opens a container with its format's Open: one tensor
// per member, all sharing the input (a member's data may be a slice of
// its mapping).
func decodeArchive(f *format.Format, src Source, in *fileio.Input, want *format.DType, shape []int) (*Tensor, error) {
	opt := format.OpenOptions{Threads: src.Threads, Deferred: src.Deferred}
	if in.File != nil {
		opt.File = io.NewSectionReader(in.File, in.Base, int64(len(in.Data)))
	}
	ar, err := f.Open(in.Data, opt)
	if err != nil {
		return nil, err
	}
	return archiveTensors(f, ar, in, want, shape)
}

// archiveTensors makes a tensor of each member of an opened container,
// all sharing the input.
func archiveTensors(f *format.Format, ar *format.Archive, in *fileio.Input, want *format.DType, shape []int) (*Tensor, error) {
	var err error
	if len(ar.Members) == 0 {
		return nil, fmt.Errorf("%s with no tensors", strings.TrimPrefix(containerName(f.Kind), "is "))
	}
	sh := &sharedInput{in: in}
	container := &Tensor{Kind: f.Kind}
	for i := range ar.Members {
		m := &ar.Members[i]
		h := m.Header
		if want != nil {
			if h.DType, err = want.Reinterpret(h.DType); err != nil {
				return nil, fmt.Errorf("%s member %q: %w", f.Kind, m.Name, err)
			}
		}
		if shape != nil && format.ShapeString(shape) != format.ShapeString(h.Shape) {
			return nil, fmt.Errorf("%s member %q: --shape %s does not match its shape %s", f.Kind, m.Name, format.ShapeString(shape), format.ShapeString(h.Shape))
		}
		var stored *format.Preamble
		if m.Stored != nil {
			n := *m.Stored
			n.Header = h
			stored = &n
		}
		container.members = append(container.members, &Tensor{
			Header: h, Kind: f.Kind, Data: m.Data, Stored: stored, Name: m.Name,
			Compressed: m.Compressed, Meta: ar.Meta, inFile: m.InFile, dataOff: m.Offset,
			lazy: m.Lazy, input: in, shared: sh, member: f.Store == nil || len(ar.Members) > 1 || m.Name != "",
		})
	}
	sh.refs.Store(int32(len(container.members)))
	return container, nil
}

// unknownFormat is the error for an input no format claims by its
// extension or its first bytes.
func unknownFormat() error {
	by := format.Names(func(f *format.Format) bool { return f.Sniff != nil })
	msg := fmt.Sprintf("cannot tell the format (its first bytes are not those of %s); use --from", format.Either(by))
	if f := format.BareFormat(); f != nil {
		msg += fmt.Sprintf(", or --dtype and --shape for %s data", f.Kind)
	}
	return errors.New(msg)
}

// containerName says what a container input is, for messages.
func containerName(k format.Kind) string {
	if f := format.Lookup(k); f != nil && f.Noun != "" {
		return "is " + f.Noun
	}
	return "is a " + string(k) + " file"
}
