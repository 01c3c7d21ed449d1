package fileio

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"unsafe"
)

func resetPool() {
	pool.Lock()
	for _, b := range pool.free {
		releaseBuffer(b)
	}
	pool.free, pool.held = nil, 0
	pool.Unlock()
}

// A buffer handed back is the one handed out next, for any request it can
// hold; the pool never keeps more than poolBytes. A small one is kept per
// processor (sync.Pool), which may drop it: the race detector's build
// drops a quarter of them on purpose, and the goroutine may move to
// another processor. So a small buffer must come back within a few tries;
// a large one, from the shared list, at once.
func TestBufferReuse(t *testing.T) {
	resetPool()
	defer resetPool()
	for _, n := range []int{100, 70 << 10, 1 << 20, 3 << 20, 5<<20 + 7} {
		tries := 1
		if heapClass(n) >= 0 {
			tries = 20
		}
		reused := false
		for range tries {
			a := GetBuffer(n)
			if len(a) != n || cap(a) < n {
				t.Fatalf("GetBuffer(%d): len %d cap %d", n, len(a), cap(a))
			}
			a[n-1] = 1
			PutBuffer(a)
			b := GetBuffer(n - 1)
			if len(b) != n-1 {
				t.Fatalf("GetBuffer(%d): len %d", n-1, len(b))
			}
			reused = unsafe.SliceData(a) == unsafe.SliceData(b)
			PutBuffer(b)
			if reused {
				break
			}
		}
		if !reused {
			t.Errorf("GetBuffer(%d) after PutBuffer of %d bytes did not reuse it (%d tries)", n-1, n, tries)
		}
	}
	// Many files, each taking two chunk buffers: the pool settles on two.
	for i := 0; i < 1000; i++ {
		a, b := GetBuffer(4<<20), GetBuffer(4<<20)
		PutBuffer(a)
		PutBuffer(b)
	}
	pool.Lock()
	held := pool.held
	pool.Unlock()
	if held > poolBytes {
		t.Errorf("the pool holds %d bytes, more than %d", held, poolBytes)
	}
	// More handed back at once than the pool keeps: the rest released.
	var bufs [][]byte
	for i := 0; i < 3*poolBytes/(4<<20); i++ {
		bufs = append(bufs, GetBuffer(4<<20))
	}
	for _, b := range bufs {
		PutBuffer(b)
	}
	pool.Lock()
	held = pool.held
	pool.Unlock()
	if held > poolBytes {
		t.Errorf("the pool holds %d bytes, more than %d", held, poolBytes)
	}
}

// Goroutines taking and returning buffers never share one (-race).
func TestBufferConcurrent(t *testing.T) {
	resetPool()
	defer resetPool()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				n := (g + 1) * (100 << 10) * (1 + i%3)
				b := GetBuffer(n)
				for j := range b {
					b[j] = byte(g)
				}
				for j := range b {
					if b[j] != byte(g) {
						t.Errorf("buffer written by another goroutine")
						return
					}
				}
				PutBuffer(b)
			}
		}()
	}
	wg.Wait()
}

// A small file is read whole, exactly, into a pooled buffer that Close
// hands back.
func TestOpenSmallFileReadWhole(t *testing.T) {
	dir := t.TempDir()
	for _, size := range []int{1, 4095, 64 << 10, 64<<10 + 1, smallFile - 1} {
		data := make([]byte, size)
		for i := range data {
			data[i] = byte(i * 7)
		}
		p := filepath.Join(dir, "f")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		in, err := Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if string(in.Data) != string(data) || in.Mapped || !in.pooled {
			t.Fatalf("size %d: read %d bytes (mapped %v, pooled %v)", size, len(in.Data), in.Mapped, in.pooled)
		}
		in.Close()
		if in.Data != nil {
			t.Errorf("size %d: Data kept after Close", size)
		}
	}
}

// Heap buffers of 64 KiB to 512 KiB are kept per processor, by size
// class, and handed out again from there; a mapped buffer (1 MiB and
// more) never is, since only releaseBuffer may free it.
func TestBufferHotClasses(t *testing.T) {
	for _, c := range []struct{ n, class int }{
		{1, 0}, {minBufferBytes, 0}, {minBufferBytes + 1, 1}, {128 << 10, 1},
		{128<<10 + 1, 2}, {256 << 10, 2}, {300 << 10, 3}, {512 << 10, 3},
		{512<<10 + 1, -1}, {1 << 20, -1}, {5 << 20, -1},
	} {
		if got := heapClass(c.n); got != c.class {
			t.Errorf("heapClass(%d) = %d, want %d", c.n, got, c.class)
		}
	}
	resetPool()
	defer resetPool()
	for _, n := range []int{48<<10 + 128, 100 << 10, 200 << 10, 400 << 10} {
		b := GetBuffer(n)
		if len(b) != n || cap(b) != minBufferBytes<<heapClass(n) {
			t.Fatalf("GetBuffer(%d): len %d cap %d", n, len(b), cap(b))
		}
		PutBuffer(b)
		pool.Lock()
		held := pool.held
		pool.Unlock()
		if held != 0 {
			t.Errorf("a %d-byte heap buffer went to the shared list (%d bytes held), not to its class", n, held)
		}
	}
	m := GetBuffer(1 << 20)
	PutBuffer(m)
	pool.Lock()
	held := pool.held
	pool.Unlock()
	if held != cap(m) {
		t.Errorf("a mapped buffer of %d bytes handed back: the shared list holds %d bytes", cap(m), held)
	}
}
