package pipeline

import (
	"errors"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/depthspace/depthspace/internal/format"
	"github.com/depthspace/depthspace/internal/gcpace"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
)

// A job from a chunked store array into a chunked store array runs chunk
// to chunk. The plan is cut into small runs (ops.Chunker); each reads
// its input ranges from decoded input chunks and writes its output
// ranges into the output chunks they fall in. The runs that fill the
// same output chunks are a group: a group's runs go to every worker,
// then its output chunks, complete, are encoded and stored by every
// worker, and only then does the next group start. Memory holds one
// group's output chunks and the input chunks being read, never the
// array: no scratch copy of the decoded input and no spool of the
// output, which a run in order needs (an s2d of NCHW writes its first
// output byte after a whole batch item has been read).

// chunkedArray is an input array decoded a chunk at a time (a Zarr
// array's reader): the shape one ReadChunk decodes, and the decoding of
// chunk idx of that grid into dst (its C-order bytes, the whole chunk).
type chunkedArray interface {
	ChunkShape() []int
	ReadChunk(dst []byte, idx []int) error
}

// rangedArray is a chunkedArray that also reads part of a chunk from
// part of what is stored (Ranged: a Zarr v2 array of Blosc chunks): a
// run then reads just its ranges, and no chunk is decoded whole.
type rangedArray interface {
	Ranged() bool
	ReadChunkRange(dst []byte, idx []int, off int) error
}

// releasingArray is a rangedArray that keeps something of each chunk it
// reads ranges of (a Blosc chunk's head and decoded blocks), let go when
// told that the runs read no more of the chunk.
type releasingArray interface {
	DoneWithChunk(idx []int)
}

// overlapped is a chunkedArray whose chunks come over a network: the
// reads a run should keep in flight (0: as many as its threads).
type overlapped interface {
	Overlap() int
}

// batchedArray is a chunkedArray that reads several chunks in one go
// (ReadChunks) when Coalesces says that costs fewer requests than one
// chunk at a time (a sharded Zarr array, whose neighbouring inner chunks
// lie back to back in their shard and come in one ranged request); for
// another, chunks read one by one keep more requests in flight.
type batchedArray interface {
	ReadChunks(dsts [][]byte, idxs [][]int) error
	Coalesces() bool
}

// arrivingArray is a batchedArray that asks for its destinations (and
// the right to hold the answer) only when the answer of its first request
// begins to arrive (ReadChunksArriving): the read-ahead then sends more
// requests than it has room for, and their answers wait in the sockets.
type arrivingArray interface {
	ReadChunksArriving(idxs [][]int, arriving func() ([][]byte, error)) error
}

// chunkedStore is a store output that takes an array a whole chunk at a
// time: its chunk shape (nil: it takes bytes in order only), and the
// array started for whole chunks, each put with room of roomBytes to
// encode it in (none when roomBytes is 0). put may write over the
// chunk's bytes.
type chunkedStore interface {
	OutputChunks(name string) []int
	ChunkWriter(name string, h format.Header) (put func(idx []int, chunk, room []byte) error, roomBytes int, err error)
}

// chunkMeta is a store input's metadata as an output of its format keeps
// it: each array's shape and chunk shape by name.
type chunkMeta interface {
	ChunksOf(name string) (shape, chunks []int)
	WithChunks(name string, shape, chunks []int) any
}

// shardMeta is a chunkMeta whose format shards arrays (Zarr v3): an
// array written as shards of inner chunks.
type shardMeta interface {
	WithShards(name string, shape, shards, inner []int) any
}

// shardedStore is a chunkedStore whose next array is sharded: its shard
// shape (a multiple of OutputChunks, its inner chunks), or nil.
type shardedStore interface {
	OutputShards(name string) []int
}

// chunkedJob is what a member job computed by a plan gives a store
// output to run it chunk to chunk.
type chunkedJob struct {
	plan     *ops.Plan
	t        *Tensor
	progress func(int64)
}

const (
	// chunkRunBytes is one run's input (and output): small, so that a
	// worker's two buffers are nothing beside the chunks it reads.
	chunkRunBytes = 512 << 10
	// groupLimit bounds a group's output chunks, held at once; a job
	// whose groups are larger (chunks an operator scatters widely, such
	// as --chunks across the blocks of an s2d's channels) runs through
	// the decoded input and the ordered writer instead.
	groupLimit = 96 << 20
	// inChunkLimit bounds one input chunk, decoded whole by each worker.
	inChunkLimit = 64 << 20
	// overlapBytes bounds the decoded input chunks read ahead of the
	// runs when the input's chunks come over a network: 8 chunks of
	// 1 MiB (a sharded v3 array's inner chunks); with 16 MiB chunks,
	// none beyond the threads. It bounds the bytes held, not the
	// requests: from an input that says when an answer arrives
	// (arrivingArray), up to --io-jobs batch requests are on their way
	// at once, and an answer waits in its socket until there is room
	// for it. Raising the bound itself to 16 MiB instead, with the
	// room taken before each request was sent, gained wall time at
	// 20 ms an answer (4.79 against 5.75 s in bench/zarr-s3.sh's job)
	// but held 134-136 MiB RssAnon against 116.
	overlapBytes = 8 << 20
	// batchBytes bounds the chunks the prefetcher asks for in one read
	// of a batchedArray: two requests of 4 MiB hold the same bytes in
	// flight as eight of 1 MiB. Per request, versitygw and the Python
	// latency proxy of bench/zarr-s3.sh took about a millisecond of CPU
	// each: downloading the 1 GiB sharded store in 1 MiB ranges cost them
	// 1.6 and 1.8 s, in 4 MiB ranges 0.75 and 1.2 s, in 8 MiB 0.6 and
	// 1.0 s (s5cmd cp -p 1, 4, 8 against them, 2 cores, load 4).
	batchBytes = 4 << 20
	// chunkRunHeap is the room the heap gets during a run, unless GOGC
	// or GOMEMLIMIT say otherwise. The big buffers are fileio's, outside
	// the heap; the heap is a few megabytes live (scratch, the stored
	// bytes of the runs being decoded) and garbage made at a gigabyte a
	// second. A pace (GOGC) scales with the live heap: 100 or a batch's
	// 200 let it grow to 30-40 MiB, and 25, which kept it near 20, ran
	// the collector some 400 times a job, 15-20% of its CPU. A fixed room
	// collects once per chunkRunHeap of garbage.
	chunkRunHeap = 16 << 20
)

// keptChunks is meta with, for every array a plan of whole blocks
// changes, the output's chunk shape that keeps the input's: the input's
// chunk shape through the same operator (s2d by 2 of chunks [1, 1, 1024,
// 4096] is [1, 4, 512, 2048]), when the operator takes it (every blocked
// axis's chunk divides by the block; for d2s the channel chunk by the
// blocks' product). Then every output chunk is made from at most the
// blocks' product of input chunks, and holds as many bytes as one. meta
// as it is otherwise, and the writer chooses chunks near 16 MiB.
//
// A sharded input (its chunks the shards, its reader's ChunkShape the
// inner chunks) keeps its sharding by the same rule: shards and inner
// chunks both through the operator when it takes both, both as they are
// when the job keeps the shape. Otherwise its shards are kept as chunks,
// by the rule above.
func keptChunks(meta any, jobs []MemberJob) any {
	for _, j := range jobs {
		m, ok := meta.(chunkMeta)
		c := j.byChunks
		if !ok || c == nil {
			continue
		}
		shape, chunks := m.ChunksOf(c.t.Name)
		if chunks == nil || !slices.Equal(shape, c.t.Shape) {
			continue
		}
		if sm, ok := meta.(shardMeta); ok {
			if arr, ok := c.t.lazy.(chunkedArray); ok && !slices.Equal(arr.ChunkShape(), chunks) {
				inner := arr.ChunkShape()
				if slices.Equal(c.plan.In, c.plan.Out) {
					meta = sm.WithShards(j.Name, shape, chunks, inner)
					continue
				}
				outShards, outInner := operatorChunks(c.plan, chunks), operatorChunks(c.plan, inner)
				if outShards != nil && outInner != nil {
					meta = sm.WithShards(j.Name, c.plan.Out, outShards, outInner)
					continue
				}
			}
		}
		if out := operatorChunks(c.plan, chunks); out != nil {
			meta = m.WithChunks(j.Name, c.plan.Out, out)
		}
	}
	return meta
}

// operatorChunks is the chunk shape chunks through plan's operator, or nil
// when the operator does not take it whole, or when the plan is not its
// Request's (reorder and convert plan their own) or keeps the shape (the
// writer keeps the input's chunks then).
func operatorChunks(p *ops.Plan, chunks []int) []int {
	if slices.Equal(p.In, p.Out) {
		return nil
	}
	if whole, err := ops.NewPlan(p.Request, p.In, p.ElemSize, false); err != nil || !slices.Equal(whole.Out, p.Out) {
		return nil
	}
	sub, err := ops.NewPlan(p.Request, chunks, p.ElemSize, false)
	if err != nil || !sub.Streams() {
		return nil
	}
	return sub.Out
}

// byChunks runs job j chunk to chunk into mw when the job, its input and
// the output allow it (done), and reports done false, with nothing of the
// member started, when they do not.
func (w *writing) byChunks(j *MemberJob, mw format.MemberWriter) (done bool, err error) {
	c := j.byChunks
	cs, ok := mw.(chunkedStore)
	if c == nil || !ok || c.t.Data != nil || c.t.scratch != nil {
		return false, nil
	}
	arr, ok := c.t.lazy.(chunkedArray)
	if !ok {
		return false, nil
	}
	outChunks := cs.OutputChunks(j.Name)
	if outChunks == nil {
		return false, nil
	}
	r, ok := newChunkRun(c.plan, arr.ChunkShape(), outChunks)
	if !ok {
		return false, nil
	}
	if ss, ok := mw.(shardedStore); ok {
		if shards := ss.OutputShards(j.Name); shards != nil {
			r.byShard(shards)
		}
	}
	put, roomBytes, err := cs.ChunkWriter(j.Name, j.Header)
	if err != nil {
		return true, err
	}
	if put == nil {
		return true, errors.New("internal error: the store took the array in order after all")
	}
	threads := j.Threads
	if threads < 1 {
		threads = runtime.GOMAXPROCS(0)
	}
	progress := c.progress
	if progress == nil {
		progress = func(int64) {}
	}
	readErr := func(err error) error { return computed(c.t.inflateErr(err)) }
	defer gcpace.Start(chunkRunHeap)()
	chunkToChunkJobs.Add(1)
	if err := r.run(arr, put, roomBytes, threads, progress, readErr); err != nil {
		return true, w.memberErr(j, err)
	}
	return true, nil
}

// chunkToChunkJobs counts the jobs run chunk to chunk: the tests tell by
// it which way a job went, both giving the same bytes.
var chunkToChunkJobs atomic.Int64

// grid is a C-order array cut into chunks of one shape; an edge chunk is
// whole too, past the array's end.
type grid struct {
	shape, chunk []int
	n            []int // chunks along each axis
	cstride      []int // element strides inside a chunk
	size         int   // element bytes
	chunkBytes   int
}

func newGrid(shape, chunk []int, size int) *grid {
	g := &grid{shape: shape, chunk: chunk, size: size, n: make([]int, len(shape)), cstride: make([]int, len(shape))}
	acc := 1
	for k := len(shape) - 1; k >= 0; k-- {
		g.n[k] = (shape[k] + chunk[k] - 1) / chunk[k]
		g.cstride[k] = acc
		acc *= chunk[k]
	}
	g.chunkBytes = acc * size
	return g
}

// count is the number of chunks.
func (g *grid) count() int {
	n := 1
	for _, d := range g.n {
		n *= d
	}
	return n
}

// index is the grid index of chunk id (flat, C order).
func (g *grid) index(id int) []int {
	idx := make([]int, len(g.n))
	for k := len(g.n) - 1; k >= 0; k-- {
		idx[k] = id % g.n[k]
		id /= g.n[k]
	}
	return idx
}

// inArray is how many bytes of chunk id lie inside the array.
func (g *grid) inArray(id int) int {
	n := g.size
	for k, x := range g.index(id) {
		n *= min(g.chunk[k], g.shape[k]-x*g.chunk[k])
	}
	return n
}

// runs calls f for each piece of the byte range [off, off+n) of the array
// that is contiguous in one chunk, in order: the chunk (flat), where the
// piece starts in the chunk's bytes, and its length.
func (g *grid) runs(off, n int64, idx []int, f func(id, at, ln int)) {
	r := len(g.shape)
	e, left := off/int64(g.size), n/int64(g.size)
	for left > 0 {
		x := e
		for k := r - 1; k >= 0; k-- {
			idx[k] = int(x % int64(g.shape[k]))
			x /= int64(g.shape[k])
		}
		// The piece runs to the chunk's end on axis j, and takes the
		// axes after j whole: those the chunk spans exactly, from their
		// start.
		j := r - 1
		for j > 0 && g.chunk[j] == g.shape[j] && idx[j] == 0 {
			j--
		}
		inner := int64(1)
		for k := j + 1; k < r; k++ {
			inner *= int64(g.shape[k])
		}
		end := min((idx[j]/g.chunk[j]+1)*g.chunk[j], g.shape[j])
		run := min(int64(end-idx[j])*inner, left)
		id, at := 0, 0
		for k := range r {
			id = id*g.n[k] + idx[k]/g.chunk[k]
			at += idx[k] % g.chunk[k] * g.cstride[k]
		}
		f(id, at*g.size, int(run)*g.size)
		e += run
		left -= run
	}
}

// chunkRun is a plan cut for a run chunk to chunk: its runs in groups,
// each group with the output chunks its runs fill.
type chunkRun struct {
	ck      *ops.Chunker
	in, out *grid
	groups  []runGroup
	reads   [][]int // per run, the input chunks it reads
	refs    []int32 // per input chunk, the runs that read it
	// inPeak is the most decoded input chunks the last run held at once:
	// what the read-ahead's bound keeps.
	inPeak int
}

type runGroup struct {
	runs []int // in order
	outs []int // output chunks, flat
}

// newChunkRun cuts plan for input chunks inChunk and output chunks
// outChunk, or says (false) that it cannot within the memory bounds.
func newChunkRun(p *ops.Plan, inChunk, outChunk []int) (*chunkRun, bool) {
	if len(inChunk) != len(p.In) || len(outChunk) != len(p.Out) || len(p.In) == 0 || p.Elements() == 0 {
		return nil, false
	}
	ck, err := p.Chunker(chunkRunBytes, false, false)
	if err != nil {
		return nil, false
	}
	r := &chunkRun{ck: ck, in: newGrid(p.In, inChunk, p.ElemSize), out: newGrid(p.Out, outChunk, p.ElemSize)}
	if r.in.chunkBytes > inChunkLimit || r.out.chunkBytes > groupLimit {
		return nil, false
	}
	// Runs that fill the same output chunk are in one group: a union of
	// the output chunks each run touches.
	parent := make([]int, r.out.count())
	for i := range parent {
		parent[i] = i
	}
	root := func(x int) int {
		for parent[x] != x {
			parent[x] = parent[parent[x]]
			x = parent[x]
		}
		return x
	}
	n := ck.Len()
	first := make([]int, n)
	r.reads = make([][]int, n)
	r.refs = make([]int32, r.in.count())
	inIdx, outIdx := make([]int, len(p.In)), make([]int, len(p.Out))
	for i := range n {
		ch := ck.Chunk(i)
		first[i] = -1
		for _, s := range ch.Out {
			r.out.runs(s.Off, s.Len, outIdx, func(id, _, _ int) {
				if first[i] < 0 {
					first[i] = id
				} else if a, b := root(first[i]), root(id); a != b {
					parent[b] = a
				}
			})
		}
		for _, s := range ch.In {
			r.in.runs(s.Off, s.Len, inIdx, func(id, _, _ int) {
				if !slices.Contains(r.reads[i], id) {
					r.reads[i] = append(r.reads[i], id)
					r.refs[id]++
				}
			})
		}
	}
	at := map[int]int{} // group of each root
	for i := range n {
		g, ok := at[root(first[i])]
		if !ok {
			g = len(r.groups)
			at[root(first[i])] = g
			r.groups = append(r.groups, runGroup{})
		}
		r.groups[g].runs = append(r.groups[g].runs, i)
	}
	for id := range parent {
		g, ok := at[root(id)]
		if !ok {
			return nil, false // an output chunk no run fills: not this plan's
		}
		r.groups[g].outs = append(r.groups[g].outs, id)
		if len(r.groups[g].outs)*r.out.chunkBytes > groupLimit {
			return nil, false
		}
	}
	return r, true
}

// byShard orders the groups shard by shard, where the output chunks are
// the inner chunks of shards of shape shards: a group goes with the shard
// of its first output chunk, and the groups of one shard keep their
// order. Where each group fills one shard (shards that span the rows the
// runs write), a shard is then done before the next is begun, whatever
// the operator's order of the output, and one shard at a time is open
// (an object being written and its index). A group that fills several
// (s2d DCR writes each input channel into every shard along the
// channels) keeps them all open until their last group.
func (r *chunkRun) byShard(shards []int) {
	per := make([]int, len(shards))
	for i := range per {
		per[i] = max(1, shards[i]/r.out.chunk[i])
	}
	shardOf := func(id int) int {
		s := 0
		for i, x := range r.out.index(id) {
			s = s*((r.out.n[i]+per[i]-1)/per[i]) + x/per[i]
		}
		return s
	}
	type keyed struct {
		shard int
		g     runGroup
	}
	gs := make([]keyed, len(r.groups))
	for i, g := range r.groups {
		gs[i] = keyed{shardOf(g.outs[0]), g}
	}
	slices.SortStableFunc(gs, func(a, b keyed) int { return a.shard - b.shard })
	for i := range gs {
		r.groups[i] = gs[i].g
	}
}

// bufferSet hands out buffers of one size, reused within a job and
// handed back to fileio's pool at its end.
type bufferSet struct {
	mu   sync.Mutex
	size int
	free [][]byte
	all  [][]byte
	// inUse counts the buffers handed out and not put back; peak is
	// its most.
	inUse, peak int
}

func (b *bufferSet) get() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inUse++
	b.peak = max(b.peak, b.inUse)
	if n := len(b.free); n > 0 {
		buf := b.free[n-1]
		b.free = b.free[:n-1]
		return buf
	}
	buf := fileio.GetBuffer(b.size)[:b.size]
	b.all = append(b.all, buf)
	return buf
}

func (b *bufferSet) put(buf []byte) {
	b.mu.Lock()
	b.free = append(b.free, buf)
	b.inUse--
	b.mu.Unlock()
}

func (b *bufferSet) close() {
	for _, buf := range b.all {
		fileio.PutBuffer(buf)
	}
}

// inputChunk is a decoded input chunk, shared by the runs that read it
// and let go by the last.
type inputChunk struct {
	ready chan struct{} // closed once b and err are set
	b     []byte
	err   error
	refs  atomic.Int32
	ahead bool // read by the prefetcher, holding one of its tokens
	// batch is the read-ahead's batch that claimed the chunk (nil: a
	// run's read): when every run waits for such a batch, the batches
	// they wait for are told (want), so that they wait for no token.
	batch *aheadBatch
}

// outputChunk is an output chunk being filled.
type outputChunk struct {
	b      []byte
	filled atomic.Int64
}

// run computes the job: group after group, its runs on every worker,
// then its output chunks encoded and put on every worker.
func (r *chunkRun) run(arr chunkedArray, put func(idx []int, chunk, room []byte) error, roomBytes, threads int, progress func(int64), readErr func(error) error) error {
	rooms := &bufferSet{size: roomBytes}
	defer rooms.close()
	inBufs := &bufferSet{size: r.in.chunkBytes}
	outBufs := &bufferSet{size: r.out.chunkBytes}
	runBufs := &bufferSet{size: r.ck.MaxBytes()}
	defer func() { r.inPeak = inBufs.peak }()
	defer inBufs.close()
	defer outBufs.close()
	defer runBufs.close()
	// prefetched holds a token per input chunk the prefetcher has read
	// and the runs still read: its capacity bounds them.
	var prefetched chan struct{}
	// owed counts the tokens the batches that went without (the runs all
	// waiting for them) owe: their chunks, let go, pay it before any
	// token goes back, so that the read-ahead catches up with its bound
	// again before it lets the next answer in. Under mu.
	owed := 0
	var mu sync.Mutex
	ins := map[int]*inputChunk{}
	gone := map[int]bool{} // chunks every run that reads them has read
	// claim is input chunk id's entry and whether the caller, the first
	// to ask, is to read it; nil when the runs are done with it already
	// (skipGone: a chunk read ahead, not one a run needs). Called with mu
	// held.
	claim := func(id int, skipGone bool) (c *inputChunk, first bool) {
		c = ins[id]
		if c == nil {
			if skipGone && gone[id] {
				return nil, false
			}
			c = &inputChunk{ready: make(chan struct{})}
			c.refs.Store(r.refs[id])
			ins[id] = c
			first = true
		}
		return c, first
	}
	batched, _ := arr.(batchedArray)
	if batched != nil && !batched.Coalesces() {
		batched = nil
	}
	arriving, _ := arr.(arrivingArray)
	if batched == nil {
		arriving = nil
	}
	var readInto func(cs []*inputChunk, idxs [][]int, dsts [][]byte)
	// read reads and decodes the chunks ids claimed as cs, in one go
	// where the input can.
	read := func(cs []*inputChunk, ids []int) {
		idxs, dsts := make([][]int, len(ids)), make([][]byte, len(ids))
		for k, c := range cs {
			c.b = inBufs.get()
			idxs[k], dsts[k] = r.in.index(ids[k]), c.b
		}
		readInto(cs, idxs, dsts)
	}
	readInto = func(cs []*inputChunk, idxs [][]int, dsts [][]byte) {
		if batched != nil && len(cs) > 1 {
			err := batched.ReadChunks(dsts, idxs)
			for _, c := range cs {
				if err != nil {
					c.err = readErr(err)
				}
			}
		} else {
			for k, c := range cs {
				if err := arr.ReadChunk(dsts[k], idxs[k]); err != nil {
					c.err = readErr(err)
				}
			}
		}
		for _, c := range cs {
			close(c.ready)
		}
	}
	ranged, _ := arr.(rangedArray)
	if ranged != nil && !ranged.Ranged() {
		ranged = nil
	}
	ahead := r.readAhead(arr, ranged != nil, batched != nil, threads)
	// fetch reads the chunks ids, the batch of the read-ahead of a chunk
	// a run needs, or that one chunk, that no one has claimed yet (those
	// the runs are done with already are skipped): a run that finds its
	// chunk unclaimed reads the chunk's whole batch, as the prefetcher
	// would have, the same requests whoever comes first. They hold no
	// token of the read-ahead: the runs waiting bound them.
	fetch := func(ids []int) {
		var cs []*inputChunk
		var mine []int
		mu.Lock()
		for _, id := range ids {
			if c, first := claim(id, true); first {
				cs, mine = append(cs, c), append(mine, id)
			}
		}
		mu.Unlock()
		if len(cs) > 0 {
			read(cs, mine)
		}
	}
	// fetchAhead reads batch b of the read-ahead for the prefetcher: the
	// chunks of it no one has claimed yet, each holding a token once
	// admitted. The request goes out at once; the tokens, and the
	// buffers to decode into, are taken when its answer begins to arrive
	// where the input tells (arrivingArray), else before it is sent.
	fetchAhead := func(b *aheadBatch, tokens chan struct{}, quit <-chan struct{}) {
		var cs []*inputChunk
		var mine []int
		mu.Lock()
		for _, id := range b.ids {
			if c, first := claim(id, true); first {
				c.batch = b
				cs, mine = append(cs, c), append(mine, id)
			}
		}
		mu.Unlock()
		if len(cs) == 0 {
			b.pass(quit)
			return
		}
		idxs := make([][]int, len(mine))
		for k, id := range mine {
			idxs[k] = r.in.index(id)
		}
		admitted := false
		admit := func() ([][]byte, error) {
			admitted = true
			held, err := b.admit(len(cs), tokens, quit)
			mu.Lock()
			for _, c := range cs {
				c.ahead = true
			}
			owed += len(cs) - held
			mu.Unlock()
			if err != nil {
				return nil, err
			}
			dsts := make([][]byte, len(cs))
			for k, c := range cs {
				c.b = inBufs.get()
				dsts[k] = c.b
			}
			return dsts, nil
		}
		if arriving == nil {
			dsts, err := admit()
			if err != nil {
				for _, c := range cs {
					c.err = err
					close(c.ready)
				}
				return
			}
			readInto(cs, idxs, dsts)
			return
		}
		err := arriving.ReadChunksArriving(idxs, admit)
		if !admitted {
			b.pass(quit) // failed before any answer: holds no token
		}
		for _, c := range cs {
			if err != nil {
				c.err = readErr(err)
			}
			close(c.ready)
		}
	}
	stalls := &runStalls{waits: map[*aheadBatch]int{}}
	// input is input chunk id for a run, read by the first caller; with
	// its batch of the read-ahead, if any. It is not gone: this run has
	// still to read it.
	input := func(id int) *inputChunk {
		mu.Lock()
		c := ins[id]
		mu.Unlock()
		if c == nil {
			ids := ahead.batchOf(id)
			if ids == nil {
				ids = []int{id}
			}
			fetch(ids)
			mu.Lock()
			c = ins[id]
			mu.Unlock()
		}
		if c.batch != nil {
			select {
			case <-c.ready:
			default:
				stalls.wait(c.batch)
				<-c.ready
				stalls.waited(c.batch)
			}
		}
		<-c.ready
		return c
	}
	done := func(id int) {
		mu.Lock()
		c := ins[id]
		mu.Unlock()
		if c.refs.Add(-1) == 0 {
			mu.Lock()
			delete(ins, id)
			gone[id] = true
			ahead := c.ahead
			if ahead && owed > 0 {
				owed--
				ahead = false
			}
			mu.Unlock()
			inBufs.put(c.b)
			if ahead {
				prefetched <- struct{}{}
			}
		}
	}
	// rangesLeft counts, per input chunk read in ranges, the runs yet to
	// read it.
	var rangesLeft []atomic.Int32
	releasing, _ := arr.(releasingArray)
	if ranged != nil && releasing != nil {
		rangesLeft = make([]atomic.Int32, len(r.refs))
		for id, n := range r.refs {
			rangesLeft[id].Store(n)
		}
	}
	stop := r.prefetch(ahead, arriving != nil, fetchAhead, &prefetched)
	defer stop()
	for _, g := range r.groups {
		outs := make(map[int]*outputChunk, len(g.outs))
		for _, id := range g.outs {
			b := outBufs.get()
			if r.out.inArray(id) != len(b) {
				clear(b) // an edge chunk: zeros, the fill value written, past the array
			}
			outs[id] = &outputChunk{b: b}
		}
		err := parallel(threads, len(g.runs), func(k int) error {
			stalls.start()
			defer stalls.end()
			i := g.runs[k]
			ch := r.ck.Chunk(i)
			src, dst := runBufs.get(), runBufs.get()
			defer runBufs.put(src)
			defer runBufs.put(dst)
			src, dst = src[:ch.Bytes], dst[:ch.Bytes]
			idx := make([]int, max(len(r.in.shape), len(r.out.shape)))
			pos := 0
			var err error
			for _, s := range ch.In {
				r.in.runs(s.Off, s.Len, idx[:len(r.in.shape)], func(id, at, ln int) {
					if err != nil {
						return
					}
					if ranged != nil {
						if err = ranged.ReadChunkRange(src[pos:pos+ln], r.in.index(id), at); err != nil {
							err = readErr(err)
						}
						pos += ln
						return
					}
					c := input(id)
					if c.err != nil {
						err = c.err
						return
					}
					copy(src[pos:pos+ln], c.b[at:at+ln])
					pos += ln
				})
				if err != nil {
					return err
				}
			}
			for _, id := range r.reads[i] {
				switch {
				case ranged == nil:
					done(id)
				case rangesLeft != nil && rangesLeft[id].Add(-1) == 0:
					releasing.DoneWithChunk(r.in.index(id))
				}
			}
			if err := r.ck.Run(ch, dst, src, 1); err != nil {
				return err
			}
			pos = 0
			for _, s := range ch.Out {
				r.out.runs(s.Off, s.Len, idx[:len(r.out.shape)], func(id, at, ln int) {
					o := outs[id]
					copy(o.b[at:at+ln], dst[pos:pos+ln])
					o.filled.Add(int64(ln))
					pos += ln
				})
			}
			progress(int64(ch.Bytes))
			return nil
		})
		if err != nil {
			return err
		}
		err = parallel(threads, len(g.outs), func(k int) error {
			id := g.outs[k]
			o := outs[id]
			if int(o.filled.Load()) != r.out.inArray(id) {
				return errors.New("internal error: an output chunk was not filled")
			}
			var room []byte
			if roomBytes > 0 {
				room = rooms.get()
				defer rooms.put(room)
			}
			err := put(r.out.index(id), o.b, room)
			outBufs.put(o.b)
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// chunkReadAhead is how the prefetcher reads input chunks ahead of the
// runs, when the input's chunks come over a network: the runs read the
// chunks they need themselves, and neighbouring runs need the same few
// chunks, so threads of them keep about one request in flight and pay a
// round trip per chunk. It holds at most n chunks the runs have not finished
// with (as many as the input's Overlap asks, --io-jobs, within
// overlapBytes), and reads them in batches, in the order the runs first
// need them: from a batchedArray, runs of up to batchBytes of chunks
// next to each other in the grid (along its last axis: those a store may
// hold back to back), else one chunk each.
type chunkReadAhead struct {
	n       int
	jobs    int // requests on their way at once (--io-jobs)
	batches [][]int
	batch   []int32 // each input chunk's batch; nil: batches of one
}

// readAhead is the read-ahead of a run over arr, nil for none.
func (r *chunkRun) readAhead(arr chunkedArray, ranged, batched bool, threads int) *chunkReadAhead {
	o, ok := arr.(overlapped)
	if !ok || ranged || o.Overlap() <= threads {
		return nil
	}
	n := min(o.Overlap(), overlapBytes/r.in.chunkBytes)
	if n < 1 {
		return nil
	}
	perBatch := 1
	if batched {
		perBatch = max(1, min(n, batchBytes/r.in.chunkBytes))
	}
	var order []int
	seen := make([]bool, r.in.count())
	for _, g := range r.groups {
		for _, i := range g.runs {
			for _, id := range r.reads[i] {
				if !seen[id] {
					seen[id] = true
					order = append(order, id)
				}
			}
		}
	}
	ra := &chunkReadAhead{n: n, jobs: o.Overlap()}
	if perBatch > 1 {
		ra.batch = make([]int32, r.in.count())
	}
	for len(order) > 0 {
		k := 1
		for k < min(perBatch, len(order)) && order[k] == order[k-1]+1 {
			k++
		}
		for _, id := range order[:k] {
			if ra.batch != nil {
				ra.batch[id] = int32(len(ra.batches))
			}
		}
		ra.batches = append(ra.batches, order[:k])
		order = order[k:]
	}
	return ra
}

// batchOf is the batch of chunk id when batches hold more than one
// chunk, else nil.
func (ra *chunkReadAhead) batchOf(id int) []int {
	if ra == nil || ra.batch == nil {
		return nil
	}
	return ra.batches[ra.batch[id]]
}

// aheadBatch is a batch of the read-ahead on its way: its chunks, and
// the order in which batches take their tokens. A batch takes its tokens
// only once the batch before it has taken its own (prev closed; it
// closes mine then), so that a later batch, its answer come first, never
// takes the tokens an earlier one needs while the runs wait for the
// earlier one. wanted closes when every run waits, this batch among those
// they wait for (runStalls): the batch then waits no more, as if a run
// had read it itself (the runs waiting bound what they read).
type aheadBatch struct {
	ids        []int
	prev, mine chan struct{}
	wanted     chan struct{}
	wantOnce   sync.Once
	passOnce   sync.Once
}

func newAheadBatch(ids []int, prev chan struct{}) *aheadBatch {
	return &aheadBatch{ids: ids, prev: prev, mine: make(chan struct{}), wanted: make(chan struct{})}
}

// runStalls tells the batches of the read-ahead that the runs wait for
// when every run waits for one (want): the tokens may all be held by
// chunks whose runs wait for those batches, and no token would come
// back. A run that waits while another runs, or for a batch that will
// find its tokens, holds nothing beyond the bound.
type runStalls struct {
	mu      sync.Mutex
	running int
	waiting int
	waits   map[*aheadBatch]int
}

func (s *runStalls) start() {
	s.mu.Lock()
	s.running++
	s.mu.Unlock()
}

func (s *runStalls) end() {
	s.mu.Lock()
	s.running--
	s.check()
	s.mu.Unlock()
}

// wait says that a run waits for batch b.
func (s *runStalls) wait(b *aheadBatch) {
	s.mu.Lock()
	s.waiting++
	s.waits[b]++
	s.check()
	s.mu.Unlock()
}

func (s *runStalls) waited(b *aheadBatch) {
	s.mu.Lock()
	s.waiting--
	if s.waits[b]--; s.waits[b] == 0 {
		delete(s.waits, b)
	}
	s.mu.Unlock()
}

// check tells the batches waited for if every run waits. Called with
// mu held.
func (s *runStalls) check() {
	if s.waiting > 0 && s.waiting >= s.running {
		for b := range s.waits {
			b.want()
		}
	}
}

// want says that the runs wait for the batch, all of them.
func (b *aheadBatch) want() { b.wantOnce.Do(func() { close(b.wanted) }) }

// pass lets the next batch take its tokens once this one's turn has
// come, this one taking none.
func (b *aheadBatch) pass(quit <-chan struct{}) {
	b.passOnce.Do(func() {
		go func() {
			select {
			case <-b.prev:
			case <-quit:
			}
			close(b.mine)
		}()
	})
}

// admit takes n tokens in the batch's turn and says how many it holds.
// Once wanted it waits no more, for its turn or for tokens, and takes
// only the tokens free: the runs may hold all of them, waiting for this
// batch. An error when quit closed.
func (b *aheadBatch) admit(n int, tokens chan struct{}, quit <-chan struct{}) (held int, err error) {
	defer b.pass(quit)
	wanted := false
	select {
	case <-b.prev:
	case <-b.wanted:
		wanted = true
	case <-quit:
		return 0, errPrefetchStopped
	}
	for held < n {
		if wanted {
			select {
			case <-tokens:
				held++
				continue
			default:
				return held, nil
			}
		}
		select {
		case <-tokens:
			held++
		case <-b.wanted:
			wanted = true
		case <-quit:
			return held, errPrefetchStopped
		}
	}
	return held, nil
}

// errPrefetchStopped is a read-ahead's read cut short by the job's end
// (an error elsewhere): no run reads it.
var errPrefetchStopped = errors.New("the read-ahead stopped")

// prefetch reads ra's batches in order, up to ra.n chunks held ahead:
// *tokens is set to the channel whose capacity bounds them, a token a
// chunk (nil: no prefetch). fetch reads a batch, taking its tokens by
// the batch's admit. Where the input takes its tokens as each answer
// begins to arrive (arrive), up to ra.jobs requests are on their way at
// once, more than the tokens cover; else ra.n, each with its tokens
// before it is sent. The returned function stops the prefetcher and
// waits for it.
func (r *chunkRun) prefetch(ra *chunkReadAhead, arrive bool, fetch func(b *aheadBatch, tokens chan struct{}, quit <-chan struct{}), tokens *chan struct{}) (stop func()) {
	if ra == nil {
		return func() {}
	}
	n := ra.n
	*tokens = make(chan struct{}, n)
	for range n {
		*tokens <- struct{}{}
	}
	workers := n
	if arrive {
		workers = max(n, ra.jobs)
	}
	quit := make(chan struct{})
	batches := make(chan *aheadBatch)
	var wg sync.WaitGroup
	wg.Add(workers + 1)
	go func() {
		defer wg.Done()
		defer close(batches)
		prev := make(chan struct{})
		close(prev)
		for _, ids := range ra.batches {
			b := newAheadBatch(ids, prev)
			select {
			case batches <- b:
			case <-quit:
				return
			}
			prev = b.mine
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			for b := range batches {
				fetch(b, *tokens, quit)
			}
		}()
	}
	return func() {
		close(quit)
		wg.Wait()
	}
}

// parallel calls f(0…n-1) on up to threads goroutines and returns the
// first error; after one, no new call starts.
func parallel(threads, n int, f func(k int) error) error {
	var (
		next    atomic.Int64
		failed  atomic.Bool
		once    sync.Once
		first   error
		wg      sync.WaitGroup
		workers = max(1, min(threads, n))
	)
	work := func() {
		defer wg.Done()
		for !failed.Load() {
			k := int(next.Add(1) - 1)
			if k >= n {
				return
			}
			if err := f(k); err != nil {
				once.Do(func() { first = err })
				failed.Store(true)
				return
			}
		}
	}
	wg.Add(workers)
	for range workers - 1 {
		go work()
	}
	work()
	wg.Wait()
	return first
}
