package pipeline

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// The one way out. Every result — one tensor or an archive of many, to
// a file, a pipe, or a bucket's object (a file uploaded on Commit) —
// is written by writeResult: the output's format lays its members out
// (format.Writers: a single-tensor format is a container of one), and
// each member's bytes are made where the layout puts them. How they are
// made is the member's (MemberJob: chunk by chunk from several workers,
// computed whole into place when small, or a batch of items at a time);
// where they go is the sink's: a file by position, a stream in order.
//
//	jobs ──► layout (format) ──► placed: file by position ─┐
//	                         └─► in order: stream, deflated ┴─► Commit

// dest is where a job's result goes.
type dest struct {
	path   string    // "-": standard output
	stdout io.Writer // standard output
	target fileio.Target
	limit  int // the most memory a member made a batch of items at a time takes
	store  format.WriteOptions
	w      *writing // where the output's bookkeeping is kept (Options.Reuse); nil: new memory
}

// writeResult writes jobs as one output of format kind at d, atomically
// for files. A single-tensor format's Result is its one member's; a
// container's holds its members'.
func writeResult(d dest, kind format.Kind, jobs []MemberJob) (*Result, error) {
	if d.limit <= 0 {
		d.limit = DefaultBufferLimit
	}
	f := format.Lookup(kind)
	if f == nil {
		return nil, pathErr(displayName(d.path), fmt.Errorf("internal error: no format %q", kind))
	}
	if sf := format.StoreOf(kind); sf != nil {
		return writeStore(d, f, sf, jobs) // a directory (storewrite.go)
	}
	out, err := fileio.CreateFor(d.path, d.stdout, d.target)
	if err != nil {
		return nil, pathErr(d.path, err)
	}
	w := d.w
	if w == nil {
		w = new(writing)
	}
	*w = writing{out: out, f: f, jobs: jobs, limit: d.limit}
	if err := w.write(); err != nil {
		out.Abort()
		var pe *PathError
		if errors.As(err, &pe) {
			return nil, err
		}
		if _, ok := err.(*scratchError); ok {
			return nil, err // "DIR: making a scratch file there (TMPDIR)"
		}
		if fileio.IsObject(d.path) && !errors.As(err, new(*fileio.ScratchError)) &&
			(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
			// An object goes out through scratch files (the spool, the
			// parts): a full disk is TMPDIR's, not the bucket's, and no
			// server's refusal is an errno of this machine's.
			err = &fileio.ScratchError{Op: "writing", Object: d.path, Err: err}
		}
		return nil, pathErr(displayName(d.path), err)
	}
	if err := out.Commit(); err != nil {
		return nil, pathErr(displayName(d.path), err)
	}
	if !f.Container && len(jobs) == 1 && jobs[0].Result != nil {
		one := jobs[0].Result // the job's own, made for this output
		one.Name, one.Output, one.Written = "", d.path, out.Size()
		return one, nil
	}
	res := &Result{Output: d.path, Written: out.Size()}
	for _, j := range jobs {
		res.add(j.Result)
	}
	res.describeFirst()
	return res, nil
}

// writing is one output being written. It holds what one output of one
// tensor needs besides (the assembled file, the member's spec), so that
// a batch of tiny files makes one allocation for them, not three.
type writing struct {
	out   *fileio.Output
	f     *format.Format
	jobs  []MemberJob
	limit int
	fo    assembled
	one   [1]format.MemberSpec
}

func (w *writing) write() error {
	specs := w.one[:]
	if len(w.jobs) != 1 {
		specs = make([]format.MemberSpec, len(w.jobs))
	}
	for i, j := range w.jobs {
		specs[i] = format.MemberSpec{Name: j.Name, Header: j.Header, Compressed: j.Compressed}
	}
	var meta any
	if len(w.jobs) > 0 && w.jobs[0].From == w.f.Kind {
		meta = w.jobs[0].Meta // the input's own data, for an output of its format
	}
	createAt, create := format.Writers(w.f)
	if createAt != nil && w.out.IsFile() {
		fo := &w.fo
		*fo = assembled{out: w.out}
		pw, err := createAt(fo, specs, meta)
		if err != nil {
			return err
		}
		if pw != nil {
			return w.placed(fo, pw)
		}
	}
	if create == nil {
		return fmt.Errorf("internal error: %s output cannot be written", w.f.Kind)
	}
	bw := bufio.NewWriterSize(w.out, 1<<16)
	mw, err := create(bw, specs, meta)
	if err != nil {
		return err
	}
	if c, ok := mw.(format.Compressor); ok && c.Compresses() {
		err = w.compressed(c)
	} else {
		err = w.inOrder(bw, mw)
	}
	if err == nil {
		err = mw.Close()
	}
	if err == nil {
		err = bw.Flush()
	}
	return err
}

// placed writes each member's data where the layout puts them in the
// file: streamed chunk by chunk by several workers when its plan allows
// (the speed and memory of a single npy), computed whole into place when
// it is small, else a batch of items at a time.
func (w *writing) placed(fo *assembled, pw format.PlacedWriter) error {
	defer fo.release()
	fo.readsBack = true // Placed may read a member back (a checksum)
	for i := range w.jobs {
		j := &w.jobs[i]
		if j.Load != nil && !j.streams() && !j.small() {
			if err := j.Load(); err != nil {
				return err
			}
		}
		off, err := pw.Place(i)
		if err != nil {
			return err
		}
		err = w.place(fo, off, j)
		if j.Release != nil {
			j.Release()
		}
		if err != nil {
			return w.memberErr(j, err)
		}
		if err := pw.Placed(i); err != nil {
			return err
		}
	}
	if err := pw.Close(); err != nil {
		return err
	}
	return fo.flush()
}

// place makes member j's data at off of the file.
func (w *writing) place(fo *assembled, off int64, j *MemberJob) error {
	size := j.Header.DataBytes()
	if b := fo.window(off, size); b != nil && j.small() {
		// A small member, its input in memory: computed in place, and the whole
		// file written with one call (assembled).
		return computed(j.run.computeSmall(b))
	}
	if j.streams() {
		return computed(j.run.stream(fo, off, j.Threads))
	}
	if len(w.jobs) == 1 && fo.buf == nil && size > int64(w.limit) && (!j.Producer.Itemwise || size/int64(max(1, j.Producer.Items)) > int64(w.limit)) {
		// Larger than the buffer limit and not made a batch of items at
		// a time: written through a mapping of the file, so memory stays
		// bounded whatever its size.
		m, err := w.out.Map(off + size)
		if err != nil {
			return err
		}
		return j.Producer.produce(m[off:], 0, j.Producer.Items)
	}
	return produceTo(&offsetWriter{out: fo, off: off}, size, w.limit, j.Producer)
}

// inOrder writes the members one after another through the format's
// MemberWriter: a streamed run's chunks in order (into the stream itself
// when the format hands it back: a pipe gets the data in large writes),
// else a batch of items at a time.
func (w *writing) inOrder(bw *bufio.Writer, mw format.MemberWriter) error {
	for i := range w.jobs {
		j := &w.jobs[i]
		if g, ok := mw.(format.Gatherer); ok {
			if err := w.gather(g, j); err != nil {
				return err
			}
			continue
		}
		if j.Load != nil && !j.streams() {
			if err := j.Load(); err != nil {
				return err
			}
		}
		if j.Ready != nil && j.streams() {
			if err := j.Ready(); err != nil {
				return w.memberErr(j, computed(err))
			}
		}
		dst, err := mw.Member(j.Name, j.Header)
		if err != nil {
			return err
		}
		if j.streams() {
			var s sink = writerSink{dst}
			if dst == io.Writer(bw) {
				// The data follow what is buffered: flushed, the run
				// writes to the output itself.
				if err = bw.Flush(); err == nil {
					s = inOrderOutput{w.out}
				}
			}
			if err == nil {
				err = computed(j.run.stream(s, 0, j.Threads))
			}
		} else {
			err = produceTo(dst, j.Header.DataBytes(), w.limit, j.Producer)
		}
		if j.Release != nil {
			j.Release()
		}
		if err != nil {
			return w.memberErr(j, err)
		}
	}
	return nil
}

// gather makes member j whole in the memory of a format that encodes it
// whole (JSON, PNG), its input read whole first: as a file output holds
// it, with no spool on the way.
func (w *writing) gather(g format.Gatherer, j *MemberJob) error {
	if j.Release != nil {
		defer j.Release()
	}
	if j.Load != nil {
		if err := j.Load(); err != nil {
			return err
		}
	}
	b, err := g.Gather(j.Name, j.Header)
	if err != nil {
		return err
	}
	if err := j.Producer.produce(b, 0, j.Producer.Items); err != nil {
		return w.memberErr(j, err)
	}
	return nil
}

// memberErr says whom an error making member j is about: the input when
// its computation failed (a truncated or unreadable input), else the
// output; in a container, which member.
func (w *writing) memberErr(j *MemberJob, err error) error {
	var ce *computeError
	if errors.As(err, &ce) {
		err = ce.err
		var we *writeError
		var se *scratchError
		switch {
		case errors.As(err, &we):
			err = we.err
		case errors.As(err, &se):
			// TMPDIR's, neither the input's nor the output's: it names
			// its directory (bare for a single tensor, see writeResult).
		case !format.IsContainer(j.From):
			// The input's, and it holds one tensor: no member of its
			// own to name (a container's is the output's, arr_0).
			return j.inputErr(err)
		default:
			err = j.inputErr(err)
		}
	}
	if !w.f.Container {
		return err
	}
	var pe *PathError
	var me *memberError
	if errors.As(err, &pe) && !errors.As(err, &me) {
		return &PathError{Path: pe.Path, Err: inMember(w.f.Kind, j.Name, pe.Err)}
	}
	return inMember(w.f.Kind, j.Name, err)
}

// computeError is an error of a member's computation (a streamed run, or
// one made whole into place), not of writing it through the layout.
type computeError struct{ err error }

func (e *computeError) Error() string { return e.err.Error() }
func (e *computeError) Unwrap() error { return e.err }

func computed(err error) error {
	if err == nil {
		return nil
	}
	return &computeError{err}
}

// sink is what a streamed run writes to: a file by position (IsFile), or
// a stream in order; StreamFile is the pipe behind a stream, for
// sendfile and the pipe's size (nil if none).
type sink interface {
	chunkOutput
	StreamFile() *os.File
}

// inOrderOutput is an output written front to back (a pipe, or a file
// written through a format's sequential writer).
type inOrderOutput struct{ *fileio.Output }

func (inOrderOutput) IsFile() bool { return false }

// writerSink is a container member written in order.
type writerSink struct{ io.Writer }

func (writerSink) IsFile() bool { return false }
func (writerSink) WriteAt([]byte, int64) (int, error) {
	return 0, errors.New("internal error: a member written in order is written by position")
}
func (writerSink) StreamFile() *os.File { return nil }

// assembled is a file output handed to a format's layout. A small one
// is made in memory — the layout's headers and the member's data
// computed in place — and written with one call when done (a batch of
// small files: one pwrite each, not one for the header and one for the
// data); a large one is the file itself.
type assembled struct {
	out  *fileio.Output
	buf  []byte // the small file, from Reserve's size
	pool []byte // buf's pooled storage
	size int64
	// readsBack: a container's layout reads members' data back once
	// written (npz's CRC-32 of a stored member), so none is written once
	// and never read (OnceIn).
	readsBack bool
}

// assembleBelow is the largest file made in memory.
const assembleBelow = smallWhole

// OnceIn passes the hint on to an output not assembled in memory, unless
// its layout reads the bytes back.
func (a *assembled) OnceIn(from, to int64) {
	if a.buf == nil && !a.readsBack {
		a.out.OnceIn(from, to)
	}
}

func (a *assembled) Readable() bool       { return a.out.Readable() }
func (a *assembled) IsFile() bool         { return true }
func (a *assembled) StreamFile() *os.File { return nil }
func (a *assembled) Write([]byte) (int, error) {
	return 0, errors.New("internal error: a file output is written by position")
}

func (a *assembled) Reserve(size int64) error {
	if err := a.out.Reserve(size); err != nil {
		return err
	}
	if size <= assembleBelow && a.buf == nil {
		a.pool = fileio.GetBuffer(int(size))
		a.buf, a.size = a.pool[:size], size
	}
	return nil
}

func (a *assembled) WriteAt(p []byte, off int64) (int, error) {
	if a.buf == nil {
		return a.out.WriteAt(p, off)
	}
	if off < 0 || off+int64(len(p)) > a.size {
		return 0, fmt.Errorf("internal error: %d bytes at %d of a %d-byte file", len(p), off, a.size)
	}
	return copy(a.buf[off:], p), nil
}

func (a *assembled) ReadAt(p []byte, off int64) (int, error) {
	if a.buf == nil {
		return a.out.ReadAt(p, off)
	}
	if off >= a.size {
		return 0, io.EOF
	}
	n := copy(p, a.buf[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// window is the memory of bytes [off, off+n) of a file made in memory,
// nil for a file written as it goes.
func (a *assembled) window(off, n int64) []byte {
	if a.buf == nil || off < 0 || off+n > a.size {
		return nil
	}
	return a.buf[off : off+n]
}

// flush writes a file made in memory.
func (a *assembled) flush() error {
	if a.buf == nil || a.size == 0 {
		return nil
	}
	_, err := a.out.WriteAt(a.buf, 0)
	return err
}

func (a *assembled) release() {
	if a.pool != nil {
		fileio.PutBuffer(a.pool)
		a.pool, a.buf = nil, nil
	}
}

// compressed adds the members to an output that compresses them (a
// deflated npz), each compressed on one of up to -j goroutines. A member
// of scratchAbove or more whose plan runs in chunks (streamed) goes through
// two scratch files of the run's own — its data, computed chunk by
// chunk, then those data compressed — so that memory holds buffers
// whatever the member's size; the others are made whole in memory. At
// most 2×-j members are taken and not yet written at once.
func (w *writing) compressed(c format.Compressor) error {
	jobs := w.jobs
	threads := 1
	for _, j := range jobs {
		threads = max(threads, j.Threads)
	}
	results := make([]chan *packed, len(jobs))
	for i := range results {
		results[i] = make(chan *packed, 1)
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
			j := &jobs[i]
			d := &packed{}
			if j.streams() && j.Header.DataBytes() >= scratchAbove {
				d.err = packStreamed(c, j, d)
			} else {
				d.err = packWhole(c, j, d)
			}
			if d.err != nil {
				d.err = w.memberErr(j, d.err)
			}
			results[i] <- d
		}
	}
	for range min(threads, len(jobs)) {
		wg.Add(1)
		go func() { defer wg.Done(); work() }()
	}
	for i, j := range jobs {
		d := <-results[i]
		<-slots
		err := d.err
		if err == nil && d.z != nil {
			err = c.AddCompressed(j.Name, io.NewSectionReader(d.z, 0, d.csize), d.csize, d.sum, d.usize)
		} else if err == nil {
			err = c.AddCompressed(j.Name, bytes.NewReader(d.buf.Bytes()), int64(d.buf.Len()), d.sum, d.usize)
		}
		d.close()
		if err != nil {
			return err
		}
	}
	return nil
}

// packed is one member compressed: in buf, or the csize bytes of the
// scratch file z.
type packed struct {
	buf   bytes.Buffer
	z     *os.File
	csize int64
	sum   uint32
	usize uint64
	err   error
}

func (d *packed) close() {
	if d.z != nil {
		d.z.Close()
		d.z = nil
	}
}

// packWhole makes the member whole in memory and compresses it.
func packWhole(c format.Compressor, j *MemberJob, d *packed) error {
	if j.Load != nil {
		if err := j.Load(); err != nil {
			return err
		}
	}
	if j.Release != nil {
		defer j.Release()
	}
	data := make([]byte, j.Header.DataBytes())
	if err := j.Producer.produce(data, 0, j.Producer.Items); err != nil {
		return err
	}
	var err error
	d.sum, d.usize, err = c.Compress(j.Header, bytes.NewReader(data), int64(len(data)), &d.buf)
	return err
}

// packStreamed computes the member chunk by chunk into a scratch file,
// then compresses that into another, which the caller adds.
func packStreamed(c format.Compressor, j *MemberJob, d *packed) error {
	size := j.Header.DataBytes()
	data, err := fileio.Scratch()
	if err != nil {
		return &scratchError{op: "making", err: err}
	}
	defer data.Close()
	// One thread: the other cores compress other members.
	if err := j.run.stream(fileio.ScratchOutput(data), 0, 1); err != nil {
		return computed(err)
	}
	z, err := fileio.Scratch()
	if err != nil {
		return &scratchError{op: "making", err: err}
	}
	bw := bufio.NewWriterSize(scratchWriter{z}, 256<<10)
	d.sum, d.usize, err = c.Compress(j.Header, io.NewSectionReader(data, 0, size), size, bw)
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
		if err := p.produce(data, 0, p.Items); err != nil {
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
		if err := p.produce(b, first, count); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// offsetWriter writes sequentially from off into a file output.
type offsetWriter struct {
	out io.WriterAt
	off int64
}

func (w *offsetWriter) Write(p []byte) (int, error) {
	n, err := w.out.WriteAt(p, w.off)
	w.off += int64(n)
	return n, err
}
