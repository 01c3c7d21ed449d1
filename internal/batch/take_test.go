package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/pipeline"
)

// A walk error taken by a worker that waited for a big file before it
// gets no threads: the threads of the file it waited for would be
// counted as taken and never given back, and a later file needing them
// would wait forever (a batch hung: found in review).
func TestTakeStaleThreadsOnErrItem(t *testing.T) {
	const mib = 1 << 20
	r := &runner{threads: 4, free: 1, turn: 2} // items 0 and 1 taken
	r.cond = sync.NewCond(&r.mu)
	r.q = queueOf([]item{{size: 8 * mib}, {err: errors.New("walk error")}, {size: 64 * mib}})
	type got struct{ i, w int }
	ch := make(chan got, 1)
	go func() { _, i, w, _, _ := r.take(); ch <- got{i, w} }() // waits: item 2 needs 2 threads
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		r.mu.Lock()
		waiting := r.waiting
		r.mu.Unlock()
		if waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("take did not wait for the threads of item 2")
		}
	}
	// Another worker takes item 2 and a file finishes: 2 threads free,
	// the walk error next.
	r.mu.Lock()
	r.turn, r.free = 3, 2
	r.head, r.hasHead = item{}, false
	r.mu.Unlock()
	r.cond.Broadcast()
	select {
	case g := <-ch:
		if g.i != 3 || g.w != 0 {
			t.Errorf("the waiting worker took item %d with %d threads; want the walk error (3) with none", g.i, g.w)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting worker did not take the walk error")
	}
	if r.free != 2 {
		t.Errorf("%d threads free, want 2", r.free)
	}
}

// Under --skip-existing a file whose output exists is handed out at once
// with no threads, even a big one while the threads are busy: it is not
// worked on, so it waits for nothing.
func TestTakeSkipsWithoutThreads(t *testing.T) {
	dir := t.TempDir()
	done := filepath.Join(dir, "big.npy")
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := &runner{threads: 2, free: 2, opts: Options{SkipExisting: true}}
	r.cond = sync.NewCond(&r.mu)
	r.q = queueOf([]item{{size: 1, output: filepath.Join(dir, "small.npy")}, {size: 1 << 30, output: done}})
	if _, _, w, skip, _ := r.take(); w != 1 || skip {
		t.Fatalf("the small file: %d threads, skip %v", w, skip)
	}
	got := make(chan [2]int, 1)
	go func() {
		_, i, w, skip, _ := r.take()
		if !skip {
			w = -1
		}
		got <- [2]int{i, w}
	}()
	select {
	case g := <-got:
		if g != [2]int{1, 0} {
			t.Errorf("the existing output: item %d, threads %d (-1: not skipped); want 1 and 0", g[0], g[1])
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a file to skip waited for the threads of the running one")
	}
}

// Records come out in list order whatever order the files finish in, and
// a finished file waits only until those before it are done: nothing is
// kept once it is printed. The orders include one where a file finishes
// 40 places ahead (the ring of waiting records grows) and ones where the
// ring wraps.
func TestFinishPrintsInOrder(t *testing.T) {
	orders := [][]int{{2, 4, 0, 1, 3}, {1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14, 17, 16, 19, 18}}
	late := []int{40}
	for i := range 40 {
		late = append(late, i)
	}
	orders = append(orders, late, rand.New(rand.NewPCG(1, 2)).Perm(100))
	for _, order := range orders {
		var out bytes.Buffer
		r := &runner{opts: Options{JSON: &out}, rep: newReporter(io.Discard, ProgressNone, 0, len(order), 0)}
		done := map[int]bool{}
		for _, i := range order {
			r.finish(i, outcome{rec: Record{Input: fmt.Sprint(i), Status: StatusOK}})
			done[i] = true
			waiting := 0
			for j := range order {
				if done[j] && j >= r.next {
					waiting++
				}
			}
			if kept := keptRecords(r); kept != waiting {
				t.Errorf("after file %d, %d records kept; %d wait for an earlier one", i, kept, waiting)
			}
		}
		got, want := recordInputs(t, &out), []string(nil)
		for i := range order {
			want = append(want, fmt.Sprint(i))
		}
		if !slices.Equal(got, want) || keptRecords(r) != 0 || r.done != len(order) {
			t.Errorf("records %v, %d kept, %d done; want 0..%d in order, none kept, %d done", got, keptRecords(r), r.done, len(order)-1, len(order))
		}
	}
}

// A file that finishes too far ahead of the next record to report waits
// (its worker takes no other file) until the records before it catch up,
// so that the waiting records stay bounded; then all come out in order.
func TestFinishHoldsBackFarAhead(t *testing.T) {
	var out bytes.Buffer
	r := &runner{opts: Options{JSON: &out}, rep: newReporter(io.Discard, ProgressNone, 0, 4, 0), ahead: 2}
	r.held.L = &r.out
	done := make(chan struct{})
	go func() {
		r.finish(3, outcome{rec: Record{Input: "3", Status: StatusOK}})
		close(done)
	}()
	for held := 0; held == 0; {
		runtime.Gosched()
		r.out.Lock()
		held = r.holds
		r.out.Unlock()
	}
	r.finish(1, outcome{rec: Record{Input: "1", Status: StatusOK}})
	if kept := keptRecords(r); kept != 1 {
		t.Fatalf("%d records kept while file 3 waits; want 1 (file 1's)", kept)
	}
	r.finish(0, outcome{rec: Record{Input: "0", Status: StatusOK}})
	<-done
	r.finish(2, outcome{rec: Record{Input: "2", Status: StatusOK}})
	if got := recordInputs(t, &out); !slices.Equal(got, []string{"0", "1", "2", "3"}) || keptRecords(r) != 0 {
		t.Errorf("records %v, %d kept; want 0..3 in order, none kept", got, keptRecords(r))
	}
}

// recordInputs are the inputs of the --json records in out, in order.
func recordInputs(t *testing.T, out *bytes.Buffer) []string {
	var inputs []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var rec Record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, rec.Input)
	}
	return inputs
}

func keptRecords(r *runner) int {
	n := 0
	for _, f := range r.pending {
		if f.ok {
			n++
		}
	}
	return n
}

// queueOf is a stream of items already walked.
func queueOf(items []item) *stream {
	s := &stream{batches: make(chan []item, 1), quit: make(chan struct{}), done: make(chan struct{})}
	s.batches <- items
	close(s.batches)
	close(s.done)
	return s
}

// take is one file, as the tests take them.
func (r *runner) take() (it item, i, threads int, skip, ok bool) { return r.takeRun(nil) }

// A small file is taken with the small files after it that the walk has
// handed over, walk errors among them, up to runLen in all; a file
// needing more threads, or more than runBytes in all, ends the run and
// is the next one taken, alone. At -j 1 every file is one thread's, but a
// big one still ends a run by its bytes.
func TestTakeRunTakesSmallFilesInARow(t *testing.T) {
	big := int64(2 * pipeline.DefaultChunkBytes)
	items := []item{{size: 1}, {size: 2}, {err: errors.New("walk error")}, {size: 3}, {size: big}}
	for range 2*runLen + 5 {
		items = append(items, item{size: 10})
	}
	n := len(items)
	for _, c := range []struct {
		threads int
		runs    [][2]int // first item, run length
	}{
		{2, [][2]int{{0, 4}, {4, 1}, {5, runLen}, {5 + runLen, runLen}, {5 + 2*runLen, n - 5 - 2*runLen}}},
		{1, [][2]int{{0, 4}, {4, 1}, {5, runLen}, {5 + runLen, runLen}, {5 + 2*runLen, n - 5 - 2*runLen}}},
	} {
		r := &runner{threads: c.threads, free: c.threads}
		r.cond = sync.NewCond(&r.mu)
		r.q = queueOf(slices.Clone(items))
		var after []item
		for _, want := range c.runs {
			it, i, w, skip, ok := r.takeRun(&after)
			if !ok || skip || i != want[0] || 1+len(after) != want[1] {
				t.Fatalf("-j %d: took item %d (ok %v, skip %v) and %d after it; want item %d and %d", c.threads, i, ok, skip, len(after), want[0], want[1]-1)
			}
			if it.size != items[i].size || it.err != items[i].err {
				t.Errorf("-j %d: item %d is %+v, want %+v", c.threads, i, it, items[i])
			}
			for k, a := range after {
				if a.size != items[i+1+k].size || a.err != items[i+1+k].err {
					t.Errorf("-j %d: item %d of the run is %+v, want %+v", c.threads, i+1+k, a, items[i+1+k])
				}
			}
			if want := threadsFor(it.size, c.threads); w != want {
				t.Errorf("-j %d: item %d took %d threads, want %d", c.threads, i, w, want)
			}
			after = after[:0]
			r.release(w)
		}
		if _, _, _, _, ok := r.takeRun(&after); ok || r.free != c.threads {
			t.Errorf("-j %d: a file after the last, or %d threads free", c.threads, r.free)
		}
	}
}

// A run holds at most runBytes of input: files of a quarter of it go
// four at a time, and a file of half of it after three of a quarter
// starts the next run. A batch of objects takes no runs: its files wait on the
// network, and must be under way together.
func TestTakeRunBytesAndObjects(t *testing.T) {
	q := int64(runBytes / 4)
	sizes := []int64{q, q, q, q, q, q, q, 2 * q, q, 1}
	var items []item
	for _, n := range sizes {
		items = append(items, item{size: n})
	}
	for _, c := range []struct {
		objects bool
		runs    [][2]int
	}{
		{false, [][2]int{{0, 4}, {4, 3}, {7, 3}}},
		{true, [][2]int{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {4, 1}, {5, 1}, {6, 1}, {7, 1}, {8, 1}, {9, 1}}},
	} {
		r := &runner{threads: 2, free: 2, objects: c.objects}
		r.cond = sync.NewCond(&r.mu)
		r.q = queueOf(slices.Clone(items))
		var after []item
		for _, want := range c.runs {
			_, i, w, _, ok := r.takeRun(&after)
			if !ok || i != want[0] || 1+len(after) != want[1] {
				t.Fatalf("objects %v: took item %d (ok %v) and %d after it; want item %d and %d", c.objects, i, ok, len(after), want[0], want[1]-1)
			}
			after = after[:0]
			r.release(w)
		}
	}
}

// A run ends where the output directory changes: the next file starts
// the next run. Paths without a directory are all in the current one.
func TestTakeRunEndsAtDirectory(t *testing.T) {
	var items []item
	for _, o := range []string{"o/a/1", "o/a/2", "o/a/3", "o/b/1", "o/b/2", "o/ab/1", "o/a/4", "x", "y"} {
		items = append(items, item{size: 1, output: filepath.FromSlash(o)})
	}
	r := &runner{threads: 2, free: 2}
	r.cond = sync.NewCond(&r.mu)
	r.q = queueOf(items)
	var after []item
	for _, want := range [][2]int{{0, 3}, {3, 2}, {5, 1}, {6, 1}, {7, 2}} {
		_, i, w, _, ok := r.takeRun(&after)
		if !ok || i != want[0] || 1+len(after) != want[1] {
			t.Fatalf("took item %d (ok %v) and %d after it; want item %d and %d", i, ok, len(after), want[0], want[1]-1)
		}
		after = after[:0]
		r.release(w)
	}
}
