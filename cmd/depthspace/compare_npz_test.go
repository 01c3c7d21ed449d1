package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
)

// writeNpz writes an archive of int16 members named by the map keys, in
// the order given.
func writeNpz(t *testing.T, path string, names []string, data map[string][]byte) {
	t.Helper()
	var buf bytes.Buffer
	w := format.NewNpzWriter(&buf, false)
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
