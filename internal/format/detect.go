package format

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Kind is a container format.
type Kind string

const (
	KindNpy  Kind = "npy"
	KindRaw  Kind = "raw"
	KindJSON Kind = "json"
)

// ParseKind reads a --from/--to value.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(s) {
	case "npy":
		return KindNpy, nil
	case "raw", "bin":
		return KindRaw, nil
	case "json":
		return KindJSON, nil
	case "onnx", "pb", "npz":
		return "", fmt.Errorf("format %q is not supported yet", s)
	}
	return "", fmt.Errorf("unknown format %q (want npy, raw or json)", s)
}

// KindByExtension names the format a file name implies, or "".
func KindByExtension(name string) Kind {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".npy":
		return KindNpy
	case ".json":
		return KindJSON
	case ".raw", ".bin":
		return KindRaw
	}
	return ""
}

// Sniff names the format the first bytes imply: the npy magic, or JSON's
// opening '[' or '{' after white space. Raw data has no signature.
func Sniff(data []byte) Kind {
	if strings.HasPrefix(string(data[:min(len(data), 6)]), NpyMagic) {
		return KindNpy
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
