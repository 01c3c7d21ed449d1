// Package batch runs space-to-depth or depth-to-space over many tensor
// files at once: command-line files and directory trees walked in a fixed
// order, written under one output directory with their relative paths,
// optionally one shard of the list (--shard), skipping outputs that
// already exist (--skip-existing). A file that fails is reported and the
// batch goes on. Each file is one pipeline.Transform; this package
// decides which files, in what order, with how many threads each, and
// reports progress, one JSON record per file and a summary.
package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/depthspace/depthspace/internal/gcpace"
	fileio "github.com/depthspace/depthspace/internal/io"
	"github.com/depthspace/depthspace/internal/ops"
	"github.com/depthspace/depthspace/internal/pipeline"
	"github.com/depthspace/depthspace/internal/walk"
)

// Options is one batch.
type Options struct {
	Inputs []string // files and directories
	OutDir string   // created if missing
	// Job is the template of every file's job: Request, From, To, DType
	// and Shape are used; Path, Output and Threads are set per file.
	Job          pipeline.Options
	Threads      int // -j: shared by all files (see Run)
	Shard        Shard
	ShardFrom    string // where --shard auto found Shard (the scheduler's variables); "" otherwise
	SkipExisting bool
	Progress     Progress
	// ProgressInterval spaces plain progress lines (ProgressInterval).
	ProgressInterval time.Duration
	JSON             io.Writer // one Record per file, then the Summary; nil for none
	Stderr           io.Writer // failures and progress
}

// Status of one file.
const (
	StatusOK      = "ok"
	StatusSkipped = "skipped"
	StatusFailed  = "failed"
)

// Record is what --json prints for one file, one JSON object a line, in
// the batch's order. Every key is always present; shapes are null and
// dtype empty when not known (a skipped or failed file).
type Record struct {
	Input    string `json:"input"`
	Output   string `json:"output"`
	InShape  []int  `json:"in_shape"`
	OutShape []int  `json:"out_shape"`
	DType    string `json:"dtype"`
	Bytes    int64  `json:"bytes"`   // tensor data bytes written; 0 unless ok
	Written  int64  `json:"written"` // the output file's size, headers included; 0 unless ok
	Status   string `json:"status"`  // ok, skipped or failed
	Error    string `json:"error"`   // why it failed, without the input's path; "" otherwise
}

// Summary is the end of a batch. With --json it is also the last record,
// told from the files' records by "summary": true.
type Summary struct {
	IsSummary bool    `json:"summary"`    // always true
	Shard     string  `json:"shard"`      // "K/N", or "" for the whole list
	ShardFrom string  `json:"shard_from"` // --shard auto: the scheduler's variables it came from; "" otherwise
	Total     int     `json:"total"`      // files in the whole list, before --shard
	Files     int     `json:"files"`      // files of this shard
	Done      int     `json:"done"`
	Skipped   int     `json:"skipped"`
	Failed    int     `json:"failed"`
	Bytes     int64   `json:"bytes"`   // tensor data bytes written
	Written   int64   `json:"written"` // bytes of the output files written (their sizes)
	Seconds   float64 `json:"seconds"`
}

// String is the summary line: "120 files: 117 done, 2 skipped, 1 failed;
// 1.2 GiB written in 3.4s", prefixed with the shard under --shard. What
// is written is the output files' bytes, headers included (Written), as
// ls or du would add them up, not the tensor data alone.
func (s *Summary) String() string {
	head := ""
	if s.Shard != "" {
		head = fmt.Sprintf("shard %s (%d of %d files): ", s.Shard, s.Files, s.Total)
		if s.ShardFrom != "" {
			head = fmt.Sprintf("shard %s from %s (%d of %d files): ", s.Shard, s.ShardFrom, s.Files, s.Total)
		}
	} else {
		head = fmt.Sprintf("%d files: ", s.Files)
		if s.Files == 1 {
			head = "1 file: "
		}
	}
	return fmt.Sprintf("%s%d done, %d skipped, %d failed; %s written in %s", head, s.Done, s.Skipped, s.Failed,
		FormatBytes(s.Written), roundDuration(time.Duration(s.Seconds*float64(time.Second))))
}

// Run runs a batch. An error is returned only for a problem with the
// batch as a whole, found before any file is touched (no inputs, an
// unusable --out-dir, two inputs with the same output), or, at the end,
// for a --json record that could not be written (with the Summary); a
// file that fails is reported on Stderr as "depthspace: PATH: what is
// wrong", counted in the Summary and, with JSON, recorded, and the batch
// goes on.
//
// -j is shared across and within files: every file gets one thread per
// chunk of input (pipeline.DefaultChunkBytes), between 1 and Threads, and
// files start in order as long as their threads fit in Threads. Many small
// files then run Threads at a time on one thread each; a file of
// Threads chunks or more runs alone on every thread.
func Run(opts Options) (*Summary, error) {
	start := time.Now()
	if len(opts.Inputs) == 0 {
		return nil, errors.New("--out-dir needs at least one INPUT file or directory")
	}
	threads := max(1, opts.Threads)
	outInfo, err := os.Stat(opts.OutDir)
	switch {
	case isObject(opts.OutDir): // a prefix: nothing to look at or make
		outInfo, err = nil, nil
	case err == nil && !outInfo.IsDir():
		return nil, &pipeline.PathError{Path: opts.OutDir, Err: errors.New("--out-dir is not a directory")}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, &pipeline.PathError{Path: opts.OutDir, Err: unwrap(err)}
	case err != nil:
		outInfo = nil
	}
	// The arguments are looked at before the output directory is made:
	// a batch refused as a whole leaves none behind.
	walk, err := newLister(opts.Inputs, opts.OutDir, outInfo, opts.Job.To)
	if err != nil {
		return nil, err
	}
	// An --out-dir this run makes holds no outputs yet: they are created
	// without looking at their paths first (fileio.Target.Fresh).
	fresh := outInfo == nil && !isObject(opts.OutDir) && os.Mkdir(opts.OutDir, 0o777) == nil
	if isObject(opts.OutDir) {
		// A prefix, made by its objects: nothing local to create.
	} else if err := os.MkdirAll(opts.OutDir, 0o777); err != nil {
		return nil, &pipeline.PathError{Path: opts.OutDir, Err: fmt.Errorf("cannot create the output directory: %w", unwrap(err))}
	}
	// A new --out-dir deep inside an input tree is met by the walk after
	// it was made: the walk is told of it, or its outputs would be taken
	// for inputs. (The arguments' own directories were read before it
	// existed, so it is not among their entries.)
	if outInfo == nil && !isObject(opts.OutDir) {
		if outInfo, err = os.Stat(opts.OutDir); err != nil {
			return nil, &pipeline.PathError{Path: opts.OutDir, Err: unwrap(err)}
		}
		walk.walk.SetOutDir(outInfo)
	}
	// A progress display needs the totals before the first file: the
	// inputs are walked once more for them, first (docs/batch.md gives
	// the cost). Without one, the batch starts with the first file found.
	var files int
	var bytes int64
	if opts.Progress != ProgressNone {
		count, err := newLister(opts.Inputs, opts.OutDir, outInfo, opts.Job.To)
		if err != nil {
			return nil, err
		}
		for i := 0; ; i++ {
			it, ok := count.next()
			if !ok {
				break
			}
			if opts.Shard.Owns(i) {
				files++
				bytes += it.size
			}
		}
	}
	q := newStream(walk, opts.Shard)
	defer q.stop()
	r := &runner{opts: opts, q: q,
		rep: newReporter(opts.Stderr, opts.Progress, opts.ProgressInterval, files, bytes)}
	slots := ioSlots(opts, threads) // objects.go: files in flight
	r.threads, r.free, r.objects = slots, slots, objectBatch(opts)
	r.cond = sync.NewCond(&r.mu)
	cachePlans(&r.opts.Job)
	r.opts.Job.FreshDir = fresh
	// The signal handler from the start: a batch replacing outputs would
	// otherwise ignore SIGINT around its first replacement until the
	// handler is in (fileio's replaceAnon), and its cost is paid once.
	fileio.HandleSignals()
	// The collector runs once per gcRoom of garbage rather than at a
	// percentage of the live heap (gcpace; GOGC or GOMEMLIMIT set by the
	// user rule instead): a batch's Go heap is about 2 MiB live whatever
	// its files (their bytes are in mapped buffers, not on the heap), so
	// a percentage collected every few hundred small files at GOGC 100,
	// every 2,500 or so at 200; and a collection whose marking is held
	// off its core under load counts what the workers allocate meanwhile
	// as live, which a percentage multiplies into the next goal and a
	// room only adds to.
	defer gcpace.Start(gcRoom)()
	fileio.SpareP() // workers in long reads and writes keep a P spare
	// Threads workers take the files in order. A worker lives for the
	// whole batch (a goroutine per file grew a new stack for each: 7% of
	// a batch of small files) and takes the next file once its share of
	// the threads is free.
	var wg sync.WaitGroup
	for range slots {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wk := newWorker(r.opts.Job.Planner)
			for {
				it, i, w, skip, ok := r.takeRun(&wk.after)
				if !ok {
					return
				}
				// Each file is reported as soon as it is done, not
				// with its run: records and progress keep pace with the
				// outputs, and an interrupted run loses none.
				r.finish(i, r.one(it, w, skip, wk))
				for k, it := range wk.after {
					r.finish(i+1+k, r.one(it, 1, false, wk))
				}
				clear(wk.after)
				wk.after = wk.after[:0]
				r.release(w)
			}
		}()
	}
	wg.Wait()
	r.rep.finish()
	total, mine := q.counts()

	s := &Summary{IsSummary: true, Shard: opts.Shard.String(), ShardFrom: opts.ShardFrom, Total: total, Files: mine,
		Done: r.done, Skipped: r.skipped, Failed: r.failed, Bytes: r.bytes, Written: r.written, Seconds: time.Since(start).Seconds()}
	if opts.JSON != nil && r.jsonErr == nil {
		r.jsonErr = json.NewEncoder(opts.JSON).Encode(s)
	}
	if r.jsonErr != nil {
		return s, fmt.Errorf("--json: a record could not be written: %w", r.jsonErr)
	}
	return s, nil
}

// one runs item it on threads threads (skip: --skip-existing skips it
// without a look) and gives its outcome.
func (r *runner) one(it item, threads int, skip bool, wk *worker) outcome {
	switch {
	case it.err != nil:
		return outcome{size: it.size, rec: Record{Input: it.input, Output: it.output, Status: StatusFailed}, err: it.err}
	case skip || r.opts.SkipExisting && exists(it.output):
		return outcome{size: it.size, rec: Record{Input: it.input, Output: it.output, Status: StatusSkipped}}
	}
	// The bytes already shown as progress, for a file of a chunk or
	// more; a smaller one shows when it is done (a counter a file was an
	// allocation a file).
	var counted *atomic.Int64
	if it.size >= pipeline.DefaultChunkBytes {
		counted = new(atomic.Int64)
	}
	rec, err := r.transform(it, threads, counted, wk)
	shown := int64(0)
	if counted != nil {
		shown = min(counted.Load(), it.size)
	}
	return outcome{size: it.size, shown: shown, rec: rec, err: err}
}

// outcome is how a file went: its record (and error), its size and the
// bytes of it its progress already showed.
type outcome struct {
	size, shown int64
	rec         Record
	err         error
}

// sameDir says whether the files a and b are in the same directory.
func sameDir(a, b string) bool {
	i, j := strings.LastIndexByte(a, filepath.Separator), strings.LastIndexByte(b, filepath.Separator)
	return i == j && a[:max(i, 0)] == b[:max(j, 0)]
}

// threadsFor is a file's share of -j: one thread per chunk of the
// streamed run (each thread then has a chunk of its own), at least one,
// at most all of them.
func threadsFor(size int64, threads int) int {
	return int(min(int64(threads), max(1, size/pipeline.DefaultChunkBytes)))
}

// runner is the state of a running batch.
type runner struct {
	opts Options
	q    *stream

	// objects: an input or the output is an object store's
	// (objectBatch): files are taken one at a time (takeRun).
	objects bool

	// Threads not in use; a file waits until its share is free.
	mu       sync.Mutex
	cond     *sync.Cond
	threads  int
	free     int
	turn     int  // the index (in this shard) of the next item to start
	head     item // that item, once taken from q (hasHead)
	hasHead  bool
	fetching bool // a worker is getting the next item from q, unlocked
	waiting  int  // workers waiting in take

	// Records come out in list order: finished ones wait for the earlier,
	// in pending (a few at a time: the files still running before them),
	// rather than in a slot per file of the batch. pending is a ring
	// whose slot at is item next's (a map allocated each waiting
	// record).
	out     sync.Mutex
	pending []finished
	at      int
	next    int
	// ahead bounds the records waiting in pending (maxAhead when 0): a
	// worker whose file is that far ahead of the next to report waits,
	// in held, before it takes another. On a loaded machine a worker can
	// be off its core for tens of milliseconds while the other goes
	// through thousands of tiny files: their records piled up (8,192 of
	// them in a batch of 100,000) and the peak RSS with them.
	ahead int
	held  sync.Cond // on out
	holds int       // workers waiting in held
	rep   *reporter

	done, skipped, failed int
	bytes, written        int64
	// jsonErr is the first --json record that could not be written (a
	// full disk, a closed pipe): the batch goes on, and fails at its end.
	jsonErr error

	dirs sync.Map // output directories made (or found) so far
}

func (r *runner) made(dir string) bool {
	_, ok := r.dirs.Load(dir)
	return ok
}

// runLen is the most files a worker takes at once, and runBytes the most
// input bytes: small files of one thread each, in a row, of one output
// directory, that the walk has already handed over. The workers then
// take and give back threads once a run rather than once a file (on two
// cores each time moved the lock's and the next item's cache lines from
// one core to the other), and where directories hold no more than a run,
// two workers write into two directories, not into one: on tmpfs that
// costs the kernel 3% less (docs/performance.md, many tiny files).
// runBytes is a chunk, a thread's share of a big file: a run of files
// slow to work on (PNG, JSON) keeps the other threads waiting no longer
// than a chunk would. A batch of objects takes no runs (objects): its
// files wait on the network and must be under way together (ioSlots).
const (
	runLen   = 64
	runBytes = pipeline.DefaultChunkBytes
)

// takeRun gives a worker the next file and its share of the threads,
// once that share is free (none for a walk error, nor for a file that
// would wait and that --skip-existing skips, which skip says): files
// start in list order (a file needing every thread is not overtaken by
// the small ones after it). Small files, one thread each, are taken
// without waiting.
//
// When the file taken is a small local one (one thread, not skipped),
// the small files after it in the same output directory are taken too,
// up to runLen files and runBytes in all, into *after: items i+1, i+2, …
// in order, to be run one after another on the thread taken. A file
// needing more threads, in another directory or past runBytes ends the
// run and is the next one taken. A nil after takes one file.
func (r *runner) takeRun(after *[]item) (it item, i, threads int, skip, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if !r.hasHead {
			if r.fetching {
				// Another worker is getting the next item: items start
				// in order, so wait for it.
				r.waiting++
				r.cond.Wait()
				r.waiting--
				continue
			}
			// The next item is waited for without the lock, so that
			// workers finishing files meanwhile give back their threads
			// and report (found in review: under a sparse --shard the
			// walk can take long to find this shard's next file).
			r.fetching = true
			r.mu.Unlock()
			it, more := r.q.next()
			r.mu.Lock()
			r.fetching = false
			if r.waiting > 0 {
				r.cond.Broadcast()
			}
			if !more {
				return item{}, 0, 0, false, false
			}
			r.head, r.hasHead = it, true
		}
		threads, skip = 0, false
		if it := r.head; it.err == nil { // a walk error: reported, no threads
			threads = threadsFor(it.size, r.threads)
			// A file that would wait and that --skip-existing skips is
			// handed out with none. Looked at here only then: the other
			// files' outputs are looked at by their workers, outside the
			// lock.
			if r.free < threads && r.opts.SkipExisting && exists(it.output) {
				threads, skip = 0, true
			}
		}
		if r.free >= threads {
			break
		}
		r.waiting++
		r.cond.Wait()
		r.waiting--
	}
	it, i = r.head, r.turn
	r.head, r.hasHead = item{}, false
	r.turn++
	r.free -= threads
	if after != nil && threads == 1 && !skip && !r.objects {
		// Nobody is fetching: the next item is fetched only when
		// there is no head, and there was one.
		bytes := it.size
		for len(*after) < runLen-1 && bytes < runBytes {
			next, ready := r.q.ready()
			if !ready {
				break
			}
			if next.err == nil && threadsFor(next.size, r.threads) != 1 || !sameDir(next.output, it.output) || bytes+next.size > runBytes {
				r.head, r.hasHead = next, true
				break
			}
			*after = append(*after, next)
			bytes += next.size
			r.turn++
		}
	}
	return it, i, threads, skip, true
}

// release gives back the threads a file took.
func (r *runner) release(n int) {
	if n == 0 {
		return
	}
	r.mu.Lock()
	r.free += n
	wake := r.waiting > 0
	r.mu.Unlock()
	if wake {
		r.cond.Broadcast()
	}
}

// worker is what a batch worker keeps from one file to the next.
type worker struct {
	// reuse is where its files, one after another, keep their
	// bookkeeping (pipeline.Options.Reuse).
	reuse pipeline.Reuse
	// after holds the files taken with its last (takeRun).
	after []item
	// dir is the output directory of its last file, made. The next
	// file's is usually the same (the walk gives a directory's files
	// in a row) and is then known by a compare, without filepath.Dir's
	// clean and a look in the runner's map of them (a twentieth of a
	// small file's own CPU).
	dir string
	// The worker's last plan, for its shape, element size and order (a
	// batch's files mostly share one), in front of the batch's cache of
	// them (cachePlans), whose key was made and looked up under a lock
	// for every file; planner is plan, made once.
	planned  bool
	shape    []int
	elemSize int
	fortran  bool
	p        *ops.Plan
	err      error
	planner  func(shape []int, elemSize int, fortran bool) (*ops.Plan, error)
	next     func(shape []int, elemSize int, fortran bool) (*ops.Plan, error)
}

// newWorker is a worker whose plans come from the batch's planner.
func newWorker(planner func(shape []int, elemSize int, fortran bool) (*ops.Plan, error)) *worker {
	w := &worker{next: planner}
	w.planner = w.plan
	return w
}

// plan is the plan for a tensor: the last one's when the tensor is
// alike, else the batch planner's.
func (w *worker) plan(shape []int, elemSize int, fortran bool) (*ops.Plan, error) {
	if w.planned && elemSize == w.elemSize && fortran == w.fortran && slices.Equal(shape, w.shape) {
		return w.p, w.err
	}
	p, err := w.next(shape, elemSize, fortran)
	w.planned, w.shape, w.elemSize, w.fortran, w.p, w.err = true, append(w.shape[:0], shape...), elemSize, fortran, p, err
	return p, err
}

// inDir says output is a file directly in w.dir.
func (w *worker) inDir(output string) bool {
	n := len(w.dir)
	return n > 0 && len(output) > n+1 && output[n] == filepath.Separator && output[:n] == w.dir &&
		strings.IndexByte(output[n+1:], filepath.Separator) < 0
}

// transform runs one file's job on threads threads, adding the data bytes
// it has done so far to counted (and to the progress shown) unless
// counted is nil, on worker w.
func (r *runner) transform(it item, threads int, counted *atomic.Int64, w *worker) (rec Record, err error) {
	rec = Record{Input: it.input, Output: it.output, Status: StatusFailed}
	defer func() {
		if p := recover(); p != nil {
			// A bug, not bad input: that file fails, the batch goes on.
			err = &pipeline.PathError{Path: it.input, Err: fmt.Errorf("internal error: %v (please report this)", p)}
		}
	}()
	if !isObject(it.output) && !w.inDir(it.output) {
		dir := filepath.Dir(it.output)
		if !r.made(dir) {
			if err := os.MkdirAll(dir, 0o777); err != nil {
				return rec, &pipeline.PathError{Path: dir, Err: fmt.Errorf("cannot create the output directory: %w", unwrap(err))}
			}
			r.dirs.Store(dir, true)
		}
		w.dir = dir
	}
	job := r.opts.Job
	job.Path, job.Output, job.Threads = it.input, it.output, min(threads, max(1, r.opts.Threads))
	job.Stdin, job.Stream = nil, false
	job.Stdout, job.StdoutTTY = io.Discard, false
	job.Reuse = &w.reuse
	job.Planner = w.planner
	// Progress counts tensor data bytes, the totals file sizes: a JSON
	// file's data can outgrow its text, so a file never shows more than
	// its size.
	if counted != nil {
		job.Progress = func(n int64) {
			after := counted.Add(n)
			if shown := min(after, it.size) - min(after-n, it.size); shown > 0 {
				r.rep.partial(shown)
			}
		}
	}
	res, err := pipeline.Transform(job)
	if err != nil {
		return rec, err
	}
	rec.InShape, rec.OutShape, rec.DType, rec.Bytes, rec.Status = res.InShape, res.OutShape, res.DType, res.Bytes, StatusOK
	rec.Written = res.Written
	if isObject(it.output) {
		rec.Written = outputSize(it.output)
	}
	return rec, nil
}

// finish records item i's outcome and prints every record that is now
// next in order.
func (r *runner) finish(i int, o outcome) {
	if o.err != nil {
		o.rec.Status = StatusFailed
		o.rec.Error = errorText(o.err, o.rec.Input)
	}
	r.rep.fileDone(o.size, o.shown, o.rec.Status == StatusFailed)
	r.out.Lock()
	defer r.out.Unlock()
	if r.ahead == 0 {
		r.ahead, r.held.L = maxAhead, &r.out
	}
	// The file next in order is another worker's, running: it does not
	// wait here, so neither waits for ever.
	for i-r.next >= r.ahead {
		r.holds++
		r.held.Wait()
		r.holds--
	}
	if k := i - r.next; k != 0 {
		*r.slot(k) = finished{o.rec, o.err, true}
		return
	}
	if r.holds > 0 {
		defer r.held.Broadcast()
	}
	rec, err := o.rec, o.err
	for {
		r.report(rec, err)
		r.next++
		if len(r.pending) == 0 {
			return
		}
		r.at = (r.at + 1) & (len(r.pending) - 1)
		f := &r.pending[r.at]
		if !f.ok {
			return
		}
		rec, err = f.rec, f.err
		*f = finished{}
	}
}

// maxAhead is how far ahead of the next record to report a finished file
// may be before its worker waits.
const maxAhead = 1024

// gcRoom is the garbage a batch makes between two collections: about
// 5,000 files of 144 bytes (3.3 KiB of garbage a file), 18 collections in
// 100,000 where GOGC 200 made 36-42. Measured against GOGC 200
// (docs/performance.md, many tiny files): the CPU 0.95-1.00x, the peak
// RSS over 1,000,000 files 36 MiB against 59 under the same load; 8 MiB
// gave no less CPU, and 32 and 64 MiB peaked at 42 and 71 MiB.
const gcRoom = 16 << 20

// slot is the slot of item next+k in pending, which grows (by
// powers of two) to hold it.
func (r *runner) slot(k int) *finished {
	if k >= len(r.pending) {
		n := max(8, len(r.pending))
		for n <= k {
			n *= 2
		}
		ring := make([]finished, n)
		for j := range r.pending {
			ring[j] = r.pending[(r.at+j)&(len(r.pending)-1)]
		}
		r.pending, r.at = ring, 0
	}
	return &r.pending[(r.at+k)&(len(r.pending)-1)]
}

// report counts and prints the record that is next in order.
func (r *runner) report(rec Record, err error) {
	switch rec.Status {
	case StatusOK:
		r.done++
		r.bytes += rec.Bytes
		r.written += rec.Written
	case StatusSkipped:
		r.skipped++
	default:
		r.failed++
		r.rep.println("depthspace: " + failureLine(err, rec.Input))
	}
	if r.opts.JSON != nil && r.jsonErr == nil {
		r.jsonErr = json.NewEncoder(r.opts.JSON).Encode(rec)
	}
}

// finished is a file's outcome waiting for its turn to be reported.
type finished struct {
	rec Record
	err error
	ok  bool
}

// errorText is what went wrong, without the input's own path in front
// (the record names it); a path other than the input's (the output's) is
// kept.
func errorText(err error, input string) string {
	var pe *pipeline.PathError
	if errors.As(err, &pe) && pe.Path == input {
		return pe.Err.Error()
	}
	return err.Error()
}

// failureLine is a failed file's error line: its input first, then, for
// an error about another path (its output, the output's directory),
// that path and what is wrong with it.
func failureLine(err error, input string) string {
	var pe *pipeline.PathError
	if input == "" || errors.As(err, &pe) && pe.Path == input {
		return err.Error()
	}
	return pipeline.Escaped(input) + ": " + err.Error()
}

// outputSize is the size of a complete output object, in place: as this
// run uploaded it, else from one HEAD; 0 if it cannot be known. A file's
// is what its writer wrote (pipeline.Result.Written), with no stat.
func outputSize(name string) int64 {
	if size, ok := fileio.UploadedSize(name); ok {
		return size
	}
	_, size, err := fileio.Head(name, 0)
	if err != nil {
		return 0
	}
	return size
}

// exists says whether a complete output is already there: outputs are
// renamed into place only when complete, so any regular file is one.
func exists(name string) bool {
	if isObject(name) {
		ok, _ := fileio.ObjectExists(name) // HEAD; a failure shows when the file is tried
		return ok || walk.IsStore(name)    // a store on s3:// is a prefix, its metadata put last
	}
	fi, err := os.Stat(name)
	return err == nil && (fi.Mode().IsRegular() || fi.IsDir() && walk.IsStore(name)) // a file, or a store
}

// stream is this shard's items, in order, from a walk that runs ahead on
// a goroutine of its own, a bounded number of items ahead: the batch
// starts with the first file found, and memory holds the walk's
// directories and those items, whatever the number of files. Items go
// over in slices: one at a time, every item the workers took woke the
// walk blocked on a full channel (+13% CPU on 100,000 small files).
type stream struct {
	batches chan []item
	cur     []item // the slice being handed out (next runs under runner.mu)
	quit    chan struct{}
	done    chan struct{}
	// total is every item walked, mine those of this shard: known once
	// batches is closed.
	total, mine int
}

// streamBatch items go over at a time, streamAhead batches ahead.
const (
	streamBatch = 256
	streamAhead = 4
)

func newStream(l *lister, shard Shard) *stream {
	s := &stream{batches: make(chan []item, streamAhead), quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		defer close(s.batches)
		batch := make([]item, 0, streamBatch)
		send := func() bool {
			select {
			case s.batches <- batch:
				batch = make([]item, 0, streamBatch)
				return true
			case <-s.quit:
				return false
			}
		}
		for i := 0; ; i++ {
			it, ok := l.next()
			if !ok {
				if len(batch) > 0 {
					send()
				}
				return
			}
			s.total++
			if !shard.Owns(i) {
				continue
			}
			s.mine++
			batch = append(batch, it)
			// The first file goes at once, so that work starts with it.
			if (len(batch) == streamBatch || s.mine == 1) && !send() {
				return
			}
		}
	}()
	return s
}

func (s *stream) next() (item, bool) {
	for len(s.cur) == 0 {
		b, ok := <-s.batches
		if !ok {
			return item{}, false
		}
		s.cur = b
	}
	it := s.cur[0]
	s.cur[0] = item{}
	s.cur = s.cur[1:]
	return it, true
}

// ready is next's item when the walk has handed it over already, without
// waiting for the walk; false when it has not.
func (s *stream) ready() (item, bool) {
	if len(s.cur) == 0 {
		select {
		case b, ok := <-s.batches:
			if !ok {
				return item{}, false
			}
			s.cur = b
		default:
			return item{}, false
		}
	}
	return s.next()
}

// stop ends the walk early (the batch returned before taking every item)
// and waits for it.
func (s *stream) stop() {
	select {
	case <-s.quit:
	default:
		close(s.quit)
	}
	<-s.done
}

// counts are the items walked and this shard's, once the walk is over.
func (s *stream) counts() (total, mine int) {
	<-s.done
	return s.total, s.mine
}
