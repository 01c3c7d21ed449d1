package format

import "io"

// What a format can do beyond being read and written whole is a
// capability of its registration. The pipeline, info, compare and the
// command line ask for capabilities, never for a format by its name, so
// a new format is one package that registers what it can do.

// InPlace is the capability of a format whose element data follow a
// header as they are (npy, raw): a file of it is mapped and its data
// used where they lie, a stream of it is read header first and its data
// streamed as they come, and info describes a file from its header
// alone.
type InPlace struct {
	// Parse reads the header at the start of a file of fileBytes bytes
	// (head holds at least HeadBytes of them, or all of them) and checks
	// the file's size against it and against the description given.
	Parse func(head []byte, fileBytes int64, d Description) (Preamble, error)
	// Read reads the header from a stream, consuming exactly its
	// DataOffset bytes, and checks it against the description given.
	Read func(r io.Reader, d Description) (Preamble, error)
	// HeadBytes is how much of a file's start holds the header of any
	// ordinary file of the format: info reads that much and no more. 0:
	// info reads the format's files whole.
	HeadBytes int
	// Member is the header of a tensor of the format written as a
	// member of an archive (a tar shard), where a member's data need no
	// page alignment.
	Member func(h Header) []byte
}

// Description is what the command line says of an input's tensor
// (--dtype, --shape): nil and empty when it says nothing.
type Description struct {
	DType *DType
	Shape []int
}

// Plain returns the format a tensor is written in when its own format
// cannot be written (a member of a read-only format in a tar shard): the
// format registered with Plain, or nil.
func Plain() *Format {
	for _, f := range All() {
		if f.Plain {
			return f
		}
	}
	return nil
}

// ValueTexts returns how the text format prints elements (Values), or
// nil: compare shows element values as the text output prints them.
func ValueTexts() func(dt DType, elems [][]byte) ([]string, error) {
	for _, f := range All() {
		if f.Values != nil {
			return f.Values
		}
	}
	return nil
}

// ImageFormat returns the format that writes a uint8 [H, W, 3] tensor as
// a picture viewers show (compare's difference images), or nil.
func ImageFormat() *Format {
	for _, f := range All() {
		if f.Image {
			return f
		}
	}
	return nil
}

// HeadBytes is the most any registered format's header-alone read needs
// (InPlace.HeadBytes): enough of a file's start for info to tell its
// format and read its header.
func HeadBytes() int {
	n := 0
	for _, f := range All() {
		if f.InPlace != nil {
			n = max(n, f.InPlace.HeadBytes)
		}
	}
	return n
}

// BareFormat returns the format of an input with no header of its own,
// that --dtype and --shape describe (raw), or nil.
func BareFormat() *Format {
	for _, f := range All() {
		if f.Bare {
			return f
		}
	}
	return nil
}
