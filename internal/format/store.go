package format

import (
	"slices"
	"strings"
)

// A format may be a directory of objects rather than one file (Zarr: a
// store of chunks under a directory or an s3:// prefix). Such a format
// registers a StoreFormat as its Format's Store: the pipeline opens a
// directory input through it, the walk takes a directory that it claims
// as one input and never walks into it, and an output of its kind is a
// directory built beside the target. Nothing else names the format.

// Store is a directory of named objects, keys being slash-separated
// paths under it: what a format that is a directory reads.
type Store interface {
	// Name is the store as the user named it, for messages.
	Name() string
	// Read returns a whole object; an error wrapping fs.ErrNotExist when
	// there is none.
	Read(key string) ([]byte, error)
	// ReadRange returns n bytes of an object from off on; off < 0 counts
	// from its end (the last -off bytes, n ignored). Fewer bytes than
	// asked is an error.
	ReadRange(key string, off, n int64) ([]byte, error)
	// List names the entries directly under the directory dir ("" is
	// the root), sorted; a directory's name ends in "/".
	List(dir string) ([]string, error)
	// Size is an object's size; an error wrapping fs.ErrNotExist when
	// there is none.
	Size(key string) (int64, error)
}

// Described is a member (its Lazy) that says more of itself than its
// tensor (a Zarr array: version, chunks, codecs, missing chunks), for
// info, and how many bytes it takes where it is stored.
type Described interface {
	Details() ([][2]string, error)
	StoredBytes() int64
}

// StoreWriter is a store being written: objects put by key, the whole
// appearing at Commit only, and nothing on Abort.
type StoreWriter interface {
	Put(key string, data []byte) error
	Commit() error
	Abort()
}

// StoreFormat is what a format that is a directory does.
type StoreFormat struct {
	// Claims says whether a directory is a store of this format.
	Claims func(st Store) bool
	// Markers are the object names whose presence in a directory makes
	// it a store (or a node of one) of this format: how a listing of
	// keys, which has no directories to ask Claims of, knows a store.
	Markers []string
	// Open lists the store's tensors as an archive: one member named ""
	// for a store of one tensor, else each by its path in the store.
	Open func(st Store, opt OpenOptions) (*Archive, error)
	// Create starts a store of members (declared up front, in the order
	// they will be written) in w: each member's writer takes exactly its
	// header's DataBytes in C order, and Close writes what follows them
	// (the metadata). meta is the Archive.Meta of an input of the same
	// format, or nil.
	Create func(w StoreWriter, members []MemberSpec, meta any, opt WriteOptions) (MemberWriter, error)
	// Codecs names the compressors WriteOptions.Codec may name.
	Codecs []string
}

// WriteOptions are the flags that shape a written store.
type WriteOptions struct {
	Chunks  []int  // --chunks
	Codec   string // --zarr-codec
	Shards  []int  // --zarr-shard
	Threads int
}

// StoreOf returns the store of a format that is a directory, or nil.
func StoreOf(k Kind) *StoreFormat {
	if f := Lookup(k); f != nil {
		return f.Store
	}
	return nil
}

// StoreKind names the format whose store a directory is, or "".
func StoreKind(st Store) Kind {
	for _, f := range All() {
		if f.Store != nil && f.Store.Claims(st) {
			return f.Kind
		}
	}
	return ""
}

// StoreCodecs lists the compressors of every format that is a directory,
// each once, in the registry's order: what --zarr-codec may name.
func StoreCodecs() []string {
	var names []string
	for _, f := range All() {
		if f.Store == nil {
			continue
		}
		for _, c := range f.Store.Codecs {
			if !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
	}
	return names
}

// StoreMarker names the format whose store marker the last element of
// key is ("a/b.zarr/zarr.json": zarr3's), or "".
func StoreMarker(key string) Kind {
	base := key[strings.LastIndexByte(key, '/')+1:]
	for _, f := range All() {
		if f.Store != nil && slices.Contains(f.Store.Markers, base) {
			return f.Kind
		}
	}
	return ""
}
