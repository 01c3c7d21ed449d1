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
	"runtime/debug"
	"strconv"
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

// shardKind names the format of the job's input when it is a shard
// (format.Format.Shard: a tar shard), or "": --from, the extension, or
// the first bytes of a regular file.
func shardKind(opts Options) format.Kind {
	isShard := func(k format.Kind) format.Kind {
		if f := format.Lookup(k); f != nil && f.Shard {
			return k
		}
		return ""
	}
	switch {
	case opts.From != "":
		return isShard(opts.From)
	case opts.Path == "-":
		return "" // a piped shard needs --from
	case format.KindByExtension(opts.Path) != "":
		return isShard(format.KindByExtension(opts.Path))
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

// transformTar runs opts on every tensor member of a tar shard.
func transformTar(opts Options, shard format.Kind) (*Result, error) {
	to := outputKind(opts.To, opts.Output, shard)
	if to != shard {
		return nil, pathErr(opts.Path, fmt.Errorf("is a tar shard; its output is a tar shard too (an output named OUT.tar), not %s", to))
	}
	if opts.Output == "-" && opts.StdoutTTY {
		return nil, pathErr("stdout", errors.New("refusing to write a binary tar to a terminal; use -o FILE or a redirect"))
	}
	// A shard in a file is mapped (or, when small, read once): members
	// are slices of it, and tar skips the ones it does not need to read.
	// A pipe is read as a stream, one member at a time.
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
	res, err := copyTar(opts, r, all, drop, out)
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

// maxTarMember bounds one tensor member held in memory.
const maxTarMember = 16 << 30

// copyTar reads the shard from r — all, when not nil, being its whole
// content, from which r reads, and drop telling it how much of all is
// done with — and writes the result to w: every member in order, the
// tensor members worked on, the others copied through byte for byte.
func copyTar(opts Options, r io.Reader, all []byte, drop func(int64), w io.Writer) (res *Result, err error) {
	c := newTarCopy(opts, r, all, drop, w)
	defer c.sw.stop()
	if c.br != nil {
		// A mapped shard truncated by another process faults on access:
		// an error, not a crash.
		defer func() {
			if r := recover(); r != nil {
				res, err = nil, pathErr(c.name, fmt.Errorf("input could not be read (was the file truncated while in use?): %v", r))
			}
		}()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	for {
		hdr, raw, err := c.nextHeader()
		if err != nil {
			return nil, err
		}
		if hdr == nil {
			break // the end of the archive
		}
		if from, ok := c.renamed[hdr.Name]; ok {
			return nil, pathErr(c.name, fmt.Errorf("member %q: %s", hdr.Name, renameClash(from, hdr.Name)))
		}
		if key := sampleKey(hdr.Name); key != c.sample || c.sampleNames == nil {
			c.sample, c.sampleNames = key, map[string]bool{}
		}
		if hdr.Typeflag != tar.TypeReg || !isTensorMember(opts.Members, hdr.Name) {
			if k := format.KindByExtension(hdr.Name); c.unpicked == "" && hdr.Typeflag == tar.TypeReg && !shardDefault(k) && format.InTarShard(k) {
				c.unpicked = hdr.Name
			}
			err = c.copyThrough(hdr, raw)
		} else {
			err = c.work(hdr, raw)
		}
		c.sampleNames[hdr.Name] = true
		if err != nil {
			return nil, err
		}
	}
	return c.finish()
}

// tarCopy is the state of one copyTar.
type tarCopy struct {
	opts Options
	name string        // the input, for messages
	br   *bytes.Reader // the mapped shard's reader; nil when streamed
	all  []byte        // the mapped shard
	drop func(int64)
	// A member's header is copied as it is — its one 512-byte block —
	// when its size stays the same: encoding it again (archive/tar's
	// Writer) cost as much as a fifth of a shard's time. Headers of more
	// blocks (PAX records, GNU long names) and changed sizes are encoded.
	tap     *headerTap
	tr      *tar.Reader
	sw      *shardWriter
	fast    bool   // mapped: headers read by plainMember, until the first that is not plain
	next    int64  // mapped: where the next header starts
	pad     int64  // streamed: the padding tar skips first
	dataAt  int64  // mapped: where the member's content starts
	dropped int64  // mapped: the shard's bytes let go
	last    string // the name of the member read last
	in      []byte // a streamed member, reused
	plans   map[string]*ops.Plan
	res     *Result
	worked  int
	// A member of a read-only format (a DNG) is written as npy, beside
	// its name (renamedMember). Its new name must not be another
	// member's: renamed holds the new names (the member each came from),
	// checked against every later member; sampleNames the names written
	// in the current sample (a WebDataset sample's members are adjacent,
	// sharing the key before the base name's first dot), checked against
	// a new name, which stays in its member's sample.
	renamed     map[string]string
	sample      string
	sampleNames map[string]bool
	// unpicked is the first tensor member of another format than npy
	// (a .dng, a .png) that --member did not pick, for the hint of a
	// shard with nothing to do.
	unpicked string
}

func newTarCopy(opts Options, r io.Reader, all []byte, drop func(int64), w io.Writer) *tarCopy {
	c := &tarCopy{opts: opts, name: displayInput(opts.Path), all: all, drop: drop,
		plans: map[string]*ops.Plan{}, res: &Result{Input: opts.Path, Output: opts.Output}}
	if all != nil {
		c.br = r.(*bytes.Reader)
	} else {
		// archive/tar reads in 512-byte blocks.
		r = bufio.NewReaderSize(r, 1<<20)
	}
	c.tap = &headerTap{r: r}
	c.tr = tar.NewReader(c.tap)
	c.sw = newShardWriter(w)
	// A mapped shard's plain headers are read here (plainMember) until
	// the first that is not; from there on archive/tar reads them.
	c.fast = c.br != nil
	return c
}

// nextHeader reads the next member's header, and its blocks as they are
// in the input when they can be copied as they are (raw); a nil header
// at the end of the archive, which must end where a tar may.
func (c *tarCopy) nextHeader() (hdr *tar.Header, raw []byte, err error) {
	if c.fast {
		if h, ok := plainMember(c.all, c.next); ok {
			raw, c.dataAt = c.all[c.next:c.next+512], c.next+512
			c.next = c.dataAt + (h.Size+511)/512*512
			c.last = h.Name
			return h, raw, nil
		}
		// archive/tar from this header on.
		c.fast = false
		if _, err := c.br.Seek(c.next, io.SeekStart); err != nil {
			return nil, nil, pathErr(c.name, err)
		}
		c.tr = tar.NewReader(c.tap)
	}
	c.tap.rec, c.tap.on = c.tap.rec[:0], c.br == nil
	h, err := c.tr.Next()
	c.tap.on = false
	if err == io.EOF {
		pos := c.tap.n // streamed: what archive/tar read, the whole input
		if c.br != nil {
			// Where archive/tar stopped (a seek may go past the end).
			pos, _ = c.br.Seek(0, io.SeekCurrent)
			pos = min(pos, int64(len(c.all)))
		}
		if err := tarEnd(pos, c.last); err != nil {
			return nil, nil, pathErr(c.name, err)
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, pathErr(c.name, tarErr(err))
	}
	if isSparse(h) {
		return nil, nil, pathErr(c.name, sparseErr(h))
	}
	if c.br != nil {
		c.dataAt = c.br.Size() - int64(c.br.Len())
		raw, c.next = c.all[c.next:c.dataAt], c.dataAt+(h.Size+511)/512*512
	} else if int64(len(c.tap.rec)) >= c.pad {
		raw, c.pad = c.tap.rec[c.pad:], (512-h.Size%512)%512
	}
	if !plainHeader(raw, h) {
		raw = nil
	}
	c.last = h.Name
	return h, raw, nil
}

// content is the member's bytes: a slice of the mapped shard, or read.
func (c *tarCopy) content(hdr *tar.Header) ([]byte, error) {
	if c.br == nil {
		data, err := readMember(c.tr, hdr.Size, c.in[:0])
		c.in = data
		return data, err
	}
	off := c.dataAt
	if hdr.Size > int64(len(c.all))-off {
		return nil, io.ErrUnexpectedEOF
	}
	return c.all[off : off+hdr.Size : off+hdr.Size], nil
}

// memberErr says which member of the input an error is about.
func (c *tarCopy) memberErr(hdr *tar.Header, err error) error {
	return pathErr(c.name, fmt.Errorf("member %q: %w", hdr.Name, tarErr(err)))
}

// outputErr is a failure to write the output.
func (c *tarCopy) outputErr(err error) error {
	return pathErr(displayName(c.opts.Output), err)
}

// copyThrough copies a member that is not worked on, byte for byte.
func (c *tarCopy) copyThrough(hdr *tar.Header, raw []byte) error {
	if err := c.sw.header(hdr, raw); err != nil {
		return pathErr(c.name, err)
	}
	if c.br != nil && hdr.Size > 0 {
		data, err := c.content(hdr)
		if err != nil {
			return c.memberErr(hdr, err)
		}
		if err := c.sw.write(data); err != nil {
			return c.outputErr(err)
		}
		return nil
	}
	if err := c.sw.copyFrom(c.tr, hdr.Size); err != nil {
		var we *tarWriteError
		if errors.As(err, &we) {
			return c.outputErr(we.err)
		}
		return c.memberErr(hdr, err)
	}
	return nil
}

// work runs the job on a tensor member: an npy member by the kernel
// straight into the output's buffer, another in its own format.
func (c *tarCopy) work(hdr *tar.Header, raw []byte) error {
	if hdr.Size > maxTarMember {
		return pathErr(c.name, fmt.Errorf("member %q claims %d bytes: more than one member may hold (%d)", hdr.Name, hdr.Size, int64(maxTarMember)))
	}
	data, err := c.content(hdr)
	if err != nil {
		return c.memberErr(hdr, err)
	}
	h := *hdr
	// anew makes h the member's whole header, to be encoded again (a new
	// size or name): a plain block was read for its name, type and size
	// only, and its mode, owner and time must stay.
	anew := func() {
		if len(raw) == 512 {
			if full, err := tar.NewReader(io.MultiReader(bytes.NewReader(raw), bytes.NewReader(make([]byte, 1024)))).Next(); err == nil {
				full.Size = h.Size
				h = *full
			}
		}
		raw = nil
	}
	var mres *Result
	if job, ok, err := npyMember(c.opts, c.plans, hdr.Name, data); err != nil {
		return c.memberErr(hdr, err)
	} else if ok {
		if int64(job.size()) != h.Size {
			anew()
			h.Size = int64(job.size())
		}
		if err := c.sw.header(&h, raw); err != nil {
			return pathErr(c.name, err)
		}
		if err := job.run(c.sw.reserve(job.size())); err != nil {
			return c.memberErr(hdr, err)
		}
		c.sw.pad(job.size())
		mres = job.res
	} else {
		b, r, err := transformMember(c.opts, hdr.Name, data, nil)
		if err != nil {
			return c.memberErr(hdr, err)
		}
		if r.Name != hdr.Name {
			if c.sampleNames[r.Name] {
				return pathErr(c.name, fmt.Errorf("member %q: %s", hdr.Name, renameClash(hdr.Name, r.Name)))
			}
			if c.renamed == nil {
				c.renamed = map[string]string{}
			}
			c.renamed[r.Name] = hdr.Name
			anew()
			h.Name = r.Name
		}
		if int64(len(b)) != h.Size {
			anew()
			h.Size = int64(len(b))
		}
		if err := c.sw.header(&h, raw); err != nil {
			return pathErr(c.name, err)
		}
		if err := c.sw.write(b); err != nil {
			return c.outputErr(err)
		}
		mres = r
	}
	if err := c.sw.failed(); err != nil {
		return c.outputErr(err)
	}
	if c.next-c.dropped >= 8<<20 {
		// Memory holds a window of the mapped shard, whatever its size.
		c.drop(c.next)
		c.dropped = c.next
	}
	c.worked++
	c.res.Members = append(c.res.Members, mres)
	c.res.Bytes += mres.Bytes
	return nil
}

// finish ends the output shard: a shard with nothing worked on is an
// error (a --member matching nothing).
func (c *tarCopy) finish() (*Result, error) {
	if c.worked == 0 {
		what := "no " + strings.Join(defaultMembers(), " or ") + " member"
		if len(c.opts.Members) > 0 {
			what = "no member matching --member " + strings.Join(c.opts.Members, " --member ")
		}
		hint := ""
		if c.unpicked != "" {
			hint = fmt.Sprintf(" (to work on %q and its like, pick them with --member '*%s')", c.unpicked, path.Ext(c.unpicked))
		}
		return nil, pathErr(c.name, fmt.Errorf("the tar shard has %s: nothing to do%s", what, hint))
	}
	if err := c.sw.close(); err != nil {
		return nil, c.outputErr(err)
	}
	first := c.res.Members[0]
	c.res.InShape, c.res.OutShape, c.res.DType = first.InShape, first.OutShape, first.DType
	return c.res, nil
}

// isTensorMember says whether a regular member is worked on: .npy members
// by default, those --member picks (by name or base name) otherwise.
func isTensorMember(globs []string, name string) bool {
	if len(globs) == 0 {
		return shardDefault(format.KindByExtension(name))
	}
	return selected(globs, name) || selected(globs, path.Base(name))
}

// shardDefault says whether a shard's members of format k are worked on
// without --member picking them.
func shardDefault(k format.Kind) bool {
	f := format.Lookup(k)
	return f != nil && f.ShardDefault
}

// defaultMembers lists the extensions of the members a shard's job works
// on without --member: ".npy".
func defaultMembers() []string {
	var exts []string
	for _, f := range format.All() {
		if f.ShardDefault {
			exts = append(exts, f.Exts...)
		}
	}
	return exts
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

// npyJob is an npy member of an operator job, ready to run.
type npyJob struct {
	pre  []byte // the output's npy header
	p    *ops.Plan
	data []byte // the input's tensor data
	res  *Result
}

func (j *npyJob) size() int { return len(j.pre) + j.p.Bytes() }

// run writes the member's output (header and tensor) into dst.
func (j *npyJob) run(dst []byte) error {
	copy(dst, j.pre)
	return j.p.Run(dst[len(j.pre):], j.data, 1)
}

// npyMember prepares the common member, a C-order npy tensor of an
// operator job, without the machinery a large file needs: one kernel
// call into the output, the plan kept per dtype and shape for the
// thousands of members of a shard that share them. ok is false where it
// does not apply (the caller then takes transformMember's general path).
func npyMember(opts Options, plans map[string]*ops.Plan, name string, data []byte) (job *npyJob, ok bool, err error) {
	f := format.Lookup(format.KindByExtension(name))
	if f == nil || !f.ShardDefault || f.InPlace == nil || f.InPlace.Member == nil || opts.DType != "" || opts.Shape != "" {
		return nil, false, nil
	}
	npy, err := f.InPlace.Parse(data, int64(len(data)), format.Description{})
	if err != nil || npy.Fortran {
		return nil, false, nil // the general path says what is wrong
	}
	key := npy.DType.Descr() + format.ShapeString(npy.Shape)
	p := plans[key]
	if p == nil {
		t := &Tensor{Header: npy.Header, Kind: f.Kind}
		if p, err = opts.plan(t); err != nil {
			return nil, false, err
		}
		if p.Bytes() != p.InBytes() || !p.Streams() {
			return nil, false, nil // a crop or pad: the general path
		}
		plans[key] = p
	}
	return &npyJob{
		pre:  f.InPlace.Member(format.Header{DType: npy.DType, Shape: p.Out}),
		p:    p,
		data: data[npy.DataOffset:],
		res: &Result{Input: opts.Path, Output: opts.Output, Name: name, InShape: npy.Shape, OutShape: p.Out,
			DType: npy.DType.Name(), Bytes: int64(p.Bytes())},
	}, true, nil
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

// renamedMember is the name of a read-only member written as npy: its
// last extension replaced, "000.raw.dng" → "000.raw.npy", so that it
// stays in its WebDataset sample (the key before the first dot).
func renamedMember(name string, to *format.Format) string {
	return strings.TrimSuffix(name, path.Ext(name)) + to.Exts[0]
}

// renameClash says that a read-only member's npy name is another
// member's.
func renameClash(from, name string) string {
	return fmt.Sprintf("%q is written as %s under the name %q, which another member of the shard has: rename one of them", from, format.Plain().Kind, name)
}

// sampleKey is a member's WebDataset sample key: its name up to the first
// dot of its base name.
func sampleKey(name string) string {
	dir, base := path.Split(name)
	if i := strings.IndexByte(base, '.'); i >= 0 {
		base = base[:i]
	}
	return dir + base
}

// tarEnd checks the end of a shard, where archive/tar's Next said io.EOF
// after reading pos bytes of the input (all of it, unless it stopped at
// the two zero blocks that end an archive); last is the member before.
//
// An archive may end, as GNU tar 1.34 reads one, at a block boundary
// after a member: with the two zero blocks tar writes, with one (GNU tar
// warns "A lone zero block", exit status 0) or with none (GNU tar says
// nothing, exit status 0; Python's tarfile and archive/tar read it the
// same). Nothing in such a file tells it from a complete archive, so it
// is read as one. Ending anywhere else is truncation: inside a member's
// content archive/tar reports it, but inside the zeros that pad a member
// to its next block it returns io.EOF as if the archive were complete,
// where GNU tar says "Unexpected EOF in archive" (exit status 2). That
// is a position not on a block boundary, refused here. (A header block
// cut short is refused too, by archive/tar; GNU tar and tarfile stop
// there without a word.)
func tarEnd(pos int64, last string) error {
	if pos%512 == 0 {
		return nil
	}
	if last == "" {
		return errors.New("truncated tar archive")
	}
	return fmt.Errorf("truncated tar archive: it ends at byte %d, inside the zero padding after member %q (members after it may be lost)", pos, last)
}

// isSparse says whether a member is stored sparse (GNU tar --sparse, in
// the GNU or the PAX format): its bytes in the archive are a map and the
// data between holes, not its content.
func isSparse(h *tar.Header) bool {
	if h.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range h.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// sparseErr refuses a sparse member: members are copied or worked on
// from their bytes as stored, which a sparse one's are not (copied, it
// came out corrupt, or lost its content).
func sparseErr(h *tar.Header) error {
	return fmt.Errorf("member %q is stored sparse (tar --sparse), which depthspace does not read: make the shard without --sparse", h.Name)
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
// read tensors (info, compare): every regular member of a format
// registered InTar (npy, npz, safetensors, png, dng; a WebDataset .json is
// metadata), named by its member name
// (an npz or safetensors member's tensors as MEMBER/NAME). Their data are slices of the mapped
// shard where the format stores bytes as they are (npy, safetensors).
func decodeTar(shard format.Kind, src Source, in *fileio.Input) (*Tensor, error) {
	cr := &countingReader{r: bytes.NewReader(in.Data)}
	tr := tar.NewReader(cr)
	sh := &sharedInput{in: in}
	container := &Tensor{Kind: shard}
	last := ""
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			if err := tarEnd(cr.n, last); err != nil {
				return nil, err
			}
			break
		}
		if err != nil {
			return nil, tarErr(err)
		}
		last = hdr.Name
		kind := format.KindByExtension(hdr.Name)
		switch {
		case hdr.Typeflag != tar.TypeReg:
			continue
		case format.InTarShard(kind):
		default:
			continue
		}
		if isSparse(hdr) {
			return nil, sparseErr(hdr)
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
		var exts []string
		for _, f := range format.All() {
			if f.InTar {
				exts = append(exts, f.Exts...)
			}
		}
		return nil, fmt.Errorf("the tar shard holds no tensor member (%s)", strings.Join(exts, ", "))
	}
	sh.refs.Store(int32(len(container.members)))
	return container, nil
}

// plainMember reads the header block at all[off:] when it is a plain one
// — one block, ustar or GNU magic, a valid checksum, an octal size, a
// regular file or a directory — as Python's tarfile, GNU tar and
// archive/tar write them for names that fit: its name, size and type,
// without archive/tar, whose parsing (a scan of every block for non-ASCII
// bytes among it) took a tenth of a shard's time. ok is false for
// anything else, the end of the archive included: archive/tar reads it.
func plainMember(all []byte, off int64) (*tar.Header, bool) {
	if off < 0 || off > int64(len(all))-512 {
		return nil, false
	}
	b := all[off : off+512]
	posix := string(b[257:265]) == "ustar\x0000"
	gnu := string(b[257:265]) == "ustar  \x00"
	typ := b[156]
	if !posix && !gnu || typ != tar.TypeReg && typ != 0 && typ != tar.TypeDir || b[124]&0x80 != 0 {
		return nil, false
	}
	name := strings.TrimRight(string(b[:100]), "\x00")
	if typ == 0 && strings.HasSuffix(name, "/") {
		return nil, false // archive/tar makes that a directory
	}
	if posix && b[345] != 0 {
		name = strings.TrimRight(string(b[345:500]), "\x00") + "/" + name
	}
	h := &tar.Header{Name: name, Typeflag: tar.TypeReg}
	if typ == tar.TypeDir {
		h.Typeflag = tar.TypeDir
	}
	size, err := strconv.ParseInt(strings.Trim(string(b[124:136]), " \x00"), 8, 64)
	if err != nil || size < 0 || name == "" {
		return nil, false
	}
	h.Size = size
	if !plainHeader(b, h) {
		return nil, false // the checksum
	}
	return h, true
}

// plainHeader says whether raw is hdr's one header block, so that it can
// be copied as it is: 512 bytes, a valid checksum, hdr's size as an octal
// number, the end of hdr's name.
func plainHeader(raw []byte, hdr *tar.Header) bool {
	if len(raw) != 512 {
		return false
	}
	field := func(b []byte) string { return strings.Trim(string(b), " \x00") }
	sum := int64(0)
	for i, c := range raw {
		if i >= 148 && i < 156 {
			c = ' '
		}
		sum += int64(c)
	}
	chk, err1 := strconv.ParseInt(field(raw[148:156]), 8, 64)
	size, err2 := strconv.ParseInt(field(raw[124:136]), 8, 64)
	name := field(raw[:100])
	return err1 == nil && err2 == nil && chk == sum && size == hdr.Size && name != "" && strings.HasSuffix(hdr.Name, name)
}

// headerTap keeps what archive/tar reads while on: in Next, the padding
// of the member before and the header blocks. (A member's content is
// read with the tap off.)
type headerTap struct {
	r   io.Reader
	on  bool
	rec []byte
	n   int64 // bytes read through the tap (a streamed shard's position)
}

func (t *headerTap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	if t.on {
		t.rec = append(t.rec, p[:n]...)
	}
	return n, err
}

// Seek lets tar skip the content it is not asked for in a mapped shard.
func (t *headerTap) Seek(off int64, whence int) (int64, error) {
	if s, ok := t.r.(io.Seeker); ok {
		return s.Seek(off, whence)
	}
	return 0, errors.New("not seekable")
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
