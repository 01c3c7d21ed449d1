package pipeline

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/ops"
)

// memArray is a C-order array in memory served a chunk at a time, as a
// store's reader serves it: whole chunks (edge chunks whole, padded with
// 0xEE so that a run reading past the array shows), and parts of chunks
// when ranged.
type memArray struct {
	g       *grid
	data    []byte
	ranged  bool
	overlap int // what Overlap says: reads to keep in flight

	mu    sync.Mutex
	reads map[string]int // ReadChunk calls by chunk
	// wait, when set, is called by each ReadChunk before it reads.
	wait func()
}

func (m *memArray) ChunkShape() []int { return slices.Clone(m.g.chunk) }

func (m *memArray) Overlap() int { return m.overlap }

func (m *memArray) ReadChunk(dst []byte, idx []int) error {
	m.mu.Lock()
	if m.reads == nil {
		m.reads = map[string]int{}
	}
	m.reads[fmt.Sprint(idx)]++
	m.mu.Unlock()
	if m.wait != nil {
		m.wait()
	}
	for i := range dst {
		dst[i] = 0xEE
	}
	// Each element of the chunk inside the array, from the array.
	r := len(m.g.shape)
	pos := make([]int, r)
	for e := 0; e < len(dst)/m.g.size; e++ {
		x, in, off := e, true, 0
		for k := r - 1; k >= 0; k-- {
			pos[k] = idx[k]*m.g.chunk[k] + x%m.g.chunk[k]
			x /= m.g.chunk[k]
		}
		for k := range r {
			in = in && pos[k] < m.g.shape[k]
			off = off*m.g.shape[k] + pos[k]
		}
		if in {
			copy(dst[e*m.g.size:(e+1)*m.g.size], m.data[off*m.g.size:])
		}
	}
	return nil
}

func (m *memArray) Ranged() bool { return m.ranged }

func (m *memArray) ReadChunkRange(dst []byte, idx []int, off int) error {
	whole := make([]byte, m.g.chunkBytes)
	if err := m.ReadChunk(whole, idx); err != nil {
		return err
	}
	copy(dst, whole[off:])
	return nil
}

// TestChunkRunMatchesPlan: plans of every kind (s2d and d2s, DCR and
// CRD, NCHW and NHWC, block orders, blocks of 2 and 3), run chunk to
// chunk from chunked inputs into the output chunks the operator keeps or
// into others, give the plan's whole result, edge chunks padded with
// zeros; the input read whole chunks at a time or in ranges.
func TestChunkRunMatchesPlan(t *testing.T) {
	r := rand.New(rand.NewSource(34))
	bayer, _ := ops.ParseBlockOrder("bggr")
	cases := 0
	for cases < 120 {
		req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2 + r.Intn(2)}}
		if r.Intn(2) == 0 {
			req.Op = ops.DepthToSpace
		}
		if r.Intn(2) == 0 {
			req.Order = ops.CRD
		}
		if r.Intn(2) == 0 {
			req.Layout = ops.NHWC
		}
		if r.Intn(5) == 0 && req.Block[0] == 2 {
			req.BlockOrder = bayer
		}
		b := req.Block[0]
		n, c, h, w := 1+r.Intn(2), 1+r.Intn(3), b*(1+r.Intn(5)), b*(1+r.Intn(5))
		if req.Op == ops.DepthToSpace {
			c, h, w = c*b*b, h/b, w/b
		}
		shape := []int{n, c, h, w}
		if req.Layout == ops.NHWC {
			shape = []int{n, h, w, c}
		}
		size := []int{1, 2, 4, 8}[r.Intn(4)]
		p, err := ops.NewPlan(req, shape, size, false)
		if err != nil {
			t.Fatal(err)
		}
		inChunk := make([]int, 4)
		for k, d := range shape {
			inChunk[k] = 1 + r.Intn(d+1) // up to one past the extent: edge chunks
		}
		if r.Intn(2) == 0 { // chunks the operator takes whole, as often as not
			for k := range inChunk {
				if k > 0 {
					inChunk[k] = b * (1 + r.Intn(max(1, shape[k]/b)))
				}
			}
		}
		outChunk := operatorChunks(p, inChunk)
		if outChunk == nil || r.Intn(3) == 0 {
			outChunk = make([]int, 4)
			for k, d := range p.Out {
				outChunk[k] = 1 + r.Intn(d)
			}
		}
		run, ok := newChunkRun(p, inChunk, outChunk)
		if !ok {
			continue
		}
		cases++
		name := fmt.Sprintf("%v %v %v %v, %d-byte elements, shape %v, chunks %v -> %v", req.Op, req.Order, req.Layout, req.BlockOrder, size, shape, inChunk, outChunk)
		data := make([]byte, p.InBytes())
		r.Read(data)
		want := make([]byte, p.Bytes())
		if err := p.Run(want, data, 1); err != nil {
			t.Fatal(err)
		}
		in := &memArray{g: newGrid(shape, inChunk, size), data: data, ranged: r.Intn(2) == 0}
		if r.Intn(2) == 0 {
			in.overlap = 2 + r.Intn(7) // chunks read ahead, as from an s3:// store
		}
		var mu sync.Mutex
		got := map[int][]byte{}
		put := func(idx []int, chunk, room []byte) error {
			id := 0
			for k, x := range idx {
				id = id*run.out.n[k] + x
			}
			mu.Lock()
			defer mu.Unlock()
			if got[id] != nil {
				return fmt.Errorf("chunk %v put twice", idx)
			}
			got[id] = bytes.Clone(chunk)
			return nil
		}
		if err := run.run(in, put, 64, 1+r.Intn(3), func(int64) {}, func(err error) error { return err }); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// The output chunks laid out as the array.
		out := make([]byte, p.Bytes())
		for id := range run.out.count() {
			chunk := got[id]
			if chunk == nil {
				t.Fatalf("%s: output chunk %v was never put", name, run.out.index(id))
			}
			scatterChunk(t, name, run.out, id, chunk, out)
		}
		if !bytes.Equal(out, want) {
			t.Fatalf("%s: differs from the plan's whole run", name)
		}
		for idx, n := range in.reads {
			if n > 1 && !in.ranged { // a ranged read reads the whole chunk each time here
				t.Fatalf("%s, overlap %d: input chunk %s read %d times", name, in.overlap, idx, n)
			}
		}
	}
}

// TestChunkRunReadsAhead: an input whose chunks come over a network
// (Overlap 4) has 4 chunks being read at once by a run of one thread,
// whose runs alone would ask for one after the other. Each read waits
// until 4 are under way: a run that keeps fewer in flight never ends,
// and the deadline says so.
func TestChunkRunReadsAhead(t *testing.T) {
	p, run, in, want := s2dChunkRun(t)
	var (
		mu      sync.Mutex
		cond    = sync.NewCond(&mu)
		started int
	)
	reached := make(chan struct{})
	in.overlap = 4
	in.wait = func() {
		mu.Lock()
		defer mu.Unlock()
		started++
		if started == 4 {
			close(reached)
		}
		cond.Broadcast()
		for started < 4 {
			cond.Wait()
		}
	}
	put, got := collect(t, "reads ahead", run, p.Bytes())
	errc := make(chan error, 1)
	go func() { errc <- run.run(in, put, 64, 1, func(int64) {}, func(err error) error { return err }) }()
	select {
	case <-reached:
	case <-time.After(time.Minute):
		t.Fatal("a minute and fewer than 4 chunk reads under way at once: the run does not read ahead")
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the run that read ahead differs from the plan's whole run")
	}
}

// s2dChunkRun is the chunk run of s2d -b 2 of float32 1,2,16,16 from
// input chunks 1,1,4,4, the input in memory (not reading ahead), and
// the plan's whole result.
func s2dChunkRun(t *testing.T) (*ops.Plan, *chunkRun, *memArray, []byte) {
	t.Helper()
	return s2dChunkRunOf(t, []int{1, 2, 16, 16}, []int{1, 1, 4, 4})
}

// s2dChunkRunOf is s2dChunkRun of float32 shape from input chunks
// inChunk.
func s2dChunkRunOf(t *testing.T, shape, inChunk []int) (*ops.Plan, *chunkRun, *memArray, []byte) {
	t.Helper()
	req := ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}
	p, err := ops.NewPlan(req, shape, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	run, ok := newChunkRun(p, inChunk, operatorChunks(p, inChunk))
	if !ok {
		t.Fatal("no chunk run")
	}
	data := make([]byte, p.InBytes())
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := make([]byte, p.Bytes())
	if err := p.Run(want, data, 1); err != nil {
		t.Fatal(err)
	}
	return p, run, &memArray{g: newGrid(shape, inChunk, 4), data: data}, want
}

// collect is a put that scatters a run's output chunks into got, the
// output array of n bytes.
func collect(t *testing.T, name string, run *chunkRun, n int) (put func(idx []int, chunk, room []byte) error, got []byte) {
	got = make([]byte, n)
	var mu sync.Mutex
	return func(idx []int, chunk, room []byte) error {
		mu.Lock()
		defer mu.Unlock()
		scatterChunk(t, name, run.out, flatID(run.out, idx), chunk, got)
		return nil
	}, got
}

// flatID is the grid's flat index of chunk idx.
func flatID(g *grid, idx []int) int {
	id := 0
	for k, x := range idx {
		id = id*g.n[k] + x
	}
	return id
}

// scatterChunk puts the part of chunk id inside the array into out, and
// checks that the part past the array is zeros.
func scatterChunk(t *testing.T, name string, g *grid, id int, chunk, out []byte) {
	t.Helper()
	idx := g.index(id)
	r := len(g.shape)
	pos := make([]int, r)
	for e := 0; e < len(chunk)/g.size; e++ {
		x, in, off := e, true, 0
		for k := r - 1; k >= 0; k-- {
			pos[k] = idx[k]*g.chunk[k] + x%g.chunk[k]
			x /= g.chunk[k]
		}
		for k := range r {
			in = in && pos[k] < g.shape[k]
			off = off*g.shape[k] + pos[k]
		}
		el := chunk[e*g.size : (e+1)*g.size]
		switch {
		case in:
			copy(out[off*g.size:], el)
		case !bytes.Equal(el, make([]byte, g.size)):
			t.Fatalf("%s: chunk %v holds %x past the array's end, not zeros", name, idx, el)
		}
	}
}

// TestChunkRunRefusesWideGroups: output chunks cut across the rows the
// runs fill (columns of 256 of 2048, all channels) are filled together,
// a group of 8 × 64 MiB, beyond groupLimit: such a job is not run chunk
// to chunk.
func TestChunkRunRefusesWideGroups(t *testing.T) {
	p, err := ops.NewPlan(ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, []int{1, 64, 4096, 4096}, 4, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := newChunkRun(p, []int{1, 1, 1024, 4096}, []int{1, 256, 256, 256}); ok {
		t.Fatal("output chunks of 64 MiB filled 8 at a time: run chunk to chunk")
	}
	if _, ok := newChunkRun(p, []int{1, 1, 1024, 4096}, []int{1, 4, 512, 2048}); !ok {
		t.Fatal("the chunks the operator keeps: not run chunk to chunk")
	}
}

// TestStoreToStoreCorruptChunk: a job chunk to chunk whose input has a
// chunk that does not decode (a Blosc frame cut short, a block table
// pointing past the frame) fails naming the input and the chunk, and
// leaves nothing at the output; the same job on the intact store gives
// what the same job on the npy gives.
func TestStoreToStoreCorruptChunk(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(2))
	shape := []int{1, 4, 512, 512}
	data := make([]byte, 4*512*512*4)
	for i := range data {
		data[i] = byte(rng.Intn(4)) // compressible: Blosc frames of many blocks
	}
	in := filepath.Join(dir, "in.npy")
	writeNpy(t, in, "<f4", shape, false, data)
	store := filepath.Join(dir, "in.zarr")
	if _, err := Transform(Options{Planner: ops.NewCopy, Source: Source{Path: in}, Output: store, To: "zarr",
		Store: format.WriteOptions{Chunks: []int{1, 1, 512, 512}}}); err != nil {
		t.Fatal(err)
	}
	s2d := func(src, out string) error {
		_, err := Transform(Options{Request: ops.Request{Op: ops.SpaceToDepth, Block: ops.Block{2}}, Source: Source{Path: src}, Output: out, To: "zarr", Threads: 2})
		return err
	}
	before := chunkToChunkJobs.Load()
	if err := s2d(store, filepath.Join(dir, "ok.zarr")); err != nil {
		t.Fatal(err)
	}
	if chunkToChunkJobs.Load() != before+1 {
		t.Fatal("the store's s2d did not run chunk to chunk")
	}
	if err := s2d(in, filepath.Join(dir, "ok.npy")); err != nil {
		t.Fatal(err)
	}
	got := readTensorData(t, filepath.Join(dir, "ok.zarr"))
	want := readTensorData(t, filepath.Join(dir, "ok.npy"))
	if !bytes.Equal(got, want) {
		t.Fatal("the store's s2d differs from the npy's")
	}
	chunk := filepath.Join(store, "0.2.0.0")
	frame, err := os.ReadFile(chunk)
	if err != nil {
		t.Fatal(err)
	}
	if n := binary.LittleEndian.Uint32(frame[4:]) / binary.LittleEndian.Uint32(frame[8:]); n < 2 {
		t.Fatalf("the chunk's frame has %d blocks: the test needs several", n)
	}
	for name, bad := range map[string][]byte{
		"cut short":  frame[:len(frame)-7],
		"block past": append(append(bytes.Clone(frame[:16]), 0xff, 0xff, 0xff, 0x7f), frame[20:]...),
	} {
		if err := os.WriteFile(chunk, bad, 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "bad.zarr")
		err := s2d(store, out)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Path != store || !strings.Contains(err.Error(), "chunk 0.2.0.0") {
			t.Fatalf("%s: %v, want an error naming %s and the chunk", name, err, store)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Fatalf("%s: the output exists after the failure", name)
		}
	}
}

// readTensorData is the data of the one tensor at path.
func readTensorData(t *testing.T, path string) []byte {
	t.Helper()
	ts, err := LoadAll(Source{Path: path, Deferred: true})
	if err != nil || len(ts) != 1 {
		t.Fatalf("%s: %v", path, err)
	}
	if err := ts[0].Bring(); err != nil {
		t.Fatal(err)
	}
	defer ts[0].Release()
	return bytes.Clone(ts[0].Data)
}

// batchArray is a memArray that also reads runs of chunks in one call,
// recording each run.
type batchArray struct {
	*memArray
	single  bool // what Coalesces says, negated
	bmu     sync.Mutex
	batches [][]string
}

func (b *batchArray) Coalesces() bool { return !b.single }

func (b *batchArray) ReadChunks(dsts [][]byte, idxs [][]int) error {
	var names []string
	for k, idx := range idxs {
		names = append(names, fmt.Sprint(idx))
		if err := b.memArray.ReadChunk(dsts[k], idx); err != nil {
			return err
		}
	}
	b.bmu.Lock()
	b.batches = append(b.batches, names)
	b.bmu.Unlock()
	return nil
}

// TestChunkRunReadsBatches: from an input that reads several chunks at
// once in fewer requests (a sharded store), the read-ahead asks for runs
// of neighbouring chunks in one call: the 32 chunks of 2 × 4 × 4 (64
// bytes each, four held ahead) come in 8 calls of the 4 chunks of a row
// of the grid, each chunk read once, whether the prefetcher or a run got
// to it first, and the result is the plan's. From an input that says it
// does not coalesce, none.
func TestChunkRunReadsBatches(t *testing.T) {
	p, run, mem, want := s2dChunkRun(t)
	for _, threads := range []int{1, 2} {
		in := &batchArray{memArray: &memArray{g: mem.g, data: mem.data, overlap: 4}}
		put, got := collect(t, "batches", run, p.Bytes())
		if err := run.run(in, put, 64, threads, func(int64) {}, func(err error) error { return err }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d threads: the run that read batches differs from the plan's whole run", threads)
		}
		for idx, n := range in.reads {
			if n != 1 {
				t.Errorf("%d threads: chunk %s read %d times", threads, idx, n)
			}
		}
		if len(in.reads) != 32 || len(in.batches) != 8 {
			t.Errorf("%d threads: %d chunks read in %d calls of several, want 32 in 8: %v", threads, len(in.reads), len(in.batches), in.batches)
		}
		for _, b := range in.batches {
			if len(b) != 4 || !strings.HasSuffix(b[0], " 0]") {
				t.Errorf("%d threads: a call read %v, not a row of the grid", threads, b)
			}
		}
	}
	// An input whose chunks are objects of their own (Coalesces false)
	// is read a chunk at a time, so that as many are in flight.
	in := &batchArray{memArray: &memArray{g: mem.g, data: mem.data, overlap: 4}, single: true}
	put, got := collect(t, "single", run, p.Bytes())
	if err := run.run(in, put, 64, 1, func(int64) {}, func(err error) error { return err }); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) || len(in.batches) != 0 || len(in.reads) != 32 {
		t.Errorf("an input that does not coalesce: %d calls of several chunks, %d chunks read, result equal %v", len(in.batches), len(in.reads), bytes.Equal(got, want))
	}
}

// releasingMem is a ranged memArray told when the runs are done with a
// chunk, recording a range read after that.
type releasingMem struct {
	*memArray
	dmu  sync.Mutex
	done map[string]int
	late []string
}

func (m *releasingMem) DoneWithChunk(idx []int) {
	m.dmu.Lock()
	m.done[fmt.Sprint(idx)]++
	m.dmu.Unlock()
}

func (m *releasingMem) ReadChunkRange(dst []byte, idx []int, off int) error {
	m.dmu.Lock()
	if m.done[fmt.Sprint(idx)] > 0 {
		m.late = append(m.late, fmt.Sprint(idx))
	}
	m.dmu.Unlock()
	return m.memArray.ReadChunkRange(dst, idx, off)
}

// TestChunkRunReleasesRangedChunks: from an input read in ranges, each
// chunk is reported done with once, after the last range of it is read,
// on one thread and on several.
func TestChunkRunReleasesRangedChunks(t *testing.T) {
	p, run, mem, want := s2dChunkRun(t)
	for _, threads := range []int{1, 3} {
		in := &releasingMem{memArray: &memArray{g: mem.g, data: mem.data, ranged: true}, done: map[string]int{}}
		put, got := collect(t, "released", run, p.Bytes())
		if err := run.run(in, put, 64, threads, func(int64) {}, func(err error) error { return err }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d threads: the run differs from the plan's whole run", threads)
		}
		if len(in.done) != run.in.count() {
			t.Errorf("%d threads: %d of %d chunks reported done with", threads, len(in.done), run.in.count())
		}
		for idx, n := range in.done {
			if n != 1 {
				t.Errorf("%d threads: chunk %s reported done with %d times", threads, idx, n)
			}
		}
		if len(in.late) > 0 {
			t.Errorf("%d threads: ranges of %v read after their chunks were done with", threads, in.late)
		}
	}
}

// arrivingMem is a batchArray whose batched reads tell when their
// answer arrives (ReadChunksArriving), held until gate opens: the
// requests on their way count in sent, and gate opens once want of them
// are. A run's own batch (ReadChunks) waits for the gate too, so the
// runs cannot read past it.
type arrivingMem struct {
	*batchArray
	want     int
	smu      sync.Mutex
	sent     int
	gate     chan struct{}
	open     sync.Once
	timedOut bool
}

// wait waits for the gate; after a minute it opens it, and says so.
func (a *arrivingMem) wait() {
	select {
	case <-a.gate:
	case <-time.After(time.Minute):
		a.smu.Lock()
		a.timedOut = true
		a.smu.Unlock()
		a.open.Do(func() { close(a.gate) })
	}
}

func (a *arrivingMem) ReadChunks(dsts [][]byte, idxs [][]int) error {
	a.wait()
	return a.batchArray.ReadChunks(dsts, idxs)
}

func (a *arrivingMem) ReadChunksArriving(idxs [][]int, arriving func() ([][]byte, error)) error {
	a.smu.Lock()
	a.sent++
	if a.sent == a.want {
		a.open.Do(func() { close(a.gate) })
	}
	a.smu.Unlock()
	a.wait()
	dsts, err := arriving()
	if err != nil {
		return err
	}
	return a.batchArray.ReadChunks(dsts, idxs)
}

// TestChunkRunRequestsBeforeRoom: from an input that says when a batch's
// answer arrives, the read-ahead has --io-jobs (Overlap, 4) batch
// requests on their way at once, of chunks of 256 KiB, while the bound
// of the chunks held ahead (Overlap: 4) covers one batch (of at most 4):
// no answer is let in before all 4 are sent, and the run never holds
// more than the bound and a batch a run waits for. Memory taken for each
// request as it is sent would hold more.
func TestChunkRunRequestsBeforeRoom(t *testing.T) {
	p, run, mem, want := s2dChunkRunOf(t, []int{1, 8, 512, 512}, []int{1, 1, 128, 512})
	const jobs = 4
	in := &arrivingMem{
		batchArray: &batchArray{memArray: &memArray{g: mem.g, data: mem.data, overlap: jobs}},
		want:       jobs,
		gate:       make(chan struct{}),
	}
	ahead := run.readAhead(in, false, true, 1)
	if ahead == nil || ahead.n != 4 || ahead.jobs != jobs || len(ahead.batches) < jobs+1 {
		t.Fatalf("read-ahead %+v: want 4 chunks held ahead, %d requests, more batches than they", ahead, jobs)
	}
	put, got := collect(t, "arriving", run, p.Bytes())
	if err := run.run(in, put, 64, 1, func(int64) {}, func(err error) error { return err }); err != nil {
		t.Fatal(err)
	}
	if in.timedOut {
		t.Fatalf("a minute and %d batch requests on their way at once, want %d", in.sent, jobs)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the run differs from the plan's whole run")
	}
	if bound := 2 * ahead.n; run.inPeak > bound {
		t.Errorf("%d input chunks held at once, want at most %d", run.inPeak, bound)
	}
	t.Logf("%d batch requests, at most %d chunks held", in.sent, run.inPeak)
}

// TestChunkRunArrivingPastTheBound: a run that reads more chunks than
// the read-ahead holds (one run reads all 32 chunks, 4 held ahead) from
// an input that says when its answers arrive ends with the plan's
// result, on one thread and on two: the batches the runs wait for take
// no token when the runs hold them all.
func TestChunkRunArrivingPastTheBound(t *testing.T) {
	p, run, mem, want := s2dChunkRun(t)
	for _, threads := range []int{1, 2} {
		in := &arrivingMem{batchArray: &batchArray{memArray: &memArray{g: mem.g, data: mem.data, overlap: 4}}, want: 1, gate: make(chan struct{})}
		put, got := collect(t, "past the bound", run, p.Bytes())
		if err := run.run(in, put, 64, threads, func(int64) {}, func(err error) error { return err }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || in.sent == 0 || in.timedOut {
			t.Fatalf("%d threads: %d batches read as they arrived, result equal %v", threads, in.sent, bytes.Equal(got, want))
		}
	}
}

// failingBatches fails its n-th call of several chunks (a run's own
// ReadChunks, or the read-ahead's ReadChunksArriving before its answer
// arrives, arriving not called, or after).
type failingBatches struct {
	*batchArray
	n     int
	after bool
	fmu   sync.Mutex
	calls int
}

func (f *failingBatches) fail() bool {
	f.fmu.Lock()
	defer f.fmu.Unlock()
	f.calls++
	return f.calls == f.n
}

func (f *failingBatches) ReadChunks(dsts [][]byte, idxs [][]int) error {
	if f.fail() {
		return errors.New("the server broke off")
	}
	return f.batchArray.ReadChunks(dsts, idxs)
}

func (f *failingBatches) ReadChunksArriving(idxs [][]int, arriving func() ([][]byte, error)) error {
	failing := f.fail()
	if failing && !f.after {
		return errors.New("the server broke off")
	}
	dsts, err := arriving()
	if err != nil {
		return err
	}
	if failing {
		return errors.New("the body broke off")
	}
	return f.batchArray.ReadChunks(dsts, idxs)
}

// TestChunkRunReadFails: a read-ahead request that fails, whichever it
// is, before its answer arrives or after, ends the run with its error,
// on one thread and on several, with few or many requests on their way:
// no run waits for ever for the chunks it would have brought.
func TestChunkRunReadFails(t *testing.T) {
	p, run, mem, _ := s2dChunkRun(t)
	for _, overlap := range []int{4, 16} {
		for threads := 1; threads <= 3; threads++ {
			// The calls a run makes here, none failing.
			dry := &failingBatches{batchArray: &batchArray{memArray: &memArray{g: mem.g, data: mem.data, overlap: overlap}}}
			put, _ := collect(t, "dry", run, p.Bytes())
			if err := run.run(dry, put, 64, threads, func(int64) {}, func(err error) error { return err }); err != nil || dry.calls == 0 {
				t.Fatalf("overlap %d, %d threads: %d calls of several chunks, %v", overlap, threads, dry.calls, err)
			}
			for n := 1; n <= dry.calls; n++ {
				for _, after := range []bool{false, true} {
					in := &failingBatches{batchArray: &batchArray{memArray: &memArray{g: mem.g, data: mem.data, overlap: overlap}}, n: n, after: after}
					put, _ := collect(t, "failing", run, p.Bytes())
					done := make(chan error, 1)
					go func() {
						done <- run.run(in, put, 64, threads, func(int64) {}, func(err error) error { return err })
					}()
					select {
					case err := <-done:
						if err == nil || !strings.Contains(err.Error(), "broke off") {
							t.Errorf("overlap %d, %d threads, call %d failing (after its answer: %v): %v", overlap, threads, n, after, err)
						}
					case <-time.After(time.Minute): // a guard against a hang, not a measure
						t.Fatalf("overlap %d, %d threads, call %d failing (after its answer: %v): the run hangs", overlap, threads, n, after)
					}
				}
			}
		}
	}
}
