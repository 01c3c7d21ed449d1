package format

import "io"

// A shard format is an archive of files of the other formats (a tar
// shard, WebDataset's): its package reads and writes the archive, member
// by member, and the pipeline does the work on each tensor member through
// MemberWork. So the archive's codec knows nothing of plans and kernels,
// and the pipeline nothing of the archive's layout.

// ShardFormat is what a shard format does (Format.Shard).
type ShardFormat struct {
	// Copy reads the shard of job.In and writes it to job.Out, every
	// member in order: the tensor members worked on by job.Work, the
	// others copied through byte for byte. It returns how many members
	// were worked on; an error about the output is a *ShardOutputError,
	// any other is about the input (the shard's path is said by the
	// caller).
	Copy func(job ShardJob) (worked int, err error)
	// Members reads a whole shard, in memory, for the commands that read
	// tensors (info, compare): visit is called for every regular member
	// of a format registered InTar, with its format and where its bytes
	// are in b, and says how many tensors the member holds. A shard
	// without a tensor is an error.
	Members func(b []byte, visit func(m ShardMember) (tensors int, err error)) error
	// Making tells how a user makes a shard, for the refusal of an
	// output of this format from another input.
	Making string
}

// ShardJob is one shard to copy through MemberWork.
type ShardJob struct {
	// In reads the shard. All, when not nil, is its whole content (a
	// mapped file), from which In reads, and Drop tells how much of All
	// is done with; nil when the shard is streamed.
	In   io.Reader
	All  []byte
	Drop func(n int64)
	Out  io.Writer
	// Members are the --member globs (path.Match, on the member's name
	// or its base name) that pick the members worked on; none: the
	// members of the formats registered ShardDefault.
	Members []string
	Work    MemberWork
}

// ShardMember is a tensor member of a shard held in memory.
type ShardMember struct {
	Name string
	Kind Kind
	Off  int64 // where the member's bytes start in the shard
	Size int64
}

// MemberWork is the job run on each tensor member of a shard: the
// pipeline's, with its plans (kept across members), options and threads.
// Its errors are about the member, which the shard's codec names.
type MemberWork interface {
	// Sized prepares the work on a member whose output's size is known
	// before it is computed: fill writes the size bytes of the output
	// straight into the shard's output buffer. ok is false where the
	// member needs Whole.
	Sized(name string, data []byte) (size int, fill func(dst []byte) error, ok bool, err error)
	// Whole runs the job on a member's bytes in the member's own format
	// and returns the output's bytes and name (another name when the
	// member's format is read-only and it is written in the Plain one).
	Whole(name string, data []byte) (out []byte, outName string, err error)
}

// ShardOutputError is a failure writing a shard's output, told apart
// from one reading its input.
type ShardOutputError struct{ Err error }

func (e *ShardOutputError) Error() string { return e.Err.Error() }
func (e *ShardOutputError) Unwrap() error { return e.Err }
