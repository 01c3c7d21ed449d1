package pipeline

import (
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
	// Rename maps member names to the names they get in the output
	// (--rename-member FROM=TO): how a name the output's container
	// cannot carry is written anyway, by the user's choice, never by
	// ours. Every FROM must name a member.
	Rename map[string]string
	// FreshDir: Output's directory was made by this run (a batch into a
	// new --out-dir), so Output does not exist and is not looked at.
	FreshDir bool
	// Store shapes an output that is a store (Zarr): --chunks,
	// --zarr-codec, --zarr-shard.
	Store format.WriteOptions
	// Reuse, when set, is where the job keeps its bookkeeping (the
	// input's Tensor, the output's jobs, its Result), instead of new
	// memory: a caller running many jobs one after another on a
	// goroutine (a batch worker) lends each the same. The Result
	// returned then lives in it, until the next job given it.
	Reuse *Reuse
}

// Reuse is the memory one job at a time keeps its bookkeeping in
// (Options.Reuse): a batch of small files made three allocations a file
// for it, a kilobyte of a file's garbage, and the collections and page
// faults that came with them.
type Reuse struct {
	tensor Tensor
	one    oneMember
	w      writing
	// The last dtype named for a Result, and its name: a batch's files
	// mostly share one, whose name was an allocation a file.
	dtype     format.DType
	dtypeName string
}

// dtypeName is d.Name(), remembered in reuse (if any).
func dtypeName(reuse *Reuse, d format.DType) string {
	if reuse == nil {
		return d.Name()
	}
	if reuse.dtypeName == "" || reuse.dtype != d {
		reuse.dtype, reuse.dtypeName = d, d.Name()
	}
	return reuse.dtypeName
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
	// Written is the size of the output file (or object) written, its
	// headers included: 0 for standard output.
	Written int64 `json:"-"`
}

// Transform runs one job: load, plan, run, store. An npz or safetensors
// input or output is transformed member by member (members.go), a tar
// shard file by file (tar.go).
func Transform(opts Options) (*Result, error) {
	if shard := shardKind(opts); shard != "" {
		opts.Reuse = nil // a shard's members are worked on by goroutines of their own
		if len(opts.Rename) > 0 {
			// A shard's names are carried as bytes, whatever they hold.
			return nil, pathErr(opts.Path, fmt.Errorf("--rename-member renames members of a container output; %s's members keep their names, as their bytes", format.Lookup(shard).Noun))
		}
		return transformShard(opts, shard)
	}
	src := opts.Source
	if src.Threads == 0 {
		src.Threads = opts.Threads
	}
	src.Deferred, src.Arriving = true, true
	if opts.Reuse != nil {
		src.into = &opts.Reuse.tensor
	}
	t, err := load(src)
	if err != nil {
		return nil, err
	}
	ts := t.members
	if ts == nil {
		// A file of one tensor, the common case: LoadAll's slice
		// would be an allocation a file.
		defer t.Close()
		return transformTensors(opts, []*Tensor{t})
	}
	defer closeAll(ts)
	return transformTensors(opts, ts)
}

// transformTensors runs the job on the decoded tensors of one input.
func transformTensors(opts Options, ts []*Tensor) (*Result, error) {
	var err error
	t := ts[0]
	to := outputKind(opts.To, opts.Output, t.Kind)
	tf := format.Lookup(to)
	if tf != nil && tf.Shard != nil {
		return nil, pathErr(opts.Path, fmt.Errorf("a %s output is made from %s (its members worked on); %s", tf.Kind, tf.Noun, tf.Shard.Making))
	}
	container := tf != nil && tf.Container
	if len(opts.Members) > 0 && len(ts) == 1 && !t.member {
		return nil, pathErr(opts.Path, fmt.Errorf("--member picks members of a container input (%s); this is one %s tensor", strings.Join(format.Names(format.IsContainerFormat), ", "), t.Kind))
	}
	if len(opts.Members) > 0 && !container {
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
			return nil, pathErr(opts.Path, fmt.Errorf("--member %s matches %d members (%s); %s output holds one tensor", strings.Join(opts.Members, " --member "), len(picked), shownNames(names), to))
		}
		ts, t = picked, picked[0]
	}
	if container || len(ts) > 1 {
		return transformMembers(opts, ts, to)
	}
	if len(opts.Rename) > 0 {
		return nil, pathErr(opts.Path, fmt.Errorf("--rename-member renames members of a container output; %s output holds one tensor", to))
	}
	plan, err := opts.plan(t)
	if err != nil {
		return nil, pathErr(opts.Path, memberErr(t, err))
	}
	if err := checkOutput(opts, to); err != nil {
		return nil, err
	}
	if tf != nil && tf.CanWrite != nil {
		if err := tf.CanWrite(format.Header{DType: t.DType, Shape: plan.Out}); err != nil {
			return nil, pathErr(displayName(opts.Output), err)
		}
	}
	if n := plan.CropNote(); n != "" && opts.Note != nil {
		opts.Note(displayInput(opts.Path) + ": " + n)
	}
	return writeResult(opts.dest(t), to, memberJobs(opts, []*Tensor{t}, []*ops.Plan{plan}, to))
}

// smallWhole is the largest result of an input read whole that is
// computed in one piece, not in chunks.
const smallWhole = 1 << 20

var errInternal = errors.New("internal error")

// Producer fills output bytes: all of them (first 0, count = batch), or
// the batch items [first, first+count) when itemwise is true.
type Producer struct {
	Itemwise bool // can produce batch items one by one
	Items    int  // batch size
	Run      func(dst []byte, first, count int) error
	// member, when Run is nil, produces the bytes: a member job's own
	// plan and input (memberRun.produce), with no closure to allocate.
	member *memberRun
}

// produce fills dst as Run says.
func (p *Producer) produce(dst []byte, first, count int) error {
	if p.Run != nil {
		return p.Run(dst, first, count)
	}
	return p.member.produce(dst, first, count)
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

// dest is where the job's result for t goes, with what the job knows of
// it: the input file it must not overwrite, whether its directory is new.
func (o *Options) dest(t *Tensor) dest {
	store := o.Store
	store.Threads = o.Threads
	d := dest{path: o.Output, stdout: o.Stdout, limit: o.BufferLimit,
		target: fileio.Target{Input: t.Info(), Fresh: o.FreshDir}, store: store}
	if o.Reuse != nil {
		d.w = &o.Reuse.w
	}
	return d
}

// isText says whether a format may be written to a terminal.
func isText(f *format.Format) bool { return f.Text }

// checkOutput refuses, before any work, an output the job cannot write:
// binary data to a terminal, a path whose extension names no format.
func checkOutput(opts Options, to format.Kind) error {
	if f := format.Lookup(to); f != nil && !format.Writable(f) {
		return pathErr(displayName(opts.Output), format.ReadOnlyError(f))
	}
	if opts.Output == "-" {
		if f := format.Lookup(to); opts.StdoutTTY && (f == nil || !f.Text) {
			return pathErr("stdout", fmt.Errorf("refusing to write binary %s data to a terminal; use -o FILE, a redirect, or --to %s", to, format.Either(format.Names(isText))))
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
		if fi, err := os.Stat(opts.Output); err == nil && fileio.SameFile(in, fi) {
			return pathErr(opts.Output, fileio.ErrIsInput)
		}
	}
	return nil
}

// Store writes a tensor of header h (always C order) produced by p to the
// output path in format kind, atomically for files.
func Store(path string, kind format.Kind, h format.Header, stdout io.Writer, limit int, p Producer) error {
	_, err := writeResult(dest{path: path, stdout: stdout, limit: limit}, kind,
		[]MemberJob{{Name: memberName(kind, ""), Header: h, Producer: p}})
	return err
}

// memberName is the name of a single tensor in an output of format kind:
// its own name, or numpy's for a positional array in a container.
func memberName(kind format.Kind, name string) string {
	if format.IsContainer(kind) && format.StoreOf(kind) == nil && name == "" {
		return DefaultMemberName // a store of one array has none
	}
	return name
}

func displayName(path string) string {
	if path == "-" {
		return "stdout"
	}
	return path
}

func displayInput(path string) string {
	if path == "-" {
		return "stdin"
	}
	return path
}
