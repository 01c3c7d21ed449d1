package batch

import (
	"errors"
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
	_, w0, _ := r.take() // item 0, 3 threads
	_, w1, _ := r.take() // item 1, 1 thread
	type got struct{ i, w int }
	ch := make(chan got, 2)
	for range 2 {
		go func() { i, w, _ := r.take(); ch <- got{i, w} }()
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
