package format

import (
	"bytes"
	"strings"
	"testing"
)

// TestContainerNames: every writable container either carries a member
// name exactly (it reads back the same) or refuses it, naming it, before
// writing: numpy reading "a\x00b" back as "a", JSON writing U+FFFD for
// bytes that are not UTF-8, unzip stripping "../", are never left to
// happen. (tar's names: pipeline's TestTarNamesNotCarried.)
func TestContainerNames(t *testing.T) {
	u1, _ := ParseDType("|u1")
	h := Header{DType: u1, Shape: []int{2}}
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
		f := Lookup(c.kind)
		var buf bytes.Buffer
		members := []MemberSpec{{Name: c.name, Header: h}}
		mw, err := f.Create(&buf, members, nil)
		if err == nil {
			var w interface{ Write([]byte) (int, error) }
			if w, err = mw.Member(c.name, h); err == nil {
				if _, err = w.Write([]byte{1, 2}); err == nil {
					err = mw.Close()
				}
			}
		}
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s %q: got %v, want %q", c.kind, c.name, err, c.want)
			}
			if buf.Len() != 0 {
				t.Errorf("%s %q: %d bytes written before the refusal", c.kind, c.name, buf.Len())
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %q: %v", c.kind, c.name, err)
			continue
		}
		ar, err := f.Open(buf.Bytes(), OpenOptions{})
		if err != nil || len(ar.Members) != 1 || ar.Members[0].Name != c.name {
			t.Errorf("%s %q: read back %v, %v", c.kind, c.name, ar, err)
		}
	}
}
