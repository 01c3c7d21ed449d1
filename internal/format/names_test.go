package format

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestContainerNames: every writable container either carries a member
// name exactly (it reads back the same) or refuses it, naming it, before
// writing: numpy reading "a\x00b" back as "a", JSON writing U+FFFD for
// bytes that are not UTF-8, unzip stripping "../", are never left to
// happen. (tar's names: pipeline's TestTarNamesNotCarried.)
func TestContainerNames(t *testing.T) {
	for _, c := range []struct {
		kind Kind
		name string
		want string // "" carried
	}{
		{KindNpz, "a\x00b", `npz member "a\x00b": the name holds a NUL, which a zip member's name cannot carry: numpy would read it back as "a"`},
		{KindNpz, "", `npz member "": an empty name`},
		{KindNpz, "../x", `npz member "../x": the name is an absolute path or has a ".." element`},
		{KindNpz, "d/../../x", `has a ".." element`},
		{KindNpz, "/x", `npz member "/x": the name is an absolute path`},
		{KindNpz, "a\xffb", `npz member "a\xffb": the name is not UTF-8`},
		{KindNpz, "a..b/c", ""},
		{KindNpz, "é/ü", ""},
		{KindSafetensors, "a\x00b", ""},
		{KindSafetensors, "", ""},
		{KindSafetensors, "../x", ""},
		{KindSafetensors, "a\xffb", `safetensors tensor "a\xffb": the name is not UTF-8`},
		{KindPolygraphy, "a\x00b", ""},
		{KindPolygraphy, "", ""},
		{KindPolygraphy, "../x", ""},
		{KindPolygraphy, "a\xffb", `polygraphy member "a\xffb": the name is not UTF-8`},
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
func writeNamed(kind Kind, name string) ([]byte, error) {
	u1, _ := ParseDType("|u1")
	h := Header{DType: u1, Shape: []int{2}}
	var buf bytes.Buffer
	mw, err := Lookup(kind).Create(&buf, []MemberSpec{{Name: name, Header: h}}, nil)
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
func readsBackOne(kind Kind, b []byte, name string) error {
	ar, err := Lookup(kind).Open(b, OpenOptions{})
	if err != nil {
		return err
	}
	if len(ar.Members) != 1 || ar.Members[0].Name != name || !bytes.Equal(ar.Members[0].Data, []byte{1, 2}) {
		return fmt.Errorf("read back %d members, the first %q", len(ar.Members), ar.Members[0].Name)
	}
	return nil
}
