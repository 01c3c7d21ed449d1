package pipeline

import (
	"errors"
	"fmt"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

// Archives: an npz input is transformed array by array, and the output
// keeps every member's name. An npz output is written like np.savez:
// stored members, or deflated ones (np.savez_compressed) when the input
// had deflated members, so that a round trip keeps the archive's kind.
// A single-tensor input written as npz becomes the member arr_0, numpy's
// name for a positional array.

// DefaultMemberName names the one array of an npz made from another format.
const DefaultMemberName = "arr_0"

// writeContainer says how to write several tensors to one file: "write a
// container (an output named OUT.npz or OUT.safetensors, or --to npz)",
// from the registry's writable containers that are one file.
func writeContainer() string {
	var outs []string
	var first format.Kind
	for _, f := range format.All() {
		if f.Container && f.Create != nil && f.Store == nil && f.Shard == nil && format.Writable(f) && !f.ByContent {
			if first == "" {
				first = f.Kind
			}
			outs = append(outs, "OUT"+f.Exts[0])
		}
	}
	return fmt.Sprintf("write a container (an output named %s, or --to %s)", format.Either(outs), first)
}

// transformMembers runs opts on every tensor of ts and writes the results
// as one npz archive (to == npz), or refuses an archive of several arrays
// written to a single-tensor format.
func transformMembers(opts Options, ts []*Tensor, to format.Kind) (*Result, error) {
	if !format.IsContainer(to) {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.Name
		}
		return nil, pathErr(opts.Path, fmt.Errorf("%s of %d arrays (%s); %s output holds one tensor: %s, or pick one with --member", containerName(ts[0].Kind), len(ts), shownNames(names), to, writeContainer()))
	}
	// Plan every member before writing anything: an impossible shape in
	// the last member leaves no output at all.
	plans := make([]*ops.Plan, len(ts))
	picked := 0
	for i, t := range ts {
		var p *ops.Plan
		var err error
		if selected(opts.Members, t.Name) {
			p, err = opts.plan(t)
			picked++
		} else {
			// Not picked by --member: copied through unchanged.
			p, err = ops.NewCopy(t.Shape, t.DType.Size, t.Fortran)
		}
		if err != nil {
			return nil, pathErr(opts.Path, memberErr(t, err))
		}
		plans[i] = p
	}
	if picked == 0 {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.Name
		}
		return nil, pathErr(opts.Path, fmt.Errorf("--member %s matches none of its members (%s)", strings.Join(opts.Members, " --member "), shownNames(names)))
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = outputMemberName(t, to)
	}
	if err := checkRename(opts, names); err != nil {
		return nil, err
	}
	if err := checkOutput(opts, to); err != nil {
		return nil, err
	}
	if err := checkNotInput(opts, ts[0]); err != nil {
		return nil, err
	}
	return writeResult(opts.dest(ts[0]), to, memberJobs(opts, ts, plans, to))
}

// MemberJob is one tensor of an output (its only one, for a
// single-tensor format): its name, its header (C order) and the ways its
// bytes can be made (write.go picks one for the sink).
type MemberJob struct {
	Name       string
	Header     format.Header
	Producer   Producer
	Compressed bool // the source array was deflated
	// Load, when set, is called before Producer (a streamed input is read
	// whole here, a deferred npz member inflated: members are written one
	// after the other). A streamed or small run does not need it.
	Load func() error
	// Release, when set, lets what Load brought in go once the member is
	// written.
	Release func()
	// Result describes the job for the caller.
	Result *Result
	// Meta is the source container's own data (format.Archive.Meta: the
	// first job's is written with an output of the same format).
	Meta any
	From format.Kind // the source's format: Meta goes only to the same
	// Threads is -j: the workers of a streamed run, or the goroutines
	// that compress members at once.
	Threads int
	// run, when set, computes the member chunk by chunk or whole in
	// one call (memberRun: streams, small), besides Producer.
	run *memberRun
	// Ready, when set, brings a streamed member's deferred input in (a
	// deflated npz member inflated: into a scratch file when big) before
	// anything of the member is written in order, so that a corrupt one
	// fails with nothing of it on a pipe. A streamed run brings it itself
	// otherwise.
	Ready func() error
	// Input is the input's path, named in an error of its computation
	// ("stdin" when Piped, the stream read as it goes).
	Input string
	Piped bool
	// byChunks, when set, is what a store output needs to run the job
	// from the input's chunks to its own (storechunks.go).
	byChunks *chunkedJob
}

// inputErr names the input in an error of the member's computation.
func (j *MemberJob) inputErr(err error) error {
	if j.Input == "" {
		return err
	}
	if j.Piped && !errors.Is(err, errInternal) {
		return pathErr("stdin", err)
	}
	return pathErr(j.Input, err)
}

// memberJobs makes the jobs of an output of format to from the tensors
// ts and their plans.
func memberJobs(opts Options, ts []*Tensor, plans []*ops.Plan, to format.Kind) []MemberJob {
	// A job's Result and what its computation needs come with the jobs,
	// in one allocation for a single tensor (a file of a batch of small
	// ones), in one per kind for several: a job, its Result, its chunk
	// work and a closure for each way of computing it were six
	// allocations a file.
	var (
		jobs    []MemberJob
		results []Result
		runs    []memberRun
	)
	if len(ts) == 1 {
		var one *oneMember
		if opts.Reuse != nil {
			one = &opts.Reuse.one
			*one = oneMember{}
		} else {
			one = new(oneMember)
		}
		jobs, results, runs = one.job[:], one.res[:], one.run[:]
	} else {
		jobs, results, runs = make([]MemberJob, len(ts)), make([]Result, len(ts)), make([]memberRun, len(ts))
	}
	container := format.IsContainer(to)
	input := opts.Path
	for i, t := range ts {
		t, p := t, plans[i]
		name := t.Name // a single tensor's own name (an ONNX TensorProto's)
		if container {
			name = outputMemberName(t, to)
		}
		// A container's member keeps its name, an empty one too: the
		// output's format carries it or refuses it, never renames it;
		// only the user does (--rename-member).
		if to, ok := opts.Rename[name]; ok {
			name = to
		}
		res := &results[i]
		*res = Result{Input: opts.Path, Output: opts.Output, InShape: t.Shape, OutShape: p.Out,
			DType: dtypeName(opts.Reuse, t.DType), Bytes: int64(p.Bytes()), Name: name}
		run := &runs[i]
		*run = memberRun{chunkedJob: chunkedJob{plan: p, t: t, progress: opts.Progress}, chunkBytes: opts.ChunkBytes,
			threads: opts.Threads, input: input, items: p.Items()}
		jobs[i] = MemberJob{
			Name: name, Header: format.Header{DType: t.DType, Shape: p.Out},
			Producer:   Producer{Itemwise: true, Items: run.items, member: run},
			Compressed: t.Compressed, Meta: t.Meta, From: t.Kind, Threads: opts.Threads,
			Result: res, Input: input, Piped: t.Stream != nil, run: run,
		}
		if p.Streams() {
			run.streams = true
			jobs[i].byChunks = &run.chunkedJob
		}
		if f, _ := t.file(); f == nil && t.Stream == nil && t.Data != nil && run.chunkBytes <= 0 && p.Bytes() <= smallWhole && p.Streams() {
			// A small input read whole: the kernel from its bytes
			// straight into the output's place (a chunked run would copy
			// them into a chunk buffer, and the result out of another).
			run.small = true
		}
		if t.lazy != nil && p.Streams() {
			jobs[i].Ready = func() error {
				if t.readsInPlace() {
					return nil
				}
				return t.load(true)
			}
		}
		if t.lazy != nil {
			jobs[i].Load = t.inflate
			jobs[i].Release = t.release
		}
		// Made from Data, not read chunk by chunk: an object still
		// arriving is waited for whole first.
		run.arriving = t.input != nil && t.input.Arriving() != nil
		if t.Stream != nil {
			jobs[i].Load = func() error {
				data, err := readWhole(t.Stream, int64(p.InBytes()))
				if err != nil {
					return pathErr("stdin", err)
				}
				t.Data, t.Stream = data, nil
				return nil
			}
		}
	}
	return jobs
}

// oneMember is the jobs of a single tensor's output, made in one piece.
type oneMember struct {
	job [1]MemberJob
	res [1]Result
	run [1]memberRun
}

// memberRun is how a member made by a plan is computed, besides its
// Producer: chunk by chunk (streams) or, small and in memory, whole in
// one call (small). Methods, not closures, so that a job makes none.
type memberRun struct {
	chunkedJob
	chunkBytes int
	streams    bool
	small      bool
	// What Producer.produce needs: -j, the input's name for an error,
	// the plan's items, and whether the input is an object still
	// arriving.
	threads  int
	input    string
	items    int
	arriving bool
}

// produce fills dst with the member's bytes, all of them (first 0,
// count = items) or the items [first, first+count), from its input's
// Data.
func (r *memberRun) produce(dst []byte, first, count int) error {
	t := r.t
	if r.arriving {
		if err := t.arrived(); err != nil {
			return pathErr(r.input, err)
		}
	}
	if first == 0 && count == r.items {
		return r.plan.Run(dst, t.Data, r.threads)
	}
	return r.plan.RunItems(dst, t.Data, first, count, r.threads)
}

// stream computes the member chunk by chunk (stream.go) into out, its
// data starting at base: by position from several workers into a file,
// in order into a stream.
func (r *memberRun) stream(out sink, base int64, threads int) error {
	t := r.t
	if t.lazy != nil && !t.readsInPlace() {
		// A big one inflated into a scratch file and read from there
		// chunk by chunk: memory holds buffers, not the member.
		if err := t.load(true); err != nil {
			return err
		}
		defer t.release()
	}
	return streamRun(r.plan, t, out, base, threads, r.chunkBytes, r.progress)
}

// computeSmall computes the member in one call into dst, its exact size:
// the input is in memory and the result small, so a small file is made
// in memory and written with one call.
func (r *memberRun) computeSmall(dst []byte) error {
	if err := r.plan.Run(dst, r.t.Data, 1); err != nil {
		return err
	}
	if r.progress != nil {
		r.progress(int64(r.plan.Bytes()))
	}
	return nil
}

// streams says the member is computed chunk by chunk (memberRun.stream).
func (j *MemberJob) streams() bool { return j.run != nil && j.run.streams }

// small says the member is computed whole in one call
// (memberRun.computeSmall).
func (j *MemberJob) small() bool { return j.run != nil && j.run.small }

// readWhole reads exactly the n data bytes a header describes from a
// stream, refusing fewer or more.
func readWhole(r io.Reader, n int64) ([]byte, error) {
	if n < 0 {
		return nil, errors.New("the tensor is too large")
	}
	b, err := io.ReadAll(io.LimitReader(r, n+1))
	if err != nil {
		return nil, err
	}
	switch {
	case int64(len(b)) < n:
		return nil, fmt.Errorf("truncated: the header describes %d data bytes but the input ended after %d", n, len(b))
	case int64(len(b)) > n:
		return nil, fmt.Errorf("bytes beyond the %d data bytes the header describes", n)
	}
	return b, nil
}

// selected reports whether a member is worked on: every member when no
// --member is given, else those whose name matches one of the globs
// (path.Match: * does not cross a '/').
func selected(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// add counts a member's result in a container's.
func (r *Result) add(m *Result) {
	if m != nil {
		r.Members = append(r.Members, m)
		r.Bytes += m.Bytes
	}
}

// describeFirst fills the container's fields from its first member.
func (r *Result) describeFirst() {
	if len(r.Members) > 0 {
		first := r.Members[0]
		r.Input, r.InShape, r.OutShape, r.DType = first.Input, first.InShape, first.OutShape, first.DType
	}
}

// outputMemberName is the name t has as a member of a container output
// of format to (before --rename-member): a member's own, empty or not.
func outputMemberName(t *Tensor, to format.Kind) string {
	if !format.IsContainer(t.Kind) || format.StoreOf(t.Kind) != nil && t.Name == "" {
		// One tensor, not a member (a store of one array has no member
		// name either): arr_0 in an npz, none in a store.
		return memberName(to, "")
	}
	return t.Name
}

// checkRename refuses a --rename-member whose FROM names none of the
// output's members (names, before renaming), and renames that would give
// two members one name: a typo must not pass for a rename, and a
// container holds each name once.
func checkRename(opts Options, names []string) error {
	if len(opts.Rename) == 0 {
		return nil
	}
	for from := range opts.Rename {
		if !slices.Contains(names, from) {
			return pathErr(opts.Path, fmt.Errorf("--rename-member %s: no member has that name (its members: %s)", strconv.Quote(from), shownNames(names)))
		}
	}
	seen := make(map[string]string, len(names))
	for _, n := range names {
		out := n
		if to, ok := opts.Rename[n]; ok {
			out = to
		}
		if other, dup := seen[out]; dup {
			return pathErr(opts.Path, fmt.Errorf("--rename-member: members %s and %s would both be named %s", strconv.Quote(other), strconv.Quote(n), strconv.Quote(out)))
		}
		seen[out] = n
	}
	return nil
}
