package format

import "io"

// A container format holds named tensors (members). Its file registers a
// Format with Container set and, for the generic member path, Open and
// Create: the pipeline then reads, transforms, lists, compares and
// writes its members with no code of its own for the format.

// OpenOptions say how a container is opened.
type OpenOptions struct {
	// File reads the same bytes as the mapped b by position, when the
	// input is a file (nil for a pipe read whole). Deferred members may
	// decode from it instead of touching the mapping.
	File io.ReaderAt
	// Threads: decode up to that many members at once where the format
	// decodes them up front (0: one).
	Threads int
	// Deferred asks for members that need decoding (deflated npz, base64)
	// to be left encoded until their job needs them (Member.Lazy), so an
	// archive of any size is worked on in bounded memory.
	Deferred bool
}

// Archive is an opened container: its members in file order and what an
// output of the same format keeps of it.
type Archive struct {
	Members []Member
	// Meta is the container's own data besides the members, handed to
	// Create for an output of the same format (safetensors'
	// __metadata__, Polygraphy's runners and runtimes); nil if none.
	Meta any
}

// Member is one tensor of a container.
type Member struct {
	Name   string
	Header Header
	// Stored is the member's own stored header when it is stored as a
	// file of a single-tensor format (an npy file in an npz or a
	// Polygraphy file): info shows its version and an output of that
	// format keeps its descr.
	Stored *Preamble
	// Data are the element bytes: a slice of the mapped file starting at
	// Offset when InFile (read by position from the file for big jobs),
	// else decoded into memory. Nil when Lazy is set.
	Data   []byte
	Offset int64
	InFile bool
	// Lazy decodes a member whose bytes are not in place (a deflated npz
	// member, a base64 array) when its job comes.
	Lazy Lazy
	// Compressed says the member was stored compressed, so that an
	// output of the same format compresses it too (npz).
	Compressed bool
}

// Preamble is a tensor's header as a file stores it in front of the
// element data: the tensor, the version of the file's format, and where
// the data start.
type Preamble struct {
	Header
	// Kind is the format whose header this is (an npz member's is npy's);
	// Major and Minor its version, 0 for a format without one.
	Kind         Kind
	Major, Minor int
	DataOffset   int64
}

// Lazy is a member's element data still encoded in the file.
type Lazy interface {
	// Inflate writes the decoded element data to w, checking them
	// (length, checksum) on the way.
	Inflate(w io.Writer) error
	// InflateData returns the decoded element data in memory.
	InflateData() ([]byte, error)
}

// MemberSpec is a member to be written: its name and its tensor, and
// whether its source member was stored compressed.
type MemberSpec struct {
	Name       string
	Header     Header
	Compressed bool
}

// MemberWriter writes a container's members one after another, in the
// order of the specs given to Create. Each member's writer takes exactly
// its header's DataBytes in C order.
type MemberWriter interface {
	Member(name string, h Header) (io.Writer, error)
	Close() error
}

// CreateFunc starts a container on w holding members (declared up front,
// in the order they will be written); meta is the Archive.Meta of an
// input of the same format, or nil.
type CreateFunc func(w io.Writer, members []MemberSpec, meta any) (MemberWriter, error)

// OpenFunc lists the members of a container file b (the whole file,
// mapped read-only: members may point into it, never write to it).
type OpenFunc func(b []byte, opt OpenOptions) (*Archive, error)

// Runs is implemented by the Meta of a container that holds several runs
// of one model side by side (a Polygraphy RunResults of several
// runners): compare with that one file checks every run against the
// first, member by member.
type Runs interface {
	// RunNames names the runs in file order.
	RunNames() []string
	// RunOf says which run a member (by its container name) belongs to,
	// and its name within that run, the same in every run ("out0", or
	// "1/out0" for an iteration); ok is false for a name it lacks.
	RunOf(member string) (run int, name string, ok bool)
}

// FileOut is an output file written by position: what CreateAt writes a
// container into.
type FileOut interface {
	io.WriterAt
	io.ReaderAt
	// Readable says whether ReadAt works (not a standard output this
	// process may only write).
	Readable() bool
	// Reserve sizes the file and reserves its blocks, so that a full
	// disk fails before any work.
	Reserve(size int64) error
}

// PlacedWriter writes a container into a file by position: each member's
// element data go where Place says, written there by the caller in any
// order and from several workers (chunk by chunk, as a single npy file's
// are), so memory holds buffers whatever the members' sizes.
type PlacedWriter interface {
	// Place writes what precedes member i's data (a header, a
	// preamble) and returns where its DataBytes go. Members are placed
	// in order.
	Place(i int) (int64, error)
	// Placed finishes member i once its data are written (npz: its
	// CRC-32, read back from the file).
	Placed(i int) error
	// Close writes what follows the members (a central directory).
	Close() error
}

// CreateAtFunc starts a container of members in f, written by position;
// nil and no error when this container cannot be written so (a
// compressed npz; an output that cannot be read back where the format
// needs to), and the members are then written in order through Create.
type CreateAtFunc func(f FileOut, members []MemberSpec, meta any) (PlacedWriter, error)
