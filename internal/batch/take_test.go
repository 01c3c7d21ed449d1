package batch

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A walk error taken by a worker that waited for a big file before it
// gets no threads: the threads of the file it waited for would be
// counted as taken and never given back, and a later file needing them
// would wait forever (a batch hung: found in review).
func TestTakeStaleThreadsOnErrItem(t *testing.T) {
	const mib = 1 << 20
	r := &runner{threads: 4, free: 4}
	r.cond = sync.NewCond(&r.mu)
	r.items = []item{{size: 12 * mib}, {size: 1}, {size: 8 * mib}, {err: errors.New("walk error")}, {size: 64 * mib}}
	_, w0, _, _ := r.take() // item 0, 3 threads
	_, w1, _, _ := r.take() // item 1, 1 thread
	type got struct{ i, w int }
	ch := make(chan got, 2)
	for range 2 {
		go func() { i, w, _, _ := r.take(); ch <- got{i, w} }()
	}
	waitFor := func(cond func() bool) {
		for {
			r.mu.Lock()
			ok := cond()
			r.mu.Unlock()
			if ok {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor(func() bool { return r.waiting == 2 })
	r.release(w0)
	<-ch
	waitFor(func() bool { return r.turn == 3 && r.waiting == 1 })
	r.release(w1)
	if b := <-ch; b.i == 3 && b.w != 0 {
		t.Errorf("walk-error item 3 was given %d threads (stale from item 2); Run's it.err branch never releases them", b.w)
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
	r.items = []item{{size: 1, output: filepath.Join(dir, "small.npy")}, {size: 1 << 30, output: done}}
	if _, w, skip, _ := r.take(); w != 1 || skip {
		t.Fatalf("the small file: %d threads, skip %v", w, skip)
	}
	got := make(chan [2]int, 1)
	go func() {
		i, w, skip, _ := r.take()
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
