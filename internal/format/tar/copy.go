package tar

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/depthspace/depthspace/internal/format"
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

// maxTarMember bounds one tensor member held in memory.
const maxTarMember = 16 << 30

// copyShard reads job's shard and writes the result: every member in
// order, the tensor members worked on, the others copied through byte
// for byte.
func copyShard(job format.ShardJob) (worked int, err error) {
	c := newTarCopy(job)
	defer c.sw.stop()
	if c.br != nil {
		// A mapped shard truncated by another process faults on access:
		// an error, not a crash.
		defer func() {
			if r := recover(); r != nil {
				worked, err = 0, fmt.Errorf("input could not be read (was the file truncated while in use?): %v", r)
			}
		}()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	}
	for {
		hdr, raw, err := c.nextHeader()
		if err != nil {
			return 0, err
		}
		if hdr == nil {
			break // the end of the archive
		}
		if from, ok := c.renamed[hdr.Name]; ok {
			return 0, fmt.Errorf("member %q: %s", hdr.Name, renameClash(from, hdr.Name))
		}
		if key := sampleKey(hdr.Name); key != c.sample || c.sampleNames == nil {
			c.sample, c.sampleNames = key, map[string]bool{}
		}
		if hdr.Typeflag != tar.TypeReg || !isTensorMember(job.Members, hdr.Name) {
			if k := format.KindByExtension(hdr.Name); c.unpicked == "" && hdr.Typeflag == tar.TypeReg && !shardDefault(k) && format.InTarShard(k) {
				c.unpicked = hdr.Name
			}
			err = c.copyThrough(hdr, raw)
		} else {
			err = c.work(hdr, raw)
		}
		c.sampleNames[hdr.Name] = true
		if err != nil {
			return 0, err
		}
	}
	return c.worked, c.finish()
}

// tarCopy is the state of one copyTar.
type tarCopy struct {
	job  format.ShardJob
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

func newTarCopy(job format.ShardJob) *tarCopy {
	c := &tarCopy{job: job, all: job.All, drop: job.Drop}
	r := job.In
	if c.all != nil {
		c.br = r.(*bytes.Reader)
	} else {
		// archive/tar reads in 512-byte blocks.
		r = bufio.NewReaderSize(r, 1<<20)
	}
	c.tap = &headerTap{r: r}
	c.tr = tar.NewReader(c.tap)
	c.sw = newShardWriter(job.Out)
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
			return nil, nil, err
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
			return nil, nil, err
		}
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, tarErr(err)
	}
	if isSparse(h) {
		return nil, nil, sparseErr(h)
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
	return fmt.Errorf("member %q: %w", hdr.Name, tarErr(err))
}

// outputErr is a failure to write the output.
func outputErr(err error) error {
	return &format.ShardOutputError{Err: err}
}

// copyThrough copies a member that is not worked on, byte for byte.
func (c *tarCopy) copyThrough(hdr *tar.Header, raw []byte) error {
	if err := c.sw.header(hdr, raw); err != nil {
		return err
	}
	if c.br != nil && hdr.Size > 0 {
		data, err := c.content(hdr)
		if err != nil {
			return c.memberErr(hdr, err)
		}
		if err := c.sw.write(data); err != nil {
			return outputErr(err)
		}
		return nil
	}
	if err := c.sw.copyFrom(c.tr, hdr.Size); err != nil {
		var we *tarWriteError
		if errors.As(err, &we) {
			return outputErr(we.err)
		}
		return c.memberErr(hdr, err)
	}
	return nil
}

// work runs the job on a tensor member: an npy member by the kernel
// straight into the output's buffer, another in its own format.
func (c *tarCopy) work(hdr *tar.Header, raw []byte) error {
	if hdr.Size > maxTarMember {
		return fmt.Errorf("member %q claims %d bytes: more than one member may hold (%d)", hdr.Name, hdr.Size, int64(maxTarMember))
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
	if size, fill, ok, err := c.job.Work.Sized(hdr.Name, data); err != nil {
		return c.memberErr(hdr, err)
	} else if ok {
		if int64(size) != h.Size {
			anew()
			h.Size = int64(size)
		}
		if err := c.sw.header(&h, raw); err != nil {
			return err
		}
		if err := fill(c.sw.reserve(size)); err != nil {
			return c.memberErr(hdr, err)
		}
		c.sw.pad(size)
	} else {
		b, outName, err := c.job.Work.Whole(hdr.Name, data)
		if err != nil {
			return c.memberErr(hdr, err)
		}
		if outName != hdr.Name {
			if c.sampleNames[outName] {
				return fmt.Errorf("member %q: %s", hdr.Name, renameClash(hdr.Name, outName))
			}
			if c.renamed == nil {
				c.renamed = map[string]string{}
			}
			c.renamed[outName] = hdr.Name
			anew()
			h.Name = outName
		}
		if int64(len(b)) != h.Size {
			anew()
			h.Size = int64(len(b))
		}
		if err := c.sw.header(&h, raw); err != nil {
			return err
		}
		if err := c.sw.write(b); err != nil {
			return outputErr(err)
		}
	}
	if err := c.sw.failed(); err != nil {
		return outputErr(err)
	}
	if c.next-c.dropped >= 8<<20 {
		// Memory holds a window of the mapped shard, whatever its size.
		c.drop(c.next)
		c.dropped = c.next
	}
	c.worked++
	return nil
}

// finish ends the output shard: a shard with nothing worked on is an
// error (a --member matching nothing).
func (c *tarCopy) finish() error {
	if c.worked == 0 {
		what := "no " + strings.Join(defaultMembers(), " or ") + " member"
		if len(c.job.Members) > 0 {
			what = "no member matching --member " + strings.Join(c.job.Members, " --member ")
		}
		hint := ""
		if c.unpicked != "" {
			hint = fmt.Sprintf(" (to work on %q and its like, pick them with --member '*%s')", c.unpicked, path.Ext(c.unpicked))
		}
		return fmt.Errorf("the tar shard has %s: nothing to do%s", what, hint)
	}
	if err := c.sw.close(); err != nil {
		return outputErr(err)
	}
	return nil
}

// isTensorMember says whether a regular member is worked on: .npy members
// by default, those --member picks (by name or base name) otherwise.
func isTensorMember(globs []string, name string) bool {
	if len(globs) == 0 {
		return shardDefault(format.KindByExtension(name))
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
		if ok, _ := path.Match(g, path.Base(name)); ok {
			return true
		}
	}
	return false
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

// members reads the tensor members of a shard held in b for the
// commands that read tensors (info, compare): every regular member of a
// format registered InTar (a WebDataset .json is metadata), visited with
// where its bytes are in b. visit says how many tensors it found in the
// member; a shard with none is an error.
func members(b []byte, visit func(format.ShardMember) (int, error)) error {
	// Read, never seeked (content skipped is read, so a member cut short
	// is found), and counted: after Next, the position of the member's
	// content in b.
	cr := &headerTap{r: struct{ io.Reader }{bytes.NewReader(b)}}
	tr := tar.NewReader(cr)
	last := ""
	tensors := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			if err := tarEnd(cr.n, last); err != nil {
				return err
			}
			break
		}
		if err != nil {
			return tarErr(err)
		}
		last = hdr.Name
		kind := format.KindByExtension(hdr.Name)
		if hdr.Typeflag != tar.TypeReg || !format.InTarShard(kind) {
			continue
		}
		if isSparse(hdr) {
			return sparseErr(hdr)
		}
		if hdr.Size > int64(len(b))-cr.n {
			return fmt.Errorf("member %q: truncated tar archive", hdr.Name)
		}
		n, err := visit(format.ShardMember{Name: hdr.Name, Kind: kind, Off: cr.n, Size: hdr.Size})
		if err != nil {
			return fmt.Errorf("member %q: %w", hdr.Name, err)
		}
		tensors += n
	}
	if tensors == 0 {
		var exts []string
		for _, f := range format.All() {
			if f.InTar {
				exts = append(exts, f.Exts...)
			}
		}
		return fmt.Errorf("the tar shard holds no tensor member (%s)", strings.Join(exts, ", "))
	}
	return nil
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
