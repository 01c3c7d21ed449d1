//go:build unix

package pipeline

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/ops"
)

func TestDescribe(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 1*8*4*6*4)
	c := filepath.Join(dir, "c.npy")
	writeNpy(t, c, "<f4", []int{1, 8, 4, 6}, false, data)
	f := filepath.Join(dir, "f.npy")
	writeNpy(t, f, ">i2", []int{3, 5}, true, make([]byte, 30))
	raw := filepath.Join(dir, "x.bin")
	if err := os.WriteFile(raw, data, 0o644); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "x.json")
	jsText := `{"dtype": "bfloat16", "shape": [2], "data": [1, 2]}`
	if err := os.WriteFile(js, []byte(jsText), 0o644); err != nil {
		t.Fatal(err)
	}
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		src  Source
		want Info
	}{
		{Source{Path: c}, Info{Path: c, Format: "npy", Version: "1.0", Stored: "npy", Shape: []int{1, 8, 4, 6}, DType: "float32", Descr: "<f4",
			ByteOrder: "little", Order: "C", Elements: 192, ElementBytes: 4, DataBytes: 768, HeaderBytes: i64(128), FileBytes: 896}},
		{Source{Path: f}, Info{Path: f, Format: "npy", Version: "1.0", Stored: "npy", Shape: []int{3, 5}, DType: ">i2", Descr: ">i2",
			ByteOrder: "big", Order: "F", Elements: 15, ElementBytes: 2, DataBytes: 30, HeaderBytes: i64(128), FileBytes: 158}},
		{Source{Path: raw, DType: "uint8", Shape: "768"}, Info{Path: raw, Format: "raw", Shape: []int{768}, DType: "uint8", Descr: "|u1",
			ByteOrder: "none", Order: "C", Elements: 768, ElementBytes: 1, DataBytes: 768, HeaderBytes: i64(0), FileBytes: 768}},
		{Source{Path: js}, Info{Path: js, Format: "json", Shape: []int{2}, DType: "bfloat16", Descr: "<V2",
			ByteOrder: "little", Order: "C", Elements: 2, ElementBytes: 2, DataBytes: 4, FileBytes: int64(len(jsText))}},
	} {
		all, err := Describe(tc.src, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != 1 {
			t.Fatalf("%d descriptions", len(all))
		}
		if got := all[0]; !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("Describe(%s):\n got %+v\nwant %+v", tc.src.Path, *got, tc.want)
		}
	}
	// Standard input: the whole input is read.
	b, _ := os.ReadFile(c)
	got, err := Describe(Source{Path: "-", Stdin: bytes.NewReader(b)}, nil)
	if err != nil || got[0].FileBytes != 896 || got[0].Format != "npy" {
		t.Errorf("stdin: %+v, %v", got, err)
	}
	// npy 2.0 and 3.0 headers say so.
	for _, v := range []byte{2, 3} {
		pre := npy.EncodeNpy(format.Header{DType: format.DType{Kind: 'u', Size: 1, Order: '|'}, Shape: []int{4}})
		text := pre[10:]
		v2 := append([]byte(npy.NpyMagic), v, 0)
		v2 = binary.LittleEndian.AppendUint32(v2, uint32(len(text)))
		v2 = append(append(v2, text...), 1, 2, 3, 4)
		p := filepath.Join(dir, "v.npy")
		if err := os.WriteFile(p, v2, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := Describe(Source{Path: p}, nil)
		if err != nil || got[0].Version != string('0'+v)+".0" || *got[0].HeaderBytes != int64(len(v2)-4) {
			t.Errorf("npy %d.0: %+v, %v", v, got, err)
		}
	}
	if _, err := Describe(Source{Path: filepath.Join(dir, "none.npy")}, nil); err == nil || !strings.Contains(err.Error(), "none.npy: no such file") {
		t.Errorf("missing file: %v", err)
	}
}

// Every op, order and layout: the planner's shape or its reason.
func TestPossibilities(t *testing.T) {
	got := Possibilities(ops.Block{2}, []int{1, 8, 4, 8}, 4)
	if len(got) != 8 {
		t.Fatalf("%d possibilities, want 8", len(got))
	}
	want := map[string][]int{
		"space-to-depth nchw": {1, 32, 2, 4}, "space-to-depth nhwc": {1, 4, 2, 32},
		"depth-to-space nchw": {1, 2, 8, 16}, "depth-to-space nhwc": {1, 16, 8, 2},
	}
	seen := map[string]int{}
	for _, p := range got {
		k := p.Op + " " + p.Layout
		seen[k+" "+p.Order]++
		if !p.Possible || !reflect.DeepEqual(p.Shape, want[k]) || p.Reason != "" {
			t.Errorf("%s %s: %+v, want shape %v", k, p.Order, p, want[k])
		}
	}
	if len(seen) != 8 {
		t.Errorf("combinations %v", seen)
	}
	for _, p := range Possibilities(ops.Block{2}, []int{1, 3, 5, 5}, 4) {
		switch {
		case p.Possible:
			t.Errorf("%+v possible on 1,3,5,5 with block 2", p)
		case p.Op == "space-to-depth" && p.Layout == "nchw" && p.Reason != "height 5 is not divisible by block 2":
			t.Errorf("reason %q", p.Reason)
		case p.Op == "depth-to-space" && p.Layout == "nchw" && p.Reason != "channels 3 is not divisible by 4 (block 2x2)":
			t.Errorf("reason %q", p.Reason)
		}
	}
	for _, p := range Possibilities(ops.Block{2}, []int{4, 4}, 4) {
		if p.Possible || !strings.Contains(p.Reason, "needs at least 3 axes") {
			t.Errorf("rank 2: %+v", p)
		}
	}
}

// Describe reads the header of an npy file and nothing else: on a 4 GiB
// sparse file it takes a handful of page faults, where touching the data
// would take at least 65536 (one per 64 KiB, with the kernel's fault-around).
func TestDescribeReadsOnlyTheHeader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "huge.npy")
	shape := []int{1 << 10, 1 << 10, 1 << 10}
	writeNpy(t, p, "<f4", shape, false, nil)
	if err := os.Truncate(p, 128+4<<30); err != nil {
		t.Skipf("cannot make a sparse 4 GiB file here: %v", err)
	}
	faults := func() int64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return ru.Minflt + ru.Majflt
	}
	before := faults()
	infos, err := Describe(Source{Path: p}, ops.Block{2})
	n := faults() - before
	if err != nil {
		t.Fatal(err)
	}
	if info := infos[0]; info.DataBytes != 4<<30 || len(info.Ops) != 8 {
		t.Errorf("%+v", info)
	}
	if n > 2000 {
		t.Errorf("describing a 4 GiB npy file took %d page faults: its data was read", n)
	}
	t.Logf("%d page faults", n)
}

// An npz archive is described member by member, each with its name.
func TestDescribeNpzMembers(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.npz")
	var buf bytes.Buffer
	zw := npz.NewNpzWriter(&buf, false)
	f4, _ := format.ParseDescr("<f4")
	u1, _ := format.ParseDescr("|u1")
	for _, m := range []struct {
		name string
		h    format.Header
	}{{"image", format.Header{DType: f4, Shape: []int{1, 4, 2, 2}}}, {"mask", format.Header{DType: u1, Shape: []int{3}}}} {
		w, err := zw.Member(m.name, m.h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(make([]byte, m.h.DataBytes())); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	infos, err := Describe(Source{Path: p}, ops.Block{2})
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Name == nil || *infos[0].Name != "image" || infos[1].Name == nil || *infos[1].Name != "mask" || infos[0].Format != "npz" ||
		infos[0].DType != "float32" || infos[1].Elements != 3 || infos[0].FileBytes != int64(buf.Len()) {
		t.Fatalf("%+v %+v", infos[0], infos[1])
	}
	if !infos[0].Ops[0].Possible || infos[1].Ops[0].Possible {
		t.Errorf("ops: %+v / %+v", infos[0].Ops[0], infos[1].Ops[0])
	}
}
