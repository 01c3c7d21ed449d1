package format

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
)

// Kind is a format's name: each format's package declares its own.
type Kind string

// Format is one file format: how it is named, recognized and written.
// Each format's file registers its own (register, in an init): a new
// format is one new file and its registration, and the detection below,
// the flags' names and the output checks follow.
type Format struct {
	Kind Kind
	// Doc says what the format is in a few words: the completion of
	// --from/--to and docs/formats.md's table show it.
	Doc string
	// Rank places the format in every list a user sees (help, completion,
	// messages): lower first; 0 after the ranked ones, by name.
	Rank    int
	Noun    string   // what a file of it is, in messages: "an npz archive"
	Aliases []string // other --from/--to names
	Exts    []string // file extensions, with the dot, lower case
	// ByContent: the extensions are shared with another format (a
	// Polygraphy .json is JSON text), and this format claims a file of
	// them only when Sniff says its first bytes are this format's.
	ByContent bool
	// ReadOnly formats are read, never written (camera raw): --to
	// refuses them before any work.
	ReadOnly bool
	// Text formats may be written to a terminal; binary ones are refused
	// there.
	Text bool
	// InTar: a tar shard's member of this format holds tensors that info
	// and compare read (a WebDataset .json is metadata: not JSON's).
	InTar bool
	// Sniff reports whether a file's first bytes are this format's;
	// nil for formats without a signature. Formats are sniffed in the
	// order of SniffOrder (JSON, the loosest, last).
	Sniff      func(b []byte) bool
	SniffOrder int
	// Container formats hold named tensors, worked on member by member
	// (container.go). Open lists a file's members and Create writes them;
	// a container with both goes through the pipeline's generic member
	// path.
	Container bool
	Open      OpenFunc
	Create    CreateFunc
	// CreateAt, when set, writes a container into a file by position
	// (PlacedWriter), which the pipeline prefers for file outputs.
	CreateAt CreateAtFunc
	// Decode reads a file that holds one tensor and needs decoding (JSON,
	// ONNX, PNG); nil where the pipeline reads the format's bytes in
	// place or as members. want is --dtype when given. The name is the
	// tensor's own (an ONNX TensorProto's), or "".
	Decode func(b []byte, want *DType) (h Header, data []byte, name string, err error)
	// Preamble is what precedes the element bytes of a written tensor,
	// for formats whose data are the tensor's bytes as they are (npy, raw,
	// ONNX): the output is then streamed. Encode writes a whole tensor at
	// once, for the others (JSON, PNG). Containers have neither; Writers
	// (layout.go) makes either a layout of one member, so that every
	// output is written the same way. Its bytes may be shared between
	// outputs (npy gives one header's to every file of that header):
	// they are written out, never changed.
	Preamble func(h Header, name string) ([]byte, error)
	Encode   func(w io.Writer, h Header, name string, data []byte) error
	// CanWrite says why a tensor cannot be written in this format (nil:
	// it can): checked before any output is made.
	CanWrite func(h Header) error
	// Describe gives what info shows of a file beyond the tensor, as
	// key/value lines (JSON names: "bit_depth"); CFA names the 2x2 Bayer
	// pattern at the tensor's origin for --block-order cfa (camera raw).
	Describe func(b []byte) ([][2]string, error)
	CFA      func(b []byte) (string, error)
	// DTypeName is the format's own name for a dtype (safetensors'
	// "F32"), which info shows as the descr; nil: numpy's descr.
	DTypeName func(d DType) (string, error)

	// Bare: a file of the format has no header: --dtype and --shape
	// describe it (raw).
	Bare bool
	// InPlace: the format's element data follow a header as they are
	// (capability.go); nil for the others.
	InPlace *InPlace
	// ShardDefault: a tar shard's members of this format are worked on
	// without --member picking them.
	ShardDefault bool
	// Plain: the format a tensor is written in when its own cannot be
	// (Plain()).
	Plain bool
	// Metadata says whether a file of the format holds metadata, not a
	// tensor (a WebDataset .json beside its samples): a directory's
	// compare leaves it out.
	Metadata func(b []byte) bool
	// Values prints elements as the format's text prints them
	// (ValueTexts()).
	Values func(dt DType, elems [][]byte) ([]string, error)
	// Image: a uint8 [H, W, 3] tensor written in this format is a picture
	// viewers show (ImageFormat()).
	Image bool
	// Store: the format is a directory of objects (a Zarr store), read
	// and written through its StoreFormat (store.go); nil for a file.
	Store *StoreFormat
	// Shard: the format is an archive of files of the other formats,
	// each member worked on as a file of its own (a tar shard), read and
	// written by its ShardFormat (shard.go); nil for the others.
	Shard *ShardFormat

	// oneAt and one are a single-tensor format's layouts (layout.go).
	oneAt CreateAtFunc
	one   CreateFunc
}

var formats = map[Kind]*Format{}

// Register adds a format; each format's package calls it from init.
func Register(f Format) {
	if _, dup := formats[f.Kind]; dup {
		panic("format registered twice: " + string(f.Kind))
	}
	layOutOne(&f)
	formats[f.Kind] = &f
	registry.Store(nil)
}

// Lookup returns the registered format of a kind, or nil.
func Lookup(k Kind) *Format { return formats[k] }

// All lists the registered formats in the order every list a user sees
// follows (Rank, then name).
func All() []*Format { return slices.Clone(indexed().all) }

// index is what the lookups read, made once after the registrations
// (they come from init) and used by every file after: the command line
// asks for All a dozen times as it builds its flags' help, and a batch
// asks Detect and KindByExtension for every file, which walked the
// registry and cloned All's list each time.
type index struct {
	all []*Format // All's order
	// byExt: an extension's format, of those not ByContent (the first
	// in All's order).
	byExt map[string]Kind
	// sniffByExt: an extension's ByContent formats with a Sniff, in
	// All's order.
	sniffByExt map[string][]*Format
}

var registry atomic.Pointer[index]

func indexed() *index {
	if ix := registry.Load(); ix != nil {
		return ix
	}
	ix := &index{all: sortedFormats(), byExt: map[string]Kind{}, sniffByExt: map[string][]*Format{}}
	for _, f := range ix.all {
		for _, ext := range f.Exts {
			switch {
			case f.ByContent && f.Sniff != nil:
				ix.sniffByExt[ext] = append(ix.sniffByExt[ext], f)
			case f.ByContent:
			default:
				if _, taken := ix.byExt[ext]; !taken {
					ix.byExt[ext] = f.Kind
				}
			}
		}
	}
	registry.Store(ix)
	return ix
}

func sortedFormats() []*Format {
	all := make([]*Format, 0, len(formats))
	for _, f := range formats {
		all = append(all, f)
	}
	sort.Slice(all, func(i, j int) bool {
		ri, rj := all[i].Rank, all[j].Rank
		if (ri == 0) != (rj == 0) {
			return ri != 0
		}
		if ri != rj {
			return ri < rj
		}
		return all[i].Kind < all[j].Kind
	})
	return all
}

// Names lists the names of the formats that keep says yes to, in All's
// order (all of them for a nil keep).
func Names(keep func(*Format) bool) []string {
	var n []string
	for _, f := range All() {
		if keep == nil || keep(f) {
			n = append(n, string(f.Kind))
		}
	}
	return n
}

// InTarShard says whether a tar member of kind k holds tensors that info
// and compare read.
func InTarShard(k Kind) bool { return formats[k] != nil && formats[k].InTar }

// ReadsAlone says whether a file of the format is read with nothing but
// its bytes (not raw, which needs --dtype and --shape; not a tar shard).
func ReadsAlone(f *Format) bool { return !f.Bare && f.Shard == nil }

// Writable says whether --to may name the format.
func Writable(f *Format) bool { return !f.ReadOnly }

// ReadOnlyError says that a format is read, never written, and what can
// be written instead.
func ReadOnlyError(f *Format) error {
	return fmt.Errorf("%s is read-only here: depthspace reads it but does not write it; write %s instead (--to)", f.Kind, Either(Names(Writable)))
}

// IsContainerFormat says whether the format holds named tensors.
func IsContainerFormat(f *Format) bool { return f.Container }

// Either joins names as prose: "a, b or c".
func Either(names []string) string { return joinLast(names, " or ") }

// joinLast joins names with commas and last before the last one.
func joinLast(names []string, last string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + last + names[len(names)-1]
}

// IsContainer reports whether a format holds named tensors, worked on
// member by member.
func IsContainer(k Kind) bool { return formats[k] != nil && formats[k].Container }

// ParseKind reads a --from/--to value.
func ParseKind(s string) (Kind, error) { return ParseKindOf(s, nil) }

// ParseKindOf reads a --from/--to value; an unknown name's message lists
// the formats keep says yes to (--to's: the writable ones), all of them
// for a nil keep. A known format keep refuses is returned, for the caller
// to say why (ReadOnlyError).
func ParseKindOf(s string, keep func(*Format) bool) (Kind, error) {
	s = strings.ToLower(s)
	for k, f := range formats {
		if string(k) == s {
			return k, nil
		}
		for _, a := range f.Aliases {
			if a == s {
				return k, nil
			}
		}
	}
	return "", fmt.Errorf("unknown format %q (want %s)", s, Either(Names(keep)))
}

// KindByExtension names the format a file name implies, or "": of
// formats sharing an extension, the one that does not need the content
// (Detect looks at it). A .onnx file is a whole model, not a tensor:
// ExtensionError says so.
func KindByExtension(name string) Kind {
	return indexed().byExt[strings.ToLower(filepath.Ext(name))]
}

// Detect names the format of a file from its name and first bytes: its
// extension's format, unless a format sharing the extension claims the
// bytes (ByContent); with no known extension, the bytes' signature. ""
// when neither tells.
func Detect(name string, head []byte) Kind {
	if name != "" && name != "-" {
		ix := indexed()
		ext := strings.ToLower(filepath.Ext(name))
		for _, f := range ix.sniffByExt[ext] {
			if f.Sniff(head) {
				return f.Kind
			}
		}
		if k := ix.byExt[ext]; k != "" {
			return k
		}
	}
	return Sniff(head)
}

// OutputKind names the format an output file name implies, knowing the
// input's: a Polygraphy .json stays Polygraphy when written to .json.
func OutputKind(name string, in Kind) Kind {
	ext := strings.ToLower(filepath.Ext(name))
	if f := formats[in]; f != nil && f.ByContent && slices.Contains(f.Exts, ext) {
		return in
	}
	return KindByExtension(name)
}

// ExtensionError refuses a file name whose extension names something that
// is not a tensor (an ONNX model), or nil.
func ExtensionError(name string) error {
	if strings.EqualFold(filepath.Ext(name), ".onnx") {
		return fmt.Errorf("a .onnx file is a model, not a tensor; depthspace reads ONNX TensorProto files (.pb, as in test_data_set_*/input_0.pb): save the tensor with onnx.numpy_helper.from_array, or use --from/--to onnx to force it")
	}
	return nil
}

// Sniff names the format the first bytes imply (each format's signature,
// in SniffOrder), or "". Raw data and ONNX protobuf have no signature.
func Sniff(data []byte) Kind {
	var best *Format
	for _, f := range formats {
		if f.Sniff != nil && f.Sniff(data) && (best == nil || f.SniffOrder < best.SniffOrder) {
			best = f
		}
	}
	if best == nil {
		return ""
	}
	return best.Kind
}
