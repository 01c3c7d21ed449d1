package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
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

// transformMembers runs opts on every tensor of ts and writes the results
// as one npz archive (to == npz), or refuses an archive of several arrays
// written to a single-tensor format.
func transformMembers(opts Options, ts []*Tensor, to format.Kind) (*Result, error) {
	if !format.IsContainer(to) {
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = t.Name
		}
		return nil, pathErr(opts.Path, fmt.Errorf("%s of %d arrays (%s); %s output holds one tensor: write an .npz or .safetensors (an output named OUT.npz, or --to npz), or pick one with --member", containerName(ts[0].Kind), len(ts), strings.Join(names, ", "), to))
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
		return nil, pathErr(opts.Path, fmt.Errorf("--member %s matches none of its members (%s)", strings.Join(opts.Members, " --member "), strings.Join(names, ", ")))
	}
	if err := checkOutput(opts, to); err != nil {
		return nil, err
	}
	if err := checkNotInput(opts, ts[0]); err != nil {
		return nil, err
	}
	res, err := StoreMembers(opts.Output, to, opts.Stdout, opts.BufferLimit, memberJobs(opts, ts, plans))
	if err != nil {
		return nil, err
	}
	return res, nil
}

// MemberJob is one array of an npz output: its name, its header (C order)
// and what produces its bytes.
type MemberJob struct {
	Name       string
	Header     format.Header
	Producer   Producer
	Compressed bool // the source array was deflated
	// Load, when set, is called before Producer (a streamed input is read
	// whole here, a deferred npz member inflated: members are written one
	// after the other). Stream does not need it.
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
	// Threads is -j: deflated npz members are compressed on that many
	// goroutines at once.
	Threads int
	// Stream, when set, writes the member's data at offset base of a file
	// output chunk by chunk from several workers, as a single npy is
	// (stream.go): a safetensors output, whose layout is known up front,
	// takes it.
	Stream func(out *fileio.Output, base int64, threads int) error
}

func memberJobs(opts Options, ts []*Tensor, plans []*ops.Plan) []MemberJob {
	jobs := make([]MemberJob, len(ts))
	for i, t := range ts {
		t, p := t, plans[i]
		name := t.Name
		if !format.IsContainer(t.Kind) || name == "" {
			name = DefaultMemberName
		}
		jobs[i] = MemberJob{
			Name: name, Header: format.Header{DType: t.DType, Shape: p.Out},
			Producer: producer(p, t, opts.Threads), Compressed: t.Compressed, Meta: t.Meta, From: t.Kind, Threads: opts.Threads,
			Result: &Result{Input: opts.Path, Output: opts.Output, InShape: t.Shape, OutShape: p.Out,
				DType: t.DType.Name(), Bytes: int64(p.Bytes()), Name: name},
		}
		if p.Streams() && t.Stream == nil {
			jobs[i].Stream = func(out *fileio.Output, base int64, threads int) error {
				if t.lazy != nil && !t.readsInPlace() {
					// A big one inflated into a scratch file and read
					// from there chunk by chunk: memory holds buffers,
					// not the member.
					if err := t.load(true); err != nil {
						return err
					}
					defer t.release()
				}
				return streamRun(p, t, out, base, threads, opts.ChunkBytes, opts.Progress)
			}
		}
		if t.lazy != nil {
			jobs[i].Load = t.inflate
			jobs[i].Release = t.release
		}
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

// StoreMembers writes jobs as one container (npz or safetensors) to path
// ("-": stdout), atomically for files. npz members are deflated when any
// source member was; a safetensors file keeps the source's __metadata__.
// Each member's bytes are produced a batch of items at a time, so memory
// stays within limit for all but a single item larger than it.
func StoreMembers(path string, kind format.Kind, stdout io.Writer, limit int, jobs []MemberJob) (*Result, error) {
	if limit <= 0 {
		limit = DefaultBufferLimit
	}
	compress := false
	for _, j := range jobs {
		compress = compress || j.Compressed
	}
	out, err := fileio.Create(path, stdout)
	if err != nil {
		return nil, pathErr(path, err)
	}
	fail := func(err error) (*Result, error) {
		out.Abort()
		var pe *PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		return nil, pathErr(displayName(path), err)
	}
	f := format.Lookup(kind)
	if f == nil || f.Create == nil {
		return fail(fmt.Errorf("internal error: %s output is not a container", kind))
	}
	specs := make([]format.MemberSpec, len(jobs))
	for i, j := range jobs {
		specs[i] = format.MemberSpec{Name: j.Name, Header: j.Header, Compressed: j.Compressed}
	}
	var meta any
	if len(jobs) > 0 && jobs[0].From == kind {
		meta = jobs[0].Meta
	}
	if f.CreateAt != nil && out.IsFile() {
		pw, err := f.CreateAt(out, specs, meta)
		if err != nil {
			return fail(err)
		}
		if pw != nil {
			return storePlaced(out, path, kind, pw, limit, jobs, fail)
		}
	}
	bw := bufio.NewWriterSize(out, 1<<16)
	if kind == format.KindNpz && compress {
		// Deflate is the cost of a compressed archive (one core
		// compresses some 25 MB/s): members are compressed on -j
		// goroutines and added in order.
		nw := format.NewNpzWriter(bw, true)
		nw.KeepTimes(jobs[0].Meta) // an npz input's member times
		res, err := storeDeflated(nw, jobs)
		if err == nil {
			res.Output = path
			err = nw.Close()
		}
		if err == nil {
			err = bw.Flush()
		}
		if err != nil {
			return fail(err)
		}
		if err := out.Commit(); err != nil {
			return nil, pathErr(displayName(path), err)
		}
		return res, nil
	}
	// Any container format: its Create, members written in order.
	zw, err := f.Create(bw, specs, meta)
	if err != nil {
		return fail(err)
	}
	res := &Result{Output: path}
	for _, j := range jobs {
		if j.Load != nil {
			if err := j.Load(); err != nil {
				return fail(err)
			}
		}
		w, err := zw.Member(j.Name, j.Header)
		if err != nil {
			return fail(err)
		}
		if err := produceTo(w, j.Header.DataBytes(), limit, j.Producer); err != nil {
			return fail(inMember(kind, j.Name, err))
		}
		if j.Release != nil {
			j.Release()
		}
		res.add(j.Result)
	}
	if err := zw.Close(); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := out.Commit(); err != nil {
		return nil, pathErr(displayName(path), err)
	}
	res.describeFirst()
	return res, nil
}

// storeDeflated adds jobs to nw in order, each member deflated on one of
// up to -j goroutines. A member of scratchAbove or more whose plan runs
// in chunks (Stream) goes through two scratch files of the run's own —
// its data, computed chunk by chunk, then those data deflated — so that
// memory holds buffers whatever the member's size; the others are
// produced whole in memory.
// At most 2×-j members are taken and not yet written at once.
func storeDeflated(nw *format.NpzWriter, jobs []MemberJob) (*Result, error) {
	threads := 1
	for _, j := range jobs {
		threads = max(threads, j.Threads)
	}
	results := make([]chan *deflated, len(jobs))
	for i := range results {
		results[i] = make(chan *deflated, 1)
	}
	var next atomic.Int64
	// Members taken but not yet written: twice the workers, so that a
	// worker that finishes ahead of the member the writer waits for goes
	// on with another (a done member waits in its scratch file, or in
	// memory when it is under scratchAbove).
	slots := make(chan struct{}, 2*threads)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		// After a failure: the workers finish the member in hand, and
		// the scratch files of members not written are closed.
		close(stop)
		wg.Wait()
		for i := range results {
			select {
			case d := <-results[i]:
				d.close()
			default:
			}
		}
	}()
	work := func() {
		for {
			select {
			case slots <- struct{}{}:
			case <-stop:
				return
			}
			i := int(next.Add(1) - 1)
			if i >= len(jobs) {
				<-slots
				return
			}
			j := jobs[i]
			d := &deflated{}
			if j.Stream != nil && j.Header.DataBytes() >= scratchAbove {
				d.err = deflateStreamed(j, d)
			} else {
				d.err = deflateWhole(j, d)
			}
			if d.err != nil {
				d.err = inMember(format.KindNpz, j.Name, d.err)
			}
			results[i] <- d
		}
	}
	for range min(threads, len(jobs)) {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	res := &Result{}
	for i, j := range jobs {
		d := <-results[i]
		<-slots
		err := d.err
		if err == nil && d.z != nil {
			err = nw.RawFrom(j.Name, io.NewSectionReader(d.z, 0, d.csize), d.csize, d.crc, d.size)
		} else if err == nil {
			err = nw.Raw(j.Name, d.buf.Bytes(), d.crc, d.size)
		}
		d.close()
		if err != nil {
			return nil, err
		}
		res.add(j.Result)
	}
	res.describeFirst()
	return res, nil
}

// deflated is one member compressed: in buf, or the csize bytes of the
// scratch file z.
type deflated struct {
	buf   bytes.Buffer
	z     *os.File
	csize int64
	crc   uint32
	size  uint64
	err   error
}

func (d *deflated) close() {
	if d.z != nil {
		d.z.Close()
		d.z = nil
	}
}

// deflateWhole produces the member whole in memory and deflates it.
func deflateWhole(j MemberJob, d *deflated) error {
	if j.Load != nil {
		if err := j.Load(); err != nil {
			return err
		}
	}
	if j.Release != nil {
		defer j.Release()
	}
	data := make([]byte, j.Header.DataBytes())
	if err := j.Producer.Run(data, 0, j.Producer.Items); err != nil {
		return err
	}
	var err error
	d.crc, d.size, err = format.DeflateNpy(j.Header, data, &d.buf)
	return err
}

// deflateStreamed computes the member chunk by chunk into a scratch file,
// then deflates that into another, which the caller adds to the archive.
func deflateStreamed(j MemberJob, d *deflated) error {
	size := j.Header.DataBytes()
	data, err := fileio.Scratch()
	if err != nil {
		return &scratchError{op: "making", err: err}
	}
	defer data.Close()
	// One thread: the other cores deflate other members.
	if err := j.Stream(fileio.ScratchOutput(data), 0, 1); err != nil {
		return err
	}
	z, err := fileio.Scratch()
	if err != nil {
		return &scratchError{op: "making", err: err}
	}
	bw := bufio.NewWriterSize(scratchWriter{z}, 256<<10)
	d.crc, d.size, err = format.DeflateNpyTo(j.Header, io.NewSectionReader(data, 0, size), size, bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		z.Close()
		return err
	}
	fi, err := z.Stat()
	if err != nil {
		z.Close()
		return err
	}
	d.z, d.csize = z, fi.Size()
	return nil
}

// produceTo writes the size bytes p produces to w, in batches of items
// that fit in limit (or all at once when p cannot produce items).
func produceTo(w io.Writer, size int64, limit int, p Producer) error {
	if size == 0 {
		return nil
	}
	itemBytes := int64(0)
	if p.Items > 0 {
		itemBytes = size / int64(p.Items)
	}
	if !p.Itemwise || p.Items <= 1 || itemBytes > int64(limit) || size <= int64(limit) {
		data := make([]byte, size)
		if err := p.Run(data, 0, p.Items); err != nil {
			return err
		}
		_, err := w.Write(data)
		return err
	}
	per := max(1, int(int64(limit)/itemBytes))
	buf := make([]byte, int64(min(per, p.Items))*itemBytes)
	for first := 0; first < p.Items; first += per {
		count := min(per, p.Items-first)
		b := buf[:int64(count)*itemBytes]
		if err := p.Run(b, first, count); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

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

// storePlaced writes a container into a file output by position (the
// format's PlacedWriter): each member's data where the container puts
// them, streamed chunk by chunk by several workers when its plan allows
// (the speed and memory of a single npy), else produced a batch of items
// at a time.
func storePlaced(out *fileio.Output, path string, kind format.Kind, pw format.PlacedWriter, limit int, jobs []MemberJob, fail func(error) (*Result, error)) (*Result, error) {
	res := &Result{Output: path}
	for i, j := range jobs {
		if j.Load != nil && j.Stream == nil {
			if err := j.Load(); err != nil {
				return fail(err)
			}
		}
		off, err := pw.Place(i)
		if err != nil {
			return fail(err)
		}
		if err := placeMember(out, off, limit, j); err != nil {
			return fail(inMember(kind, j.Name, err))
		}
		if err := pw.Placed(i); err != nil {
			return fail(err)
		}
		res.add(j.Result)
	}
	if err := pw.Close(); err != nil {
		return fail(err)
	}
	if err := out.Commit(); err != nil {
		return nil, pathErr(displayName(path), err)
	}
	res.describeFirst()
	return res, nil
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

// placeMember writes a member's data at off of a file output: streamed
// chunk by chunk by several workers when its plan allows, else produced
// a batch of items at a time (after its Load).
func placeMember(out *fileio.Output, off int64, limit int, j MemberJob) error {
	var err error
	if j.Stream != nil {
		err = j.Stream(out, off, j.Threads)
	} else {
		err = produceTo(&offsetWriter{out: out, off: off}, j.Header.DataBytes(), limit, j.Producer)
	}
	if j.Release != nil {
		j.Release()
	}
	return err
}

// offsetWriter writes sequentially from off into a file output.
type offsetWriter struct {
	out *fileio.Output
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.out.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}
