package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	jsonfmt "github.com/depthspace/depthspace/internal/format/json"
	"github.com/depthspace/depthspace/internal/format/npy"
	"github.com/depthspace/depthspace/internal/format/npz"
	"github.com/depthspace/depthspace/internal/format/safetensors"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
)

// writeNpy writes a uint8 npy file of the given shape holding 0, 1, 2, …
func writeNpy(t testing.TB, name string, shape ...int) {
	t.Helper()
	dt, err := format.ParseDType("uint8")
	if err != nil {
		t.Fatal(err)
	}
	h := format.Header{DType: dt, Shape: shape}
	b := npy.EncodeNpy(h)
	for i := 0; i < h.Elements(); i++ {
		b = append(b, byte(i))
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, b, 0o666); err != nil {
		t.Fatal(err)
	}
}

func s2d(t testing.TB) pipeline.Options {
	block, err := ops.ParseBlock("2")
	if err != nil {
		t.Fatal(err)
	}
	return pipeline.Options{Request: ops.Request{Op: ops.SpaceToDepth, Order: ops.DCR, Layout: ops.NCHW, Block: block}}
}

func records(t *testing.T, out []byte) ([]Record, Summary) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var recs []Record
	for _, l := range lines[:len(lines)-1] {
		var r Record
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		recs = append(recs, r)
	}
	var s Summary
	dec := json.NewDecoder(strings.NewReader(lines[len(lines)-1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil || !s.IsSummary {
		t.Fatalf("last line %q is not a summary: %v", lines[len(lines)-1], err)
	}
	return recs, s
}

// A failing file in the middle: the others are done, the failure is
// reported once with its path, counted, and recorded in order.
func TestRunKeepsGoingPastAFailure(t *testing.T) {
	chdir(t)
	writeNpy(t, "d/a.npy", 1, 1, 4, 4)
	writeNpy(t, "d/b.npy", 1, 1, 5, 4) // height 5: not divisible by 2
	writeNpy(t, "d/c/c.npy", 2, 3, 2, 6)
	var stderr, stdout bytes.Buffer
	sum, err := Run(Options{Inputs: []string{"d"}, OutDir: "out", Job: s2d(t), Threads: 3, Stderr: &stderr, JSON: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 2 || sum.Failed != 1 || sum.Skipped != 0 || sum.Files != 3 || sum.Total != 3 || sum.Bytes != 16+72 {
		t.Errorf("summary %+v", sum)
	}
	if got, want := stderr.String(), "depthspace: "+filepath.FromSlash("d/b.npy")+": height 5 is not divisible by block 2\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	recs, s := records(t, stdout.Bytes())
	if s != *sum {
		t.Errorf("JSON summary %+v, returned %+v", s, *sum)
	}
	var order []string
	for _, r := range recs {
		order = append(order, filepath.ToSlash(r.Input)+":"+r.Status)
	}
	if got := strings.Join(order, " "); got != "d/a.npy:ok d/b.npy:failed d/c/c.npy:ok" {
		t.Errorf("records %s", got)
	}
	if r := recs[2]; r.Output != filepath.Join("out", "c", "c.npy") || format.ShapeString(r.InShape) != format.ShapeString([]int{2, 3, 2, 6}) ||
		format.ShapeString(r.OutShape) != format.ShapeString([]int{2, 12, 1, 3}) || r.DType != "uint8" || r.Bytes != 72 || r.Error != "" {
		t.Errorf("record %+v", r)
	}
	if r := recs[1]; r.Error != "height 5 is not divisible by block 2" || r.InShape != nil {
		t.Errorf("record %+v", r)
	}
	for _, name := range []string{"out/a.npy", "out/c/c.npy"} {
		if _, err := os.Stat(name); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat("out/b.npy"); err == nil {
		t.Error("out/b.npy written for a failed input")
	}
}

// --skip-existing skips any output that is there, runs the others.
func TestRunSkipExisting(t *testing.T) {
	chdir(t)
	writeNpy(t, "d/a.npy", 1, 1, 4, 4)
	writeNpy(t, "d/b.npy", 1, 1, 4, 4)
	touch(t, "out/a.npy")
	var stderr bytes.Buffer
	sum, err := Run(Options{Inputs: []string{"d"}, OutDir: "out", Job: s2d(t), Threads: 2, SkipExisting: true, Stderr: &stderr})
	if err != nil || sum.Done != 1 || sum.Skipped != 1 || sum.Failed != 0 {
		t.Fatalf("%+v %v", sum, err)
	}
	if b, _ := os.ReadFile("out/a.npy"); string(b) != "x" {
		t.Error("an existing output was rewritten")
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr %q", stderr.String())
	}
	if !strings.Contains(sum.String(), "1 done, 1 skipped, 0 failed") {
		t.Errorf("summary %q", sum.String())
	}
}

// Shards run one after the other write exactly what the whole batch
// writes, byte for byte.
func TestRunShardsMakeTheWhole(t *testing.T) {
	chdir(t)
	for i := 0; i < 11; i++ {
		writeNpy(t, filepath.Join("d", string(rune('a'+i%4)), string(rune('k'+i))+".npy"), 1, 2, 2*(i%3+1), 4)
	}
	job := s2d(t)
	if _, err := Run(Options{Inputs: []string{"d"}, OutDir: "whole", Job: job, Threads: 2, Stderr: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := 0; k < 4; k++ {
		s, err := Run(Options{Inputs: []string{"d"}, OutDir: "parts", Job: job, Threads: 1, Shard: Shard{k, 4}, Stderr: &bytes.Buffer{}})
		if err != nil || s.Failed != 0 || s.Total != 11 {
			t.Fatalf("%+v %v", s, err)
		}
		total += s.Done
	}
	if total != 11 {
		t.Errorf("shards did %d files, want 11", total)
	}
	compareTrees(t, "whole", "parts")
}

func compareTrees(t *testing.T, a, b string) {
	t.Helper()
	files := func(root string) map[string][]byte {
		m := map[string][]byte{}
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			m[rel], err = os.ReadFile(p)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	fa, fb := files(a), files(b)
	if len(fa) != len(fb) {
		t.Errorf("%s has %d files, %s %d", a, len(fa), b, len(fb))
	}
	for name, da := range fa {
		if db, ok := fb[name]; !ok || !bytes.Equal(da, db) {
			t.Errorf("%s: differs between %s and %s", name, a, b)
		}
	}
}

// Problems with the batch as a whole are errors before any work.
func TestRunRefuses(t *testing.T) {
	chdir(t)
	writeNpy(t, "a/x.npy", 1, 1, 2, 2)
	writeNpy(t, "b/x.npy", 1, 1, 2, 2)
	touch(t, "file")
	for _, c := range []struct {
		opts Options
		want string
	}{
		{Options{OutDir: "out"}, "needs at least one INPUT"},
		{Options{Inputs: []string{"a"}, OutDir: "file"}, "file: "},
		{Options{Inputs: []string{"a"}, OutDir: "a"}, "a: is the output directory too"},
		{Options{Inputs: []string{"-"}, OutDir: "out"}, "standard input"},
	} {
		c.opts.Job, c.opts.Stderr = s2d(t), &bytes.Buffer{}
		if _, err := Run(c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opts.Inputs, err, c.want)
		}
	}
	if _, err := os.Stat("out/x.npy"); err == nil {
		t.Error("a refused batch wrote an output")
	}
}

// Two inputs that would write one output: the first is written, the
// second is a failure that names both (found as the walk comes to it:
// the batch holds no list of every output), and the batch goes on.
func TestRunCollision(t *testing.T) {
	chdir(t)
	writeNpy(t, "a/x.npy", 1, 1, 2, 2)
	writeNpy(t, "b/x.npy", 1, 1, 2, 2)
	writeNpy(t, "b/y.npy", 1, 1, 2, 2)
	var stderr bytes.Buffer
	sum, err := Run(Options{Inputs: []string{"a", "b"}, OutDir: "out", Job: s2d(t), Threads: 2, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Done != 2 || sum.Failed != 1 {
		t.Errorf("%d done, %d failed; want 2 and 1", sum.Done, sum.Failed)
	}
	if !strings.Contains(stderr.String(), "depthspace: b/x.npy: not written: its output out/x.npy is a/x.npy's") {
		t.Errorf("stderr: %s", stderr.String())
	}
	for _, f := range []string{"out/x.npy", "out/y.npy"} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Threads given out never exceed -j, a big file gets all of them and
// runs alone, and every file starts once.
func TestRunnerThreads(t *testing.T) {
	sizes := []int64{1, 1, 64 << 20, 1, 5 << 20, 1, 1, 1, 1 << 30, 1}
	r := &runner{threads: 4, free: 4}
	var items []item
	for _, s := range sizes {
		items = append(items, item{size: s})
	}
	r.q = queueOf(items)
	r.cond = sync.NewCond(&r.mu)
	var mu sync.Mutex
	inUse, peak := 0, 0
	var order []int
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, i, w, _, ok := r.take()
				if !ok {
					return
				}
				mu.Lock()
				order = append(order, i)
				if w != threadsFor(sizes[i], 4) {
					t.Errorf("file %d got %d threads, want %d", i, w, threadsFor(sizes[i], 4))
				}
				if w == 4 && inUse != 0 {
					t.Errorf("file %d needing every thread started beside files holding %d", i, inUse)
				}
				inUse += w
				peak = max(peak, inUse)
				mu.Unlock()
				time.Sleep(time.Millisecond)
				mu.Lock()
				inUse -= w
				mu.Unlock()
				r.release(w)
			}
		}()
	}
	wg.Wait()
	if peak > 4 || r.free != 4 {
		t.Errorf("peak %d threads in use, %d free at the end; want at most 4 and 4", peak, r.free)
	}
	// take hands the files out in list order (r.turn); the workers record
	// them after it returns, so the record may interleave: each file
	// must be there once.
	slices.Sort(order)
	for k, i := range order {
		if i != k {
			t.Fatalf("files started: %v, want each of 0..%d once", order, len(sizes)-1)
		}
	}
	if len(order) != len(sizes) {
		t.Errorf("%d files started, want %d", len(order), len(sizes))
	}
}

// The summary line's "written" is the bytes of the output files (npy
// headers included), as du -b adds them up, not the tensor data alone;
// each record has its file's size, and the JSON keeps both counts. An npz
// output, whose zip headers are most of a small file, too, and every
// other way an output is written: text in order (JSON), a container laid
// out by position (safetensors), a file larger than the buffer limit
// (written through a mapping), and outputs replaced by a second run.
func TestSummaryCountsFileBytes(t *testing.T) {
	chdir(t)
	writeNpy(t, "d/a.npy", 1, 1, 4, 4)
	writeNpy(t, "d/b.npy", 1, 1, 5, 4) // fails: written nothing
	writeNpy(t, "d/c/c.npy", 2, 3, 2, 6)
	for _, run := range []struct {
		to    format.Kind
		limit int
		out   string
	}{
		{"", 0, "out"}, {npz.KindNpz, 0, "outnpz"}, {jsonfmt.KindJSON, 0, "outjson"},
		{safetensors.KindSafetensors, 0, "outst"}, {"", 64, "outmapped"},
		{"", 0, "out"}, {npz.KindNpz, 0, "outnpz"}, // replacing
	} {
		to, out := run.to, run.out
		job := s2d(t)
		job.BufferLimit = run.limit
		job.To = to
		var stdout bytes.Buffer
		sum, err := Run(Options{Inputs: []string{"d"}, OutDir: out, Job: job, Threads: 2, Stderr: &bytes.Buffer{}, JSON: &stdout})
		if err != nil {
			t.Fatal(err)
		}
		recs, _ := records(t, stdout.Bytes())
		files := int64(0)
		for _, r := range recs {
			size := int64(0)
			if r.Status == StatusOK {
				fi, err := os.Stat(r.Output)
				if err != nil {
					t.Fatal(err)
				}
				size = fi.Size()
			}
			if r.Written != size {
				t.Errorf("%s: record says %d bytes written, the file has %d", r.Output, r.Written, size)
			}
			files += size
		}
		if sum.Written != files || sum.Bytes != 16+72 || files <= sum.Bytes || sum.Done != 2 {
			t.Errorf("--to %q: summary written %d, bytes %d; the files hold %d bytes", to, sum.Written, sum.Bytes, files)
		}
		if want := FormatBytes(files) + " written in "; !strings.Contains(sum.String(), want) {
			t.Errorf("summary line %q, want %q", sum.String(), want)
		}
	}
}

// An --out-dir the batch makes deep inside an input tree is not walked:
// the walk reads that part of the tree after the directory was made, and
// its outputs would be taken for inputs (found in review: 2,000 files
// gave 2,516 with 515 failed and out/sub/out/sub/... made).
func TestRunNewOutDirInsideInput(t *testing.T) {
	chdir(t)
	writeNpy(t, "in/a.npy", 1, 1, 2, 2)
	// More files than the walk runs ahead of the workers, so that the
	// first outputs exist when it comes to out/.
	const n = 2000
	for i := range n {
		writeNpy(t, fmt.Sprintf("in/sub/b%04d.npy", i), 1, 1, 2, 2)
	}
	var stderr bytes.Buffer
	sum, err := Run(Options{Inputs: []string{"in"}, OutDir: "in/sub/out", Job: s2d(t), Threads: 2, Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Files != n+1 || sum.Done != n+1 || sum.Failed != 0 {
		t.Errorf("%d files, %d done, %d failed; want %d, all done", sum.Files, sum.Done, sum.Failed, n+1)
	}
	if _, err := os.Stat("in/sub/out/sub/out"); err == nil {
		t.Error("the outputs were walked as inputs: in/sub/out/sub/out exists")
	}
}

// failAfter accepts n writes, then fails every one, as a disk that fills
// up or a reader that goes away.
type failAfter struct{ n int }

func (w *failAfter) Write(p []byte) (int, error) {
	if w.n == 0 {
		return 0, syscall.ENOSPC
	}
	w.n--
	return len(p), nil
}

// A --json record that cannot be written fails the batch (the files are
// still all done, and the summary says so), whichever record it is.
func TestRunJSONWriteFailure(t *testing.T) {
	chdir(t)
	writeNpy(t, "d/a.npy", 1, 1, 4, 4)
	writeNpy(t, "d/b.npy", 1, 1, 4, 4)
	for n := 0; n <= 2; n++ { // the first record, the second, the summary
		var stderr bytes.Buffer
		sum, err := Run(Options{Inputs: []string{"d"}, OutDir: fmt.Sprint("out", n), Job: s2d(t), Threads: 2, Stderr: &stderr, JSON: &failAfter{n}})
		if err == nil || !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("%d records written, then a failure: err %v", n, err)
		}
		if sum == nil || sum.Done != 2 {
			t.Errorf("%d records written, then a failure: summary %+v", n, sum)
		}
	}
	if _, err := Run(Options{Inputs: []string{"d"}, OutDir: "out3", Job: s2d(t), Threads: 2, Stderr: io.Discard, JSON: &failAfter{3}}); err != nil {
		t.Errorf("every record written: %v", err)
	}
}

// recordWatch is a --json writer that, as each file's record arrives,
// looks at whether the next file's output exists yet.
type recordWatch struct {
	t     *testing.T
	ahead []string // records whose next file's output existed
}

func (w *recordWatch) Write(p []byte) (int, error) {
	var rec Record
	if err := json.Unmarshal(p, &rec); err == nil && rec.Output != "" {
		var k int
		if _, err := fmt.Sscanf(filepath.Base(rec.Output), "f%d.npy", &k); err != nil {
			w.t.Errorf("record for %q", rec.Output)
		}
		next := filepath.Join(filepath.Dir(rec.Output), fmt.Sprintf("f%d.npy", k+1))
		if _, err := os.Stat(next); err == nil {
			w.ahead = append(w.ahead, rec.Input)
		}
	}
	return len(p), nil
}

// A file's record is written as soon as the file is done, before the
// next file of its run is begun: records and progress keep pace with the
// outputs, and an interrupted batch has a record for every output done.
func TestRunRecordsEachFileWhenDone(t *testing.T) {
	chdir(t)
	for k := range 10 {
		writeNpy(t, fmt.Sprintf("d/f%d.npy", k), 1, 1, 4, 4)
	}
	w := &recordWatch{t: t}
	sum, err := Run(Options{Inputs: []string{"d"}, OutDir: "out", Job: s2d(t), Threads: 1, Stderr: &bytes.Buffer{}, JSON: w})
	if err != nil || sum.Done != 10 {
		t.Fatalf("summary %+v, %v", sum, err)
	}
	if len(w.ahead) > 0 {
		t.Errorf("records written after the next file's output was made: %v", w.ahead)
	}
}
