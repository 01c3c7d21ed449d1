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

// IsContainer reports whether a format holds named tensors, worked on
// member by member.
func IsContainer(k Kind) bool { return k == KindNpz || k == KindSafetensors }

// MemberWriter writes a container's members one after another: npz and
// safetensors share the pipeline's member mechanism through it.
type MemberWriter interface {
	Member(name string, h Header) (io.Writer, error)
	Close() error
}

// ParseKind reads a --from/--to value.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "npy":
		return KindNpy, nil
	case "raw", "bin":
		return KindRaw, nil
	case "json":
		return KindJSON, nil
	case "onnx", "pb":
		return KindONNX, nil
	case "npz":
		return KindNpz, nil
	case "safetensors", "st":
		return KindSafetensors, nil
	case "png":
		return KindPNG, nil
	case "tar":
		return KindTar, nil
	}
	return "", fmt.Errorf("unknown format %q (want npy, raw, json, onnx, npz, safetensors, png or tar)", s)
}

// KindByExtension names the format a file name implies, or "". A .onnx
// file is a whole model, not a tensor: ExtensionError says so.
func KindByExtension(name string) Kind {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".npy":
		return KindNpy
	case ".json":
		return KindJSON
	case ".raw", ".bin":
		return KindRaw
	case ".pb":
		return KindONNX
	case ".npz":
		return KindNpz
	case ".safetensors":
		return KindSafetensors
	case ".png":
		return KindPNG
	case ".tar":
		return KindTar
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

// Sniff names the format the first bytes imply: the npy magic, the zip
// magic of an npz, a safetensors header length followed by '{', or JSON's
// opening '[' or '{' after white space. Raw data
// and ONNX protobuf have no signature.
func Sniff(data []byte) Kind {
	if strings.HasPrefix(string(data[:min(len(data), 6)]), NpyMagic) {
		return KindNpy
	}
	if strings.HasPrefix(string(data[:min(len(data), 4)]), zipMagic) {
		return KindNpz
	}
	if SniffSafetensors(data) {
		return KindSafetensors
	}
	if SniffPNG(data) {
		return KindPNG
	}
	if SniffTar(data) {
		return KindTar
	}
	for _, c := range data[:min(len(data), 4096)] {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '[', '{':
			return KindJSON
		}
		break
	}
	return ""
}
