package all_test

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/format/polygraphy"
	"github.com/depthspace/depthspace/internal/format/safetensors"
)

// TestContainerNames: every writable container either carries a member
// name exactly (it reads back the same) or refuses it, naming it, before
// writing: numpy reading "a\x00b" back as "a", JSON writing U+FFFD for
// bytes that are not UTF-8, unzip stripping "../", are never left to
// happen. (tar's names: pipeline's TestTarNamesNotCarried.)
func TestContainerNames(t *testing.T) {
	for _, c := range []struct {
		kind format.Kind
		name string
		want string // "" carried
	}{
		{npz.KindNpz, "a\x00b", `npz member "a\x00b": the name holds a NUL, which a zip member's name cannot carry: numpy would read it back as "a"`},
		{npz.KindNpz, "", `npz member "": an empty name`},
		{npz.KindNpz, "../x", `npz member "../x": the name is an absolute path or has a ".." element`},
		{npz.KindNpz, "d/../../x", `has a ".." element`},
		{npz.KindNpz, "/x", `npz member "/x": the name is an absolute path`},
		{npz.KindNpz, "a\xffb", `npz member "a\xffb": the name is not UTF-8`},
		{npz.KindNpz, "a..b/c", ""},
		{npz.KindNpz, "é/ü", ""},
		{safetensors.KindSafetensors, "a\x00b", ""},
		{safetensors.KindSafetensors, "", ""},
		{safetensors.KindSafetensors, "../x", ""},
		{safetensors.KindSafetensors, "a\xffb", `safetensors tensor "a\xffb": the name is not UTF-8`},
		{polygraphy.KindPolygraphy, "a\x00b", ""},
		{polygraphy.KindPolygraphy, "", ""},
		{polygraphy.KindPolygraphy, "../x", ""},
		{polygraphy.KindPolygraphy, "a\xffb", `polygraphy member "a\xffb": the name is not UTF-8`},
	} {
		b, err := writeNamed(c.kind, c.name)
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %q: got %v, want %q", c.kind, c.name, err, c.want)
			}
			if len(b) != 0 {
				t.Errorf("%s %q: %d bytes written before the refusal", c.kind, c.name, len(b))
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", c.kind, c.name, err)
			continue
		}
		if err := readsBackOne(c.kind, b, c.name); err != nil {
			t.Errorf("%s %q: %v", c.kind, c.name, err)
		}
	}
}

// writeNamed writes a container of kind holding one uint8 [2] member of
// that name: its bytes, or the error that refused it (and what had been
// written by then).
func writeNamed(kind format.Kind, name string) ([]byte, error) {
	u1, _ := format.ParseDType("|u1")
	h := format.Header{DType: u1, Shape: []int{2}}
	var buf bytes.Buffer
	mw, err := format.Lookup(kind).Create(&buf, []format.MemberSpec{{Name: name, Header: h}}, nil)
	if err == nil {
		var w io.Writer
		if w, err = mw.Member(name, h); err == nil {
			if _, err = w.Write([]byte{1, 2}); err == nil {
				err = mw.Close()
			}
		}
	}
	return buf.Bytes(), err
}

// readsBackOne says how a container writeNamed wrote does not read back
// as that one member, or nil.
func readsBackOne(kind format.Kind, b []byte, name string) error {
	ar, err := format.Lookup(kind).Open(b, format.OpenOptions{})
	if err != nil {
		return err
	}
	if len(ar.Members) != 1 || ar.Members[0].Name != name || !bytes.Equal(ar.Members[0].Data, []byte{1, 2}) {
		return fmt.Errorf("read back %d members, the first %q", len(ar.Members), ar.Members[0].Name)
	}
	return nil
}

// FuzzContainerNames: any member name is, in each writable container
// (npz, safetensors, polygraphy), either written and read back exactly
// or refused in one line before anything is written; npz refuses exactly
// the names NpzNameError names, the JSON containers exactly the names
// that are not UTF-8 (and safetensors its "__metadata__"). tar's names
// are copied as they come (pipeline's TestTarNamesCarried).
func FuzzContainerNames(f *testing.F) {
	for _, s := range []string{"out0", "a\x00b", "", "..", "../x", "a/../b", "/abs", "a\xffb", "\xc3", "é/ü", "arr_0",
		"__metadata__", "a/b/c", strings.Repeat("n", 5000), "\u2028", "a\\b\"c", "x.npy"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		for _, kind := range []format.Kind{npz.KindNpz, safetensors.KindSafetensors, polygraphy.KindPolygraphy} {
			b, err := writeNamed(kind, name)
			var refuse bool
			switch kind {
			case npz.KindNpz:
				refuse = npz.NpzNameError(name) != nil
			case safetensors.KindSafetensors:
				refuse = !utf8.ValidString(name) || name == "__metadata__"
			default:
				refuse = !utf8.ValidString(name)
			}
			if refuse != (err != nil) {
				t.Fatalf("%s %q: refused %v, want %v", kind, name, err, refuse)
			}
			if err != nil {
				if strings.ContainsAny(err.Error(), "\n\r") || len(b) != 0 {
					t.Fatalf("%s %q: %q after %d bytes", kind, name, err, len(b))
				}
				continue
			}
			if err := readsBackOne(kind, b, name); err != nil {
				t.Fatalf("%s %q: %v", kind, name, err)
			}
		}
	})
}
