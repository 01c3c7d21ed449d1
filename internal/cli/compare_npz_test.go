package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npz"
)

// writeNpz writes an archive of int16 members named by the map keys, in
// the order given.
func writeNpz(t *testing.T, path string, names []string, data map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	w := npz.NewNpzWriter(&buf, false)
	dt, _ := format.ParseDType("int16")
	for _, n := range names {
		m, err := w.Member(n, format.Header{DType: dt, Shape: []int{len(data[n]) / 2}})
		if err != nil {
			t.Fatal(err)
		}
		m.Write(data[n])
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// compare on archives of several arrays works member by member, matching
// members by name, whatever their order in the archive (SPEC: npz).
func TestCompareNpzMembers(t *testing.T) {
	dir := t.TempDir()
	x := []byte{1, 0, 2, 0, 3, 0}
	y := []byte{9, 0, 8, 0}
	yDiff := []byte{9, 0, 7, 0}
	a := filepath.Join(dir, "a.npz")
	writeNpz(t, a, []string{"x", "y"}, map[string][]byte{"x": x, "y": y})
	same := filepath.Join(dir, "same.npz")
	writeNpz(t, same, []string{"y", "x"}, map[string][]byte{"x": x, "y": y})
	diff := filepath.Join(dir, "diff.npz")
	writeNpz(t, diff, []string{"x", "y"}, map[string][]byte{"x": x, "y": yDiff})
	fewer := filepath.Join(dir, "fewer.npz")
	writeNpz(t, fewer, []string{"x", "z"}, map[string][]byte{"x": x, "z": y})

	runIt := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(append([]string{"compare"}, args...), nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, out, stderr := runIt(a, same); code != 0 || !strings.Contains(out, "archives "+a+" and "+same+" are equal (2 members compared)") {
		t.Fatalf("same members in another order: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ := runIt(a, diff)
	if code != 1 || !strings.Contains(out, a+":y and "+diff+":y differ") || !strings.Contains(out, "are equal") {
		t.Fatalf("one member differs: exit %d\n%s", code, out)
	}
	code, out, _ = runIt(a, fewer)
	if code != 1 || !strings.Contains(out, "only in "+a+": y") || !strings.Contains(out, "only in "+fewer+": z") {
		t.Fatalf("members only on one side: exit %d\n%s", code, out)
	}
	// --json: one object per member (with its name), then a summary, as
	// a batch's --json.
	code, out, _ = runIt("--json", a, diff)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var members []struct {
		Member    string
		Equal     bool
		Different int
	}
	for _, l := range lines[:len(lines)-1] {
		var m struct {
			Member    string
			Equal     bool
			Different int
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("--json record %q: %v", l, err)
		}
		members = append(members, m)
	}
	var sum struct {
		Summary             bool
		A, B                string
		Equal               bool
		Compared, Different int
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &sum); err != nil || code != 1 || !sum.Summary || sum.Equal ||
		sum.Compared != 2 || sum.Different != 1 || sum.A != a || len(members) != 2 ||
		members[0].Member != "x" || !members[0].Equal || members[1].Member != "y" || members[1].Different != 1 {
		t.Fatalf("--json: exit %d, %v\n%s", code, err, out)
	}
}

// Deflated archives are compared a pair of members at a time, each
// inflated when its turn comes (big ones into a mapped scratch file):
// the verdicts and the worst difference are those of the data.
func TestCompareDeflatedNpz(t *testing.T) {
	dir := t.TempDir()
	dt, _ := format.ParseDType("int16")
	big := make([]byte, 4<<20) // 2M int16: through a scratch file
	for i := range big {
		big[i] = byte(i % 7)
	}
	bigDiff := append([]byte{}, big...)
	bigDiff[2*123457] += 5
	write := func(name string, members map[string][]byte) string {
		var buf bytes.Buffer
		w := npz.NewNpzWriter(&buf, true)
		for _, n := range []string{"big", "small"} {
			m, err := w.Member(n, format.Header{DType: dt, Shape: []int{len(members[n]) / 2}})
			if err != nil {
				t.Fatal(err)
			}
			m.Write(members[n])
		}
		w.Close()
		path := filepath.Join(dir, name)
		os.WriteFile(path, buf.Bytes(), 0o644)
		return path
	}
	small := []byte{1, 0, 2, 0}
	a := write("a.npz", map[string][]byte{"big": big, "small": small})
	same := write("same.npz", map[string][]byte{"big": big, "small": small})
	diff := write("diff.npz", map[string][]byte{"big": bigDiff, "small": small})
	var out, errb bytes.Buffer
	if code := run([]string{"compare", a, same}, nil, &out, &errb); code != 0 {
		t.Fatalf("equal deflated archives: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	code := run([]string{"compare", "--json", a, diff}, nil, &out, &errb)
	if code != 1 {
		t.Fatalf("a member differs: exit %d\n%s%s", code, out.String(), errb.String())
	}
	var rec struct {
		Member     string
		MaxAbsDiff float64 `json:"max_abs_diff"`
		Different  int
	}
	if err := json.Unmarshal([]byte(strings.Split(out.String(), "\n")[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec.Member != "big" || rec.MaxAbsDiff != 5 || rec.Different != 1 {
		t.Errorf("big member: %+v, want one difference of 5", rec)
	}

	// No TMPDIR to inflate into: in memory, same verdicts.
	t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
	out.Reset()
	if code := run([]string{"compare", a, diff}, nil, &out, &errb); code != 1 || !strings.Contains(out.String(), ":big and ") {
		t.Errorf("no TMPDIR: exit %d\n%s%s", code, out.String(), errb.String())
	}

	// A corrupt member on one side only is still an error, not "only in".
	extra := write("extra.npz", map[string][]byte{"big": big, "small": small}) // its name; rewritten below
	var buf bytes.Buffer
	w := npz.NewNpzWriter(&buf, true)
	for _, n := range []string{"big", "small", "extra"} {
		data := map[string][]byte{"big": big, "small": small, "extra": big}[n]
		m, _ := w.Member(n, format.Header{DType: dt, Shape: []int{len(data) / 2}})
		m.Write(data)
	}
	w.Close()
	arch := buf.Bytes()
	cd := bytes.Index(arch, []byte("PK\x01\x02")) // the last member's data end here
	for k := cd - 12; k < cd-4; k++ {
		arch[k] ^= 0x55
	}
	os.WriteFile(extra, arch, 0o644)
	out.Reset()
	errb.Reset()
	if code := run([]string{"compare", extra, a}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), `npz member "extra"`) {
		t.Errorf("a corrupt member only in A: exit %d\n%s%s", code, out.String(), errb.String())
	}
}
