package pipeline

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// Options is one space-to-depth or depth-to-space job.
type Options struct {
	Request ops.Request
	Source
	Output    string      // "-" is standard output
	To        format.Kind // "" keeps the input's format (or follows -o's extension)
	Threads   int
	Stdout    io.Writer
	StdoutTTY bool // binary output to a terminal is refused
	// BufferLimit is the largest output buffer kept in memory on the
	// non-streaming path (JSON output, Fortran-order input); bigger results
	// go to a mapped file. Zero means DefaultBufferLimit.
	BufferLimit int
	// ChunkBytes is the chunk size of a streamed run (DefaultChunkBytes).
	ChunkBytes int
	// Progress, when set, is told the tensor data bytes done as a streamed
	// run finishes its chunks (from any goroutine), so that a batch can
	// show progress inside a large file.
	Progress func(bytes int64)
	// Planner plans the job for one input tensor. Nil plans Request with
	// ops.NewPlan (space-to-depth, depth-to-space); reorder and convert
	// give their own (ops.NewReorder, ops.NewCopy).
	Planner func(shape []int, elemSize int, fortran bool) (*ops.Plan, error)
	// Note, when set, is told what the user should know of a job that
	// succeeds (what --crop dropped), as "PATH: what".
	Note func(string)
	// FreshDir: Output's directory was made by this run (a batch into a
	// new --out-dir), so Output does not exist and is not looked at.
	FreshDir bool
}

// plan plans the job for one tensor.
func (o *Options) plan(t *Tensor) (*ops.Plan, error) {
	if o.Request.BlockOrder.IsCFA() {
		return o.planCFA(t) // the pattern from the input file (cfa.go)
	}
	if o.Planner != nil {
		return o.Planner(t.Shape, t.DType.Size, t.Fortran)
	}
	return ops.NewPlan(o.Request, t.Shape, t.DType.Size, t.Fortran)
}

// DefaultBufferLimit bounds the memory an output buffer may take.
const DefaultBufferLimit = 64 << 20

// Result describes a finished job.
type Result struct {
	Input, Output string
	InShape       []int
	OutShape      []int
	DType         string
	Bytes         int64
	// Members are the per-array results of an npz input or output, each
	// with its Name; the fields above then describe the first.
	Name    string    `json:",omitempty"`
	Members []*Result `json:",omitempty"`
}

// Transform runs one job: load, plan, run, store. An npz or safetensors
// input or output is transformed member by member (members.go), a tar
// shard file by file (tar.go).
func Transform(opts Options) (*Result, error) {
	if isTar(opts) {
		return transformTar(opts)
	}
	src := opts.Source
	if src.Threads == 0 {
		src.Threads = opts.Threads
	}
	src.Deferred = true
	ts, err := LoadAll(src)
	if err != nil {
		return nil, err
	}
	defer closeAll(ts)
	return transformTensors(opts, ts)
}

// transformTensors runs the job on the decoded tensors of one input.
func transformTensors(opts Options, ts []*Tensor) (*Result, error) {
	var err error
	t := ts[0]
	to := outputKind(opts.To, opts.Output, t.Kind)
	if to == format.KindTar {
		return nil, pathErr(opts.Path, errors.New("a tar output is made from a tar shard (its members worked on); make a shard with tar or Python's tarfile"))
	}
	if len(opts.Members) > 0 && !format.IsContainer(t.Kind) {
		return nil, pathErr(opts.Path, fmt.Errorf("--member picks members of a container input (%s); this is one %s tensor", strings.Join(format.Names(format.IsContainerFormat), ", "), t.Kind))
	}
	if len(opts.Members) > 0 && !format.IsContainer(to) {
		// One member out of a container, into a single-tensor format.
		var picked []*Tensor
		var names []string
		for _, m := range ts {
			if selected(opts.Members, m.Name) {
				picked = append(picked, m)
				names = append(names, m.Name)
			}
		}
		if len(picked) != 1 {
			return nil, pathErr(opts.Path, fmt.Errorf("--member %s matches %d members (%s); %s output holds one tensor", strings.Join(opts.Members, " --member "), len(picked), strings.Join(names, ", "), to))
		}
		ts, t = picked, picked[0]
	}
	if format.IsContainer(to) || len(ts) > 1 {
		return transformMembers(opts, ts, to)
	}
	plan, err := opts.plan(t)
	if err != nil {
		return nil, pathErr(opts.Path, memberErr(t, err))
	}
	if err := checkOutput(opts, to); err != nil {
		return nil, err
	}
	if f := format.Lookup(to); f != nil && f.CanWrite != nil {
		if err := f.CanWrite(format.Header{DType: t.DType, Shape: plan.Out}); err != nil {
			return nil, pathErr(displayName(opts.Output), err)
		}
	}
	if n := plan.CropNote(); n != "" && opts.Note != nil {
		opts.Note(displayInput(opts.Path) + ": " + n)
	}
	stream := plan.Streams()
	if f := format.Lookup(to); f == nil || f.Preamble == nil {
		stream = false
	}
	if stream && t.readsInPlace() {
		// Read by position, chunk by chunk (streamInput).
	} else if err := t.load(stream); err != nil {
		var se *scratchError
		if errors.As(err, &se) {
			return nil, err
		}
		return nil, pathErr(opts.Path, err)
	}
	out := format.Header{DType: t.DType, Shape: plan.Out}
	if stream {
		err = streamStore(opts, to, out, plan, t)
	} else {
		if t.Stream != nil {
			// JSON output, Fortran-order input, a crop or a pad need the
			// whole tensor.
			if t.Data, err = readWhole(t.Stream, int64(plan.InBytes())); err != nil {
				return nil, pathErr("stdin", err)
			}
			t.Stream = nil
		}
		err = storeTensor(opts.Output, opts.target(t), to, out, t.Name, opts.Stdout, opts.BufferLimit, producer(plan, t, opts.Threads))
	}
	if err != nil {
		return nil, err
	}
	return &Result{Input: opts.Path, Output: opts.Output, InShape: t.Shape, OutShape: plan.Out,
		DType: t.DType.Name(), Bytes: int64(plan.Bytes())}, nil
}

// smallWhole is the largest result of an input read whole that is
// computed in one piece, not in chunks.
const smallWhole = 1 << 20

// streamStore writes the result chunk by chunk (stream.go): to a file from
// several workers at once, to standard output in order.
func streamStore(opts Options, to format.Kind, h format.Header, plan *ops.Plan, t *Tensor) error {
	if format.IsContainer(to) {
		// One tensor as an archive of one member (members.go).
		_, err := StoreMembers(opts.Output, to, opts.Stdout, opts.BufferLimit, memberJobs(opts, []*Tensor{t}, []*ops.Plan{plan}))
		return err
	}
	out, err := fileio.CreateFor(opts.Output, opts.Stdout, opts.target(t))
	if err != nil {
		return pathErr(opts.Output, err)
	}
	fail := func(err error) error {
		out.Abort()
		var pe *PathError
		if errors.As(err, &pe) {
			return err
		}
		return pathErr(displayName(opts.Output), err)
	}
	preamble, err := preambleFor(to, h, t.Name)
	if err != nil {
		return fail(err)
	}
	if f, _ := t.file(); f == nil && t.Stream == nil && t.Data != nil && out.IsFile() && opts.ChunkBytes <= 0 && plan.Bytes() <= smallWhole {
		// A small input read whole: the kernel from its bytes into one
		// buffer after the preamble, written with one call (the chunked
		// run would copy the input into a chunk buffer and write twice).
		if err := out.Reserve(int64(len(preamble)) + int64(plan.Bytes())); err != nil {
			return fail(err)
		}
		buf := fileio.GetBuffer(len(preamble) + plan.Bytes())
		defer fileio.PutBuffer(buf)
		copy(buf, preamble)
		if err := plan.Run(buf[len(preamble):], t.Data, 1); err != nil {
			return fail(pathErr(opts.Path, err))
		}
		if _, err := out.WriteAt(buf, 0); err != nil {
			return fail(err)
		}
		if opts.Progress != nil {
			opts.Progress(int64(plan.Bytes()))
		}
		if err := out.Commit(); err != nil {
			return pathErr(displayName(opts.Output), err)
		}
		return nil
	}
	if out.IsFile() {
		if err := out.Reserve(int64(len(preamble)) + int64(plan.Bytes())); err != nil {
			return fail(err)
		}
		if _, err := out.WriteAt(preamble, 0); err != nil {
			return fail(err)
		}
	} else if _, err := out.Write(preamble); err != nil {
		return fail(err)
	}
	if err := streamRun(plan, t, out, int64(len(preamble)), opts.Threads, opts.ChunkBytes, opts.Progress); err != nil {
		var we *writeError
		if errors.As(err, &we) {
			return fail(pathErr(displayName(opts.Output), we.err))
		}
		if t.Stream != nil && !errors.Is(err, errInternal) {
			return fail(pathErr("stdin", err))
		}
		return fail(pathErr(opts.Path, err))
	}
	if err := out.Commit(); err != nil {
		return pathErr(displayName(opts.Output), err)
	}
	return nil
}

var errInternal = errors.New("internal error")

// Producer fills output bytes: all of them (first 0, count = batch), or
// the batch items [first, first+count) when itemwise is true.
type Producer struct {
	Itemwise bool // can produce batch items one by one
	Items    int  // batch size
	Run      func(dst []byte, first, count int) error
}

func producer(plan *ops.Plan, t *Tensor, threads int) Producer {
	items := plan.Items()
	return Producer{
		Itemwise: true,
		Items:    items,
		Run: func(dst []byte, first, count int) error {
			if first == 0 && count == items {
				return plan.Run(dst, t.Data, threads)
			}
			return plan.RunItems(dst, t.Data, first, count, threads)
		},
	}
}

func outputKind(to format.Kind, output string, in format.Kind) format.Kind {
	if to != "" {
		return to
	}
	if output != "-" {
		if k := format.OutputKind(output, in); k != "" {
			return k
		}
	}
	return in
}

// target is what the job knows of its output for t: the input file it
// must not overwrite, and whether its directory is new.
func (o *Options) target(t *Tensor) fileio.Target {
	return fileio.Target{Input: t.Info(), Fresh: o.FreshDir}
}

// checkOutput refuses, before any work, an output the job cannot write:
// binary data to a terminal, a path whose extension names no format.
func checkOutput(opts Options, to format.Kind) error {
	if f := format.Lookup(to); f != nil && !format.Writable(f) {
		return pathErr(displayName(opts.Output), format.ReadOnlyError(f))
	}
	if opts.Output == "-" {
		if f := format.Lookup(to); opts.StdoutTTY && (f == nil || !f.Text) {
			return pathErr("stdout", fmt.Errorf("refusing to write binary %s data to a terminal; use -o FILE, a redirect, or --to json", to))
		}
		return nil
	}
	if opts.To == "" {
		if err := format.ExtensionError(opts.Output); err != nil {
			return pathErr(opts.Output, err)
		}
	}
	return nil
}

// checkNotInput refuses an output that is t's input file, before an
// archive's members are worked on (a single tensor's output is checked
// as it is created: fileio.CreateFor).
func checkNotInput(opts Options, t *Tensor) error {
	if in := t.Info(); in != nil && opts.Output != "-" {
		if fi, err := os.Stat(opts.Output); err == nil && os.SameFile(in, fi) {
			return pathErr(opts.Output, fileio.ErrIsInput)
		}
	}
	return nil
}

// Store writes a tensor of header h (always C order) produced by p to the
// output path in format kind, atomically for files.
func Store(path string, kind format.Kind, h format.Header, stdout io.Writer, limit int, p Producer) error {
	return StoreNamed(path, kind, h, "", stdout, limit, p)
}

// StoreNamed is Store for a tensor with a name: the ONNX TensorProto name
// of an onnx output.
func StoreNamed(path string, kind format.Kind, h format.Header, name string, stdout io.Writer, limit int, p Producer) error {
	return storeTensor(path, fileio.Target{}, kind, h, name, stdout, limit, p)
}

// storeTensor is StoreNamed for an output of which the job knows target
// (fileio.CreateFor): the input file it must not overwrite, a new
// directory.
func storeTensor(path string, target fileio.Target, kind format.Kind, h format.Header, name string, stdout io.Writer, limit int, p Producer) error {
	if limit <= 0 {
		limit = DefaultBufferLimit
	}
	if format.IsContainer(kind) {
		// One tensor as an archive of one member (members.go).
		_, err := StoreMembers(path, kind, stdout, limit, []MemberJob{{Name: DefaultMemberName, Header: h, Producer: p}})
		return err
	}
	out, err := fileio.CreateFor(path, stdout, target)
	if err != nil {
		return pathErr(path, err)
	}
	if err := store(out, kind, h, name, limit, p); err != nil {
		out.Abort()
		return pathErr(displayName(path), err)
	}
	if err := out.Commit(); err != nil {
		return pathErr(displayName(path), err)
	}
	return nil
}

func displayName(path string) string {
	if path == "-" {
		return "stdout"
	}
	return path
}

func store(out *fileio.Output, kind format.Kind, h format.Header, name string, limit int, p Producer) error {
	size := h.DataBytes()
	if f := format.Lookup(kind); f != nil && f.Encode != nil {
		// A format written whole (JSON, PNG).
		data := make([]byte, size)
		if err := p.Run(data, 0, p.Items); err != nil {
			return err
		}
		return f.Encode(out, h, name, data)
	}
	preamble, err := preambleFor(kind, h, name)
	if err != nil {
		return err
	}
	itemBytes := int64(0)
	if p.Items > 0 {
		itemBytes = size / int64(p.Items)
	}
	// A result larger than the buffer limit, going to a file, is written
	// through a mapping of the file: memory stays bounded whatever its size.
	if out.IsFile() && (size > int64(limit) && (!p.Itemwise || itemBytes > int64(limit))) {
		m, err := out.Map(int64(len(preamble)) + size)
		if err != nil {
			return err
		}
		copy(m, preamble)
		return p.Run(m[len(preamble):], 0, p.Items)
	}
	// Otherwise in order, a batch of items at a time, as a container's
	// member is (produceTo).
	w := bufio.NewWriterSize(out, 1<<16)
	if _, err := w.Write(preamble); err != nil {
		return err
	}
	if err := produceTo(w, size, limit, p); err != nil {
		return err
	}
	return w.Flush()
}

// preambleFor is what precedes the element data of a binary output: the
// npy header, the ONNX TensorProto fields before raw_data, or nothing.
func preambleFor(kind format.Kind, h format.Header, name string) ([]byte, error) {
	f := format.Lookup(kind)
	if f == nil || f.Preamble == nil {
		return nil, fmt.Errorf("internal error: %s output is not written as a preamble and data", kind)
	}
	return f.Preamble(h, name)
}

func displayInput(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}
