package pipeline

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/format/safetensors"
	"github.com/depthspace/depthspace/internal/ops"
)

// A deflated npz of several members is worked on with its members
// inflated and deflated on several goroutines: the archive is the same,
// byte for byte, with -j 1 and -j 3, keeps the member order, and each
// member is the operator's result.
func TestDeflatedNpzThreads(t *testing.T) { bothScratchPaths(t, testDeflatedNpzThreads) }

// bothScratchPaths runs test with deflated members inflated through
// scratch files (scratchAbove 0), then in memory.
func bothScratchPaths(t *testing.T, test func(*testing.T)) {
	for _, above := range []int64{0, scratchAbove} {
		t.Run(fmt.Sprintf("scratch above %d", above), func(t *testing.T) {
			defer func(old int64) { scratchAbove = old }(scratchAbove)
			scratchAbove = above
			test(t)
		})
	}
}

func testDeflatedNpzThreads(t *testing.T) {
	dir := t.TempDir()
	in, names, want := deflatedNpz(t, dir, 7)
	var first []byte
	for _, threads := range []int{1, 3} {
		outPath := filepath.Join(dir, fmt.Sprintf("out%d.npz", threads))
		if _, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: in}, Output: outPath, Threads: threads}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(outPath)
		if first == nil {
			first = got
		} else if !bytes.Equal(first, got) {
			t.Errorf("-j %d wrote another archive than -j 1", threads)
		}
		ms, err := npz.ReadNpz(got)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range ms {
			if m.Name != names[i] || !m.Compressed || !bytes.Equal(m.Data, want[m.Name]) {
				t.Errorf("-j %d member %d (%s): compressed %v, content wrong: %v", threads, i, m.Name, m.Compressed, !bytes.Equal(m.Data, want[m.Name]))
			}
		}
	}
}

// deflatedNpz writes an archive of n deflated float32 members, and gives
// their names and what s2d with block 2 makes of each.
func deflatedNpz(t *testing.T, dir string, n int) (path string, names []string, want map[string][]byte) {
	t.Helper()
	rng := rand.New(rand.NewSource(9))
	var b bytes.Buffer
	nw := npz.NewNpzWriter(&b, true)
	want = map[string][]byte{}
	for i := 0; i < n; i++ {
		shape := []int{1, 2 + i%3, 8, 16}
		h := format.Header{DType: format.DType{Kind: 'f', Size: 4, Order: '<'}, Shape: shape}
		data := make([]byte, h.DataBytes())
		for k := range data {
			data[k] = byte(rng.Intn(4)) // compressible
		}
		name := fmt.Sprintf("out%d", i)
		w, err := nw.Member(name, h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		p, err := ops.NewPlan(ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, shape, 4, false)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, p.Bytes())
		if err := p.Run(out, data, 1); err != nil {
			t.Fatal(err)
		}
		want[name], names = out, append(names, name)
	}
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "in.npz")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, names, want
}

// Deflated members are inflated only when their job comes (one at a
// time, through scratch files): a safetensors output from them holds the
// right tensors, and a corrupt last member is found after the first
// members were worked on, yet leaves no output and names the input and
// the member, whatever the output.
func TestDeflatedNpzDeferred(t *testing.T) { bothScratchPaths(t, testDeflatedNpzDeferred) }

func testDeflatedNpzDeferred(t *testing.T) {
	dir := t.TempDir()
	in, names, want := deflatedNpz(t, dir, 4)
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	st := filepath.Join(dir, "out.safetensors")
	if _, err := Transform(Options{Request: s2d, Source: Source{Path: in}, Output: st, Threads: 2}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(st)
	got, err := safetensors.ReadSafetensors(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range got.Members {
		if m.Name != names[i] || !bytes.Equal(m.Data, want[m.Name]) {
			t.Errorf("safetensors tensor %d (%s) is not the s2d of npz member %s", i, m.Name, names[i])
		}
	}

	// Corrupt the end of the last member's compressed bytes (the central
	// directory follows them): its npy header still reads, its data not.
	arch, _ := os.ReadFile(in)
	cd := bytes.Index(arch, []byte("PK\x01\x02"))
	for k := cd - 12; k < cd-4; k++ {
		arch[k] ^= 0x55
	}
	if _, err := npz.ReadNpzDeferred(arch, nil); err != nil {
		t.Fatalf("the corruption reached a header: %v", err)
	}
	bad := filepath.Join(dir, "bad.npz")
	if err := os.WriteFile(bad, arch, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		output  string
		members []string
		threads int
	}{
		{"bad_out.npz", nil, 1},
		{"bad_out.npz", nil, 2},
		{"bad_out.safetensors", nil, 2},
		{"bad_out.npy", []string{names[len(names)-1]}, 2},
		{"-", nil, 2},
	} {
		var stdout bytes.Buffer
		out := tc.output
		if out != "-" {
			out = filepath.Join(dir, out)
		}
		var to format.Kind
		if out == "-" {
			to = npz.KindNpz
		}
		_, err := Transform(Options{Request: s2d, Source: Source{Path: bad, Members: tc.members}, Output: out, To: to, Threads: tc.threads, Stdout: &stdout})
		wantMsg := bad + `: npz member "` + names[len(names)-1] + `": `
		if err == nil || !strings.HasPrefix(err.Error(), wantMsg) {
			t.Errorf("%s -j %d: error %v, want one starting %q", tc.output, tc.threads, err, wantMsg)
		}
		if tc.output != "-" {
			if _, serr := os.Stat(out); serr == nil {
				t.Errorf("%s: an output was left", tc.output)
			}
		}
	}
	// info describes headers, yet a corrupt member is a malformed input.
	if _, err := Describe(Source{Path: bad}, nil); err == nil || !strings.Contains(err.Error(), `npz member "`+names[len(names)-1]+`"`) {
		t.Errorf("info of an archive with a corrupt member: %v, want an error naming it", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".*tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Deflated members under scratchAbove are inflated in memory: a missing
// TMPDIR stops only archives with big members, with a message that says
// it is the scratch file.
func TestDeflatedNpzScratch(t *testing.T) {
	dir := t.TempDir()
	small, _, _ := deflatedNpz(t, dir, 2)
	t.Setenv("TMPDIR", filepath.Join(dir, "missing"))
	s2d := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	if _, err := Transform(Options{Request: s2d, Source: Source{Path: small}, Output: filepath.Join(dir, "o.npz"), Threads: 2}); err != nil {
		t.Errorf("small members with no TMPDIR: %v", err)
	}
	big := bigDeflatedNpz(t, dir)
	_, err := Transform(Options{Request: s2d, Source: Source{Path: big}, Output: filepath.Join(dir, "o2.npz"), Threads: 2})
	if err == nil || !strings.Contains(err.Error(), "scratch file") {
		t.Errorf("a big member with no TMPDIR: %v, want an error about the scratch file", err)
	}
}

// bigDeflatedNpz writes DIR/big.npz, one deflated member "big" of 4 MiB
// (float32 [1,16,256,256], zeros): at scratchAbove, so its job inflates
// it into a scratch file.
func bigDeflatedNpz(t *testing.T, dir string) string {
	t.Helper()
	var b bytes.Buffer
	nw := npz.NewNpzWriter(&b, true)
	h := format.Header{DType: format.DType{Kind: 'f', Size: 4, Order: '<'}, Shape: []int{1, 16, 256, 256}}
	w, err := nw.Member("big", h)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(make([]byte, h.DataBytes())); err != nil {
		t.Fatal(err)
	}
	if err := nw.Close(); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.npz")
	if err := os.WriteFile(big, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return big
}
