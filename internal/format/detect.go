package format

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// Kind is a container format.
type Kind string

const (
	KindNpy  Kind = "npy"
	KindRaw  Kind = "raw"
	KindJSON Kind = "json"
	// KindONNX is one ONNX TensorProto, as in the .pb files of ONNX's
	// test_data_set directories (onnx.go).
	KindONNX Kind = "onnx"
	// KindNpz is a numpy savez / savez_compressed archive: one npy tensor
	// per member (npz.go).
	KindNpz Kind = "npz"
	// KindSafetensors is a Hugging Face safetensors file: named tensors
	// and string metadata (safetensors.go).
	KindSafetensors Kind = "safetensors"
	// KindPNG is a PNG image: uint8/uint16 [H, W] or [H, W, C] (png.go).
	KindPNG Kind = "png"
	// KindTar is a tar archive of tensor files and others: a WebDataset
	// shard (pipeline/tar.go).
	KindTar Kind = "tar"
)

// SniffTar reports whether b (at least the first 512 bytes) is a tar
// header: the ustar magic at offset 257.
func SniffTar(b []byte) bool {
	return len(b) >= 263 && string(b[257:262]) == "ustar"
}

// Format is one file format: how it is named, recognized and written.
// Each format's file registers its own (register, in an init): a new
// format is one new file and its registration, and the detection below,
// the flags' names and the output checks follow.
type Format struct {
	Kind    Kind
	Noun    string   // what a file of it is, in messages: "an npz archive"
	Aliases []string // other --from/--to names
	Exts    []string // file extensions, with the dot, lower case
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
	// Decode reads a file that holds one tensor and needs decoding (JSON,
	// ONNX, PNG); nil where the pipeline reads the format's bytes in
	// place or as members. want is --dtype when given. The name is the
	// tensor's own (an ONNX TensorProto's), or "".
	Decode func(b []byte, want *DType) (h Header, data []byte, name string, err error)
	// Preamble is what precedes the element bytes of a written tensor,
	// for formats whose data are the tensor's bytes as they are (npy, raw,
	// ONNX): the output is then streamed. Encode writes a whole tensor at
	// once, for the others (JSON, PNG). Containers have neither.
	Preamble func(h Header, name string) ([]byte, error)
	Encode   func(w io.Writer, h Header, name string, data []byte) error
	// CanWrite says why a tensor cannot be written in this format (nil:
	// it can): checked before any output is made.
	CanWrite func(h Header) error
}

var formats = map[Kind]*Format{}

// register adds a format; the formats' files call it from init.
func register(f Format) {
	if _, dup := formats[f.Kind]; dup {
		panic("format registered twice: " + string(f.Kind))
	}
	formats[f.Kind] = &f
}

// Lookup returns the registered format of a kind, or nil.
func Lookup(k Kind) *Format { return formats[k] }

// kindNames lists the --from/--to names for messages, in a fixed order.
func kindNames() []string {
	var n []string
	for _, k := range []Kind{KindNpy, KindRaw, KindJSON, KindONNX, KindNpz, KindSafetensors, KindPNG, KindTar} {
		if formats[k] != nil {
			n = append(n, string(k))
		}
	}
	for k := range formats { // any other registered
		if !strings.Contains(" npy raw json onnx npz safetensors png tar ", " "+string(k)+" ") {
			n = append(n, string(k))
		}
	}
	return n
}

func init() {
	register(Format{Kind: KindRaw, Aliases: []string{"bin"}, Exts: []string{".raw", ".bin"},
		Preamble: func(Header, string) ([]byte, error) { return nil, nil }})
	// A tar shard is a format of the pipeline (pipeline/tar.go): detection
	// only here.
	register(Format{Kind: KindTar, Exts: []string{".tar"}, Sniff: SniffTar, SniffOrder: 50})
}

// IsContainer reports whether a format holds named tensors, worked on
// member by member.
func IsContainer(k Kind) bool { return formats[k] != nil && formats[k].Container }

// ParseKind reads a --from/--to value.
func ParseKind(s string) (Kind, error) {
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
	names := kindNames()
	return "", fmt.Errorf("unknown format %q (want %s or %s)", s, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
}

// KindByExtension names the format a file name implies, or "". A .onnx
// file is a whole model, not a tensor: ExtensionError says so.
func KindByExtension(name string) Kind {
	ext := strings.ToLower(filepath.Ext(name))
	for k, f := range formats {
		for _, e := range f.Exts {
			if e == ext {
				return k
			}
		}
	}
	return ""
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

// sniffJSON: JSON's opening '[' or '{' after white space.
func sniffJSON(data []byte) bool {
	for _, c := range data[:min(len(data), 4096)] {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[', '{':
			return true
		}
		return false
	}
	return false
}
