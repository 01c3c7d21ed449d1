package fileio

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A store of objects under a prefix of a place (a Zarr store at
// s3://B/P/) is the same Dir as a local directory: its keys are object
// names below the prefix. A place that can hold one adds StorePlace to
// its Place; the format reading the store never knows which it has.

// StorePlace is what a Place adds to hold a store of many small objects
// under a prefix, each read or written whole (or a range of it) in one
// request and held in memory. Names are URLs of the place.
type StorePlace interface {
	// GetObject reads an object whole if it holds at most limit bytes
	// (a larger one is an error naming its size, not read); an error
	// that is fs.ErrNotExist when there is none.
	GetObject(ctx context.Context, name string, limit int64) ([]byte, error)
	// GetObjectRange reads n bytes at off (off < 0: the last -off
	// bytes); fewer than asked is an error; n == 0 checks that the
	// object is there.
	GetObjectRange(ctx context.Context, name string, off, n int64) ([]byte, error)
	// ObjectSize is an object's size (fs.ErrNotExist when none).
	ObjectSize(ctx context.Context, name string) (int64, error)
	// ListChildren names the entries directly under the prefix name,
	// sorted; a prefix below it ends in "/".
	ListChildren(ctx context.Context, name string) ([]string, error)
	// PutObject makes an object of data in one request.
	PutObject(ctx context.Context, name string, data []byte) error
	// DeleteObject removes an object; one not there is no error.
	DeleteObject(ctx context.Context, name string) error
}

// StorePlaceInto is what a StorePlace adds to read an object's body into
// memory its caller gives: alloc(n), n the body's length as the server
// sends it, so that a reader of many MiB-sized chunks reuses its buffers
// instead of faulting in and clearing fresh memory at every GET. A GET
// asked again (its body broke off) calls alloc again and drops the
// buffer it had: alloc's buffers are left to the collector.
type StorePlaceInto interface {
	GetObjectInto(ctx context.Context, name string, limit int64, alloc func(n int) []byte) ([]byte, error)
	GetObjectRangeInto(ctx context.Context, name string, off, n int64, alloc func(n int) []byte) ([]byte, error)
}

// openPlaceDir is the store under the prefix name (s3://B/P/, s3://B,
// or s3://B/P where no object P is but keys under P/ are), if its place
// can hold one. A name that MayBeStore says is a file's (x.npy) is taken
// for an object without asking the server.
func openPlaceDir(name string) (*Dir, bool) {
	p := PlaceOf(name)
	sp, ok := p.(StorePlace)
	if !ok {
		return nil, false
	}
	dir, err := p.Parse(name)
	if err != nil || Ready(p) != nil {
		return nil, false
	}
	if !dir && (MayBeStore != nil && !MayBeStore(name) || !p.IsDir(name)) {
		return nil, false
	}
	return &Dir{name: name, remote: sp, url: DirURL(name)}, true
}

// unlistable is err, the error of a prefix named as a tensor input,
// unless the prefix cannot be listed at all (its bucket is missing, the
// credentials are refused): then the server's answer, the one line a
// name without the final "/" gets from its GET. A prefix form is opened
// as a store first (openPlaceDir), whose metadata HEADs fail alike and
// only say it is none.
func unlistable(p Place, name string, err error) error {
	if dir, perr := p.Parse(name); perr != nil || !dir || Ready(p) != nil {
		return err
	}
	for _, lerr := range p.List(name) {
		if lerr != nil {
			return lerr
		}
		break
	}
	return err
}

// MayBeStore says whether an object's name may name a store: false for a
// name with the extension of a format that is a file. Set by the walk,
// which knows the formats; nil, every name may.
var MayBeStore func(name string) bool

// remoteKey is key's object name, refusing keys that would not name an
// object below the prefix.
func (d *Dir) remoteKey(key string) (string, error) {
	if key == "" || strings.HasPrefix(key, "/") || strings.Contains(key, "//") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("key %q is not a path inside the store", key)
	}
	for _, seg := range strings.Split(strings.TrimSuffix(key, "/"), "/") {
		if seg == "." || seg == ".." {
			return "", fmt.Errorf("key %q is not a path inside the store", key)
		}
	}
	return d.url + key, nil
}

// readError keeps fs.ErrNotExist for the caller to test, naming the
// key as a missing file's error does; the reader names the key of any
// other failure.
func readError(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return &os.PathError{Op: "read", Path: key, Err: fs.ErrNotExist}
	}
	return err
}

// readRemote and readRangeRemote read into alloc(n) where the place
// can (StorePlaceInto) and alloc is not nil.
func (d *Dir) readRemote(key string, limit int64, alloc func(n int) []byte) ([]byte, error) {
	name, err := d.remoteKey(key)
	if err != nil {
		return nil, err
	}
	var b []byte
	if into, ok := d.remote.(StorePlaceInto); ok && alloc != nil {
		b, err = into.GetObjectInto(context.Background(), name, limit, alloc)
	} else {
		b, err = d.remote.GetObject(context.Background(), name, limit)
	}
	return b, readError(key, err)
}

func (d *Dir) readRangeRemote(key string, off, n int64, alloc func(n int) []byte) ([]byte, error) {
	name, err := d.remoteKey(key)
	if err != nil {
		return nil, err
	}
	var b []byte
	if into, ok := d.remote.(StorePlaceInto); ok && alloc != nil {
		b, err = into.GetObjectRangeInto(context.Background(), name, off, n, alloc)
	} else {
		b, err = d.remote.GetObjectRange(context.Background(), name, off, n)
	}
	return b, readError(key, err)
}

// ReadRangePooled is ReadRange with the bytes in a buffer of the body
// pool: give it back with ReleaseBody once done with it.
func (d *Dir) ReadRangePooled(key string, off, n int64) ([]byte, error) {
	return d.readRange(key, off, n, bodyBuffer)
}

// ReadBoundedPooled is ReadBounded with the bytes in a buffer of the body
// pool, as ReadRangePooled.
func (d *Dir) ReadBoundedPooled(key string, limit int64) ([]byte, error) {
	return d.readBounded(key, limit, bodyBuffer)
}

// ReadRangePooled is st.ReadRange, into the body pool where st is a Dir.
func ReadRangePooled(st interface {
	ReadRange(key string, off, n int64) ([]byte, error)
}, key string, off, n int64) ([]byte, error) {
	if d, ok := st.(*Dir); ok {
		return d.ReadRangePooled(key, off, n)
	}
	return st.ReadRange(key, off, n)
}

// ReadRangeArriving is ReadRangePooled calling arriving, once, when the
// answer begins to arrive (a place's GET into buffers: its length is
// known) and before its buffer is taken: a caller that bounds the bytes
// it holds waits there, and an answer not yet read waits in the socket,
// not in the process. Where the bytes do not come into the body pool
// (another place, another store), arriving is called before the read.
// Give the bytes back with ReleaseBody.
func ReadRangeArriving(st interface {
	ReadRange(key string, off, n int64) ([]byte, error)
}, key string, off, n int64, arriving func()) ([]byte, error) {
	if d, ok := st.(*Dir); ok && d.remote != nil {
		if _, into := d.remote.(StorePlaceInto); into {
			var once sync.Once
			return d.readRange(key, off, n, func(n int) []byte {
				once.Do(arriving) // a GET asked again takes a new body, not new room
				return bodyBuffer(n)
			})
		}
	}
	arriving()
	return ReadRangePooled(st, key, off, n)
}

// ReleaseBody gives b, read from st by ReadRangePooled or a Dir's
// ReadBoundedPooled, back to the body pool, where st is a Dir whose reads
// come from it; b must not be used after. A buffer not given back is only
// left to the collector.
func ReleaseBody(st any, b []byte) {
	if d, ok := st.(*Dir); ok && d.readsOwnBuffers() {
		putBody(b)
	}
}

// readsOwnBuffers says whether the Dir's reads give buffers of their own:
// a local directory's and a StorePlaceInto's do; another place may hand
// out memory it keeps (an object held in memory), never to be reused.
func (d *Dir) readsOwnBuffers() bool {
	if d.remote == nil {
		return true
	}
	_, ok := d.remote.(StorePlaceInto)
	return ok
}

// The body pool: a few buffers given back, maxFreeBodies bytes at most
// in all (the rest left to the collector: memory held here is memory the
// process keeps), each taken again by a read that fills more than half
// of it. Bodies under minPooledBody are allocated for each read, their
// faults and clearing cheap.
const (
	minPooledBody = 64 << 10
	maxFreeBodies = 16 << 20
)

var bodyFree struct {
	sync.Mutex
	bufs  [][]byte
	bytes int
}

// bodyBuffer is a buffer of length n: the smallest free one that fits,
// else a new one with an eighth more room, so that a neighbour's body a
// little larger fits it later.
func bodyBuffer(n int) []byte {
	if n < minPooledBody {
		return make([]byte, n)
	}
	bodyFree.Lock()
	b := takeSmallest(&bodyFree.bufs, func(c int) bool { return c >= n && c/2 < n })
	bodyFree.bytes -= cap(b)
	bodyFree.Unlock()
	if b != nil {
		return b[:n]
	}
	return make([]byte, n, n+n/8)
}

// putBody keeps b for a later read, the oldest kept let go past
// maxFreeBodies.
func putBody(b []byte) {
	c := cap(b)
	if c < minPooledBody || c > maxFreeBodies {
		return
	}
	bodyFree.Lock()
	defer bodyFree.Unlock()
	for bodyFree.bytes+c > maxFreeBodies {
		bodyFree.bytes -= cap(bodyFree.bufs[0])
		bodyFree.bufs[0] = nil
		bodyFree.bufs = bodyFree.bufs[1:]
	}
	bodyFree.bufs = append(bodyFree.bufs, b[:c])
	bodyFree.bytes += c
}

func (d *Dir) sizeRemote(key string) (int64, error) {
	name, err := d.remoteKey(key)
	if err != nil {
		return 0, err
	}
	n, err := d.remote.ObjectSize(context.Background(), name)
	return n, readError(key, err)
}

func (d *Dir) listRemote(dir string) ([]string, error) {
	name := d.url
	if dir != "" {
		var err error
		if name, err = d.remoteKey(strings.TrimSuffix(dir, "/") + "/"); err != nil {
			return nil, err
		}
	}
	names, err := d.remote.ListChildren(context.Background(), name)
	return names, readError(dir, err)
}

// WalkObjects calls fn with every object below the directory dir ("" is
// the root; else it ends in "/"), its key from the store's root and its
// size, from a place's listing: one request per page of keys (1,000 on
// S3), where asking each key's size is a round trip apiece. A local
// directory gives errors.ErrUnsupported: a stat is no round trip, and
// its callers ask each key as before.
func (d *Dir) WalkObjects(dir string, fn func(key string, size int64) error) error {
	if d.remote == nil {
		return errors.ErrUnsupported
	}
	name := d.url
	if dir != "" {
		var err error
		if name, err = d.remoteKey(dir); err != nil {
			return err
		}
	}
	for e, err := range PlaceOf(d.url).List(name) {
		if err != nil {
			return readError(dir, err)
		}
		if err := fn(dir+e.Rel, e.Size); err != nil {
			return err
		}
	}
	return nil
}

// ReadBounded reads the object key whole if it holds at most limit
// bytes, else an error naming its size: for an object of a place, one
// request (no HEAD before the GET).
func (d *Dir) ReadBounded(key string, limit int64) ([]byte, error) {
	return d.readBounded(key, limit, nil)
}

// readBounded is ReadBounded into alloc(n) (nil: a new slice).
func (d *Dir) readBounded(key string, limit int64, alloc func(n int) []byte) ([]byte, error) {
	if d.remote != nil {
		return d.readRemote(key, limit, alloc)
	}
	f, size, err := d.open(key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > limit {
		return nil, fmt.Errorf("%s holds %d bytes, more than it can (at most %d): not read", key, size, limit)
	}
	b := allocOr(alloc, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, keyError(key, err)
	}
	return b, nil
}

// allocOr is alloc(n), or a new slice when alloc is nil.
func allocOr(alloc func(n int) []byte, n int64) []byte {
	if alloc == nil {
		return make([]byte, n)
	}
	return alloc(int(n))[:n]
}

// InFlight is how many objects a reader of the store should ask for at
// once: for a place, the run's --io-jobs, so that round trips overlap;
// 0 for a local directory (as many as there are threads).
func (d *Dir) InFlight() int {
	if d.remote == nil {
		return 0
	}
	return max(ObjectOptions.Transfers, 1)
}

// placeOutput is a store being written under a prefix of a place. A
// place has no rename, so the store cannot be built aside and moved in:
// WritingMarker is put first, then its data objects as they come (up to
// --io-jobs at once), and the objects that make it a store (its
// metadata: last says which) are held until Commit and put then,
// deepest first and the root's last, so that a reader never finds an
// array whose chunks are still coming. Then the marker, and the objects
// of a store that was there before and that the new one does not have,
// are deleted. Abort, a failure or a signal before the root's metadata
// is put deletes every object this run put, the marker last.
type placeOutput struct {
	sp     StorePlace
	url    string // the prefix, with its final "/"
	last   func(key string) bool
	p      Place
	ctx    context.Context
	cancel context.CancelFunc

	mu        sync.Mutex
	cond      *sync.Cond
	inFlight  int   // requests under way: puts, the marker's, the old metadata's deletion
	bytes     int64 // their bytes
	err       error // the first failure
	put       []string
	held      map[string][]byte
	streams   map[*placeStream]bool // objects streamed, not yet closed
	closing   map[*placeStream]bool // those closed, being completed
	written   int64
	replaces  bool // objects were under the prefix at the start
	hadMarker bool // among them WritingMarker: an interrupted run's leftovers
	marked    bool // this run has sent WritingMarker: it may be on the server
	markedOK  bool // and the server has stored it
	starting  bool // the marker or clearOld under way: other puts wait
	cleared   bool // the old store's metadata is deleted: it is gone
	wasStore  bool // what was there is a store (else what a killed run left)
	done      bool // the root's metadata is put: the store is there

	aborting    sync.Once
	interrupted atomic.Bool // a signal: the process exits when abort is done
}

// putBudget bounds the bytes of data objects copied and under way at
// once: with 16 MiB chunks, four of them; with small chunks, --io-jobs.
const putBudget = 64 << 20

// abortGrace is how long a failed or interrupted run waits for its puts
// under way to be answered before cancelling them: at most putBudget's
// bytes, sent already or going.
var abortGrace = 30 * time.Second

// remoteOutputs are the stores being written to places, whose objects a
// signal deletes (removeStaging).
var remoteOutputs sync.Map

// createPlaceDir starts a store under the prefix name: an empty one, one
// holding a store that claims takes for the output's format (replaced),
// or one holding WritingMarker (a stopped run's leftovers, replaced);
// any other prefix holding objects is refused, naming one of them.
func createPlaceDir(name string, claims func(*Dir) bool, last func(string) bool) (*DirOutput, error) {
	p := PlaceOf(name)
	sp, ok := p.(StorePlace)
	if !ok {
		return nil, errors.New("this place cannot hold a store")
	}
	if _, err := p.Parse(name); err != nil {
		return nil, err
	}
	if err := Ready(p); err != nil {
		return nil, err
	}
	url := DirURL(name)
	if dir, _ := p.Parse(name); !dir {
		if ok, err := p.Exists(name); err != nil {
			return nil, err
		} else if ok {
			return nil, errors.New("is an object: a store is not written over one")
		}
	}
	// What is there: nothing, a store of the output's format (claims),
	// or what an interrupted run of ours left (its marker, which sorts
	// before every key a store holds but a few punctuation-led ones:
	// the listing stops at the first key past it). Anything else is
	// someone else's, and never written over.
	replaces, hadMarker := false, false
	var found string
	for e, err := range p.List(url) {
		if err != nil {
			return nil, err
		}
		if !replaces {
			replaces, found = true, e.Rel
		}
		if e.Rel >= WritingMarker {
			hadMarker = e.Rel == WritingMarker
			break
		}
	}
	wasStore := false
	if replaces {
		d := &Dir{name: url, remote: sp, url: url}
		wasStore = claims != nil && claims(d)
		if !wasStore && !hadMarker {
			return nil, fmt.Errorf("is a prefix holding objects that are not a store of the output's format (%q among them): not replaced", found)
		}
	}
	HandleSignals()
	ctx, cancel := context.WithCancel(context.Background())
	o := &placeOutput{sp: sp, url: url, last: last, p: p, ctx: ctx, cancel: cancel, held: map[string][]byte{}, streams: map[*placeStream]bool{}, closing: map[*placeStream]bool{}, replaces: replaces, wasStore: wasStore, hadMarker: hadMarker}
	o.cond = sync.NewCond(&o.mu)
	// Recorded with createMu held shared, as a local store's staging
	// directory: a signal's handler, which holds it from its start, then
	// either finds this store or keeps it from being made.
	createMu.RLock()
	remoteOutputs.Store(o, true)
	createMu.RUnlock()
	return &DirOutput{name: name, remote: o}, nil
}

// Put sends a data object, or holds a metadata object for Commit. The
// caller may reuse data once Put returns: it is copied.
func (o *placeOutput) Put(key string, data []byte) error {
	name, err := (&Dir{url: o.url}).remoteKey(key)
	if err != nil {
		return err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return o.err
	}
	o.written += int64(len(data))
	if o.last != nil && o.last(key) {
		o.held[key] = append([]byte{}, data...)
		return nil
	}
	// Copied once there is budget for it: a Put waiting holds no copy.
	for o.err == nil && o.inFlight > 0 && (o.inFlight >= max(ObjectOptions.Transfers, 1) || o.bytes+int64(len(data)) > putBudget) {
		o.cond.Wait()
	}
	if o.err != nil {
		return o.err
	}
	if err := o.start(); err != nil {
		return err
	}
	b := append([]byte{}, data...)
	o.inFlight++
	o.bytes += int64(len(b))
	o.put = append(o.put, key) // before it is sent: an interrupted put is deleted too
	go func() {
		err := o.sp.PutObject(o.ctx, name, b)
		o.mu.Lock()
		if err != nil && o.err == nil {
			o.err = fmt.Errorf("%s: %w", key, err)
		}
		o.inFlight--
		o.bytes -= int64(len(b))
		o.cond.Broadcast()
		o.mu.Unlock()
	}()
	return nil
}

// Stream starts the data object key, written in order and sent in parts
// as they fill (the place's Writer: a multipart upload, through a scratch
// file past its first part), complete at Close: a shard too large to hold
// goes out as it is made. As Put: the marker first, the old store's
// metadata deleted, and the key recorded for deletion before a byte is
// sent; the store's abort, or a failure, aborts its upload. A metadata
// key says errors.ErrUnsupported: metadata is held for Commit (Put).
func (o *placeOutput) Stream(key string) (io.WriteCloser, error) {
	name, err := (&Dir{url: o.url}).remoteKey(key)
	if err != nil {
		return nil, err
	}
	if o.last != nil && o.last(key) {
		return nil, errors.ErrUnsupported
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.err != nil {
		return nil, o.err
	}
	if err := o.start(); err != nil {
		return nil, err
	}
	o.put = append(o.put, key)
	s := &placeStream{o: o, key: key, w: o.p.Writer(name, Scratch)}
	o.streams[s] = true
	return s, nil
}

// placeStream is an object of a store being streamed to a place.
type placeStream struct {
	o   *placeOutput
	key string
	w   ObjectWriter
}

// Write appends p; once the store is aborted, the writer's error (its
// upload is aborted, its context over).
func (s *placeStream) Write(p []byte) (int, error) {
	o := s.o
	o.mu.Lock()
	err := o.err
	o.mu.Unlock()
	if err != nil {
		// The store has failed: its other parts are not sent.
		return 0, err
	}
	n, err := s.w.Write(p)
	o.mu.Lock()
	o.written += int64(n)
	if err != nil && o.err == nil {
		o.err = fmt.Errorf("%s: %w", s.key, err)
	}
	o.mu.Unlock()
	return n, err
}

// Close completes the object in the background (its last parts sent,
// the upload completed), as Put sends: the shard writer goes on to the
// next shard meanwhile. It counts as a put under way, so that Commit
// waits for it and reports its failure, and an abort waits for it
// before deleting it; a store that has failed aborts the upload instead.
func (s *placeStream) Close() error {
	o := s.o
	o.mu.Lock()
	if !o.streams[s] {
		o.mu.Unlock()
		return fmt.Errorf("%s: closed after the store's output ended", s.key)
	}
	delete(o.streams, s)
	// As many completing at once as Put sends.
	for o.err == nil && o.inFlight > 0 && o.inFlight >= max(ObjectOptions.Transfers, 1) {
		o.cond.Wait()
	}
	if err := o.err; err != nil {
		o.mu.Unlock()
		s.w.Abort()
		return err
	}
	o.inFlight++
	o.closing[s] = true
	o.mu.Unlock()
	go func() {
		err := s.w.Commit()
		o.mu.Lock()
		if err != nil && o.err == nil {
			o.err = fmt.Errorf("%s: %w", s.key, err)
		}
		delete(o.closing, s)
		o.inFlight--
		o.cond.Broadcast()
		o.mu.Unlock()
	}()
	return nil
}

// cancelClosing ends the requests of the streamed objects being
// completed (their writers' own contexts, which o.cancel does not reach),
// where the writer can (the PartWriter's Cancel).
func (o *placeOutput) cancelClosing() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for s := range o.closing {
		if c, ok := s.w.(interface{ Cancel() }); ok {
			c.Cancel()
		}
	}
}

// abortStreams aborts the uploads of the objects streamed and not closed
// (o.err set: a Close from here on aborts its own).
func (o *placeOutput) abortStreams() {
	o.mu.Lock()
	open := make([]*placeStream, 0, len(o.streams))
	for s := range o.streams {
		open = append(open, s)
	}
	clear(o.streams)
	o.mu.Unlock()
	for _, s := range open {
		s.w.Abort() // after a Write under way, which it waits for
	}
}

// WritingMarker is the object a run writing a store to a place puts
// under its prefix before any other, and deletes once the store's root
// metadata is in (or once a failed run has deleted what it put): a
// prefix holding objects but no store's metadata is written over only
// where it holds this marker, which proves them the leftovers of a
// depthspace run that was stopped (SIGKILL deletes nothing) and not
// someone else's objects whose keys look like chunk keys (logs/1). No
// Zarr reader takes it for metadata or a chunk: its name is neither
// (.zarray, .zgroup, zarr.json; 0.1, c/0/1).
const WritingMarker = ".depthspace-writing"

// markerText is the marker's content, for whoever finds one: when and
// where the run that left it began.
func markerText() []byte {
	host, _ := os.Hostname()
	b, _ := json.Marshal(struct {
		Started string `json:"started"`
		Host    string `json:"host"`
		PID     int    `json:"pid"`
	}{time.Now().UTC().Format(time.RFC3339), host, os.Getpid()})
	return append(b, '\n')
}

// start puts WritingMarker and, for a store being replaced, deletes
// the old metadata (clearOld), once, before the run's first object: an
// object of the run's on the server before the marker would be
// unprovable leftovers if the run were killed then. o.mu is held, and
// let go while the requests are under way (counted in inFlight), so
// that an abort or a signal is never held up behind them.
func (o *placeOutput) start() error {
	for o.starting {
		o.cond.Wait()
	}
	if o.err != nil {
		return o.err
	}
	if o.markedOK && (!o.replaces || o.cleared) {
		return nil
	}
	o.starting, o.marked = true, true
	o.inFlight++
	o.mu.Unlock()
	err := o.sp.PutObject(o.ctx, o.url+WritingMarker, markerText())
	if err != nil {
		err = fmt.Errorf("%s (the mark of a store being written): %w", WritingMarker, err)
	} else if o.replaces {
		err = o.clearOld()
	}
	o.mu.Lock()
	o.starting = false
	o.inFlight--
	o.markedOK = err == nil
	if err != nil && o.err == nil {
		o.err = err
	}
	o.cond.Broadcast()
	return o.err
}

// clearOld deletes the metadata of the store being replaced before the
// first chunk is put: a new chunk overwrites the old one of its key (a
// place has no rename to stage them under), and a reader must not take
// new chunks for the old array. From here the old store is gone, so a
// failed run deletes the rest of it too and says so (gone). Called by
// start, o.mu not held.
func (o *placeOutput) clearOld() error {
	var meta []string
	for e, err := range o.p.List(o.url) {
		if err != nil {
			return fmt.Errorf("listing the store that was there: %w", err)
		}
		if o.last == nil || o.last(e.Rel) {
			meta = append(meta, e.Name)
		}
	}
	o.mu.Lock()
	o.cleared = true
	o.mu.Unlock()
	if err := deleteAll(o.ctx, o.sp, meta); err != nil {
		return fmt.Errorf("deleting the metadata of the store that was there: %w", err)
	}
	return nil
}

// gone is err, saying that the store which was at the prefix is
// deleted where the failed run had begun to replace it.
func (o *placeOutput) gone(err error) error {
	o.mu.Lock()
	cleared := o.cleared
	o.mu.Unlock()
	if !cleared || err == nil || !o.wasStore {
		return err
	}
	return fmt.Errorf("%w; the store that was at %s is deleted (a store on an object store is replaced in place)", err, o.url)
}

// wait waits for the puts under way; the first failure.
func (o *placeOutput) wait() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	for o.inFlight > 0 {
		o.cond.Wait()
	}
	return o.err
}

func (o *placeOutput) commit() error {
	defer remoteOutputs.Delete(o)
	o.mu.Lock()
	if n := len(o.streams); n > 0 && o.err == nil {
		o.err = fmt.Errorf("internal error: %d streamed objects not closed at the store's commit", n)
	}
	o.mu.Unlock()
	if err := o.wait(); err != nil {
		o.abort()
		return o.gone(err)
	}
	// The metadata, deepest first, the root's last: a group's members
	// before the group, an array's before nothing.
	keys := slices.SortedFunc(func(yield func(string) bool) {
		for k := range o.held {
			if !yield(k) {
				return
			}
		}
	}, func(a, b string) int {
		if c := cmp.Compare(strings.Count(b, "/"), strings.Count(a, "/")); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	o.mu.Lock()
	err := o.start() // a store of metadata alone is marked too
	o.mu.Unlock()
	if err != nil {
		o.abort()
		return o.gone(err)
	}
	for i, k := range keys {
		o.mu.Lock()
		if err := o.err; err != nil { // a put failed, or a signal's abort has begun
			o.mu.Unlock()
			// As every failure: the abort waits for the deletion, and
			// under a signal for the handler's exit (128+n), so that the
			// run neither exits 2 nor leaves objects mid-deletion.
			o.abort()
			return o.gone(err)
		}
		o.put = append(o.put, k)
		if i == len(keys)-1 {
			// From here on, a signal leaves the store: it may be there.
			o.done = true
		}
		o.inFlight++ // an abort waits for it, as for the chunks
		o.mu.Unlock()
		err := o.sp.PutObject(o.ctx, o.url+k, o.held[k])
		o.mu.Lock()
		o.inFlight--
		o.cond.Broadcast()
		if err != nil {
			o.done = false
		}
		o.mu.Unlock()
		if err != nil {
			o.abort()
			return o.gone(fmt.Errorf("%s: %w", k, err))
		}
	}
	if !o.replaces {
		if err := o.sp.DeleteObject(context.Background(), o.url+WritingMarker); err != nil {
			return fmt.Errorf("the store is written, but deleting its %s: %w", WritingMarker, err)
		}
		return nil
	}
	return o.deleteStale() // the marker too: this run did not put it as an object of the store
}

// deleteStale deletes the objects under the prefix that this run did
// not put: those of the store that was there before.
func (o *placeOutput) deleteStale() error {
	mine := make(map[string]bool, len(o.put))
	for _, k := range o.put {
		mine[o.url+k] = true
	}
	var stale []string
	for e, err := range o.p.List(o.url) {
		if err != nil {
			return fmt.Errorf("listing the objects of the store that was there, to delete them: %w", err)
		}
		if !mine[e.Name] {
			stale = append(stale, e.Name)
		}
	}
	if err := deleteAll(context.Background(), o.sp, stale); err != nil {
		return fmt.Errorf("deleting the objects of the store that was there: %w", err)
	}
	return nil
}

// abort stops the puts and deletes every object this run put (and the
// rest of a store being replaced, once clearOld has run), once: a
// second caller (the run's own Abort after a signal's) waits for the
// first. After a signal, the run's goroutines wait here for the
// handler's exit, so that the run ends as signalled, with every
// deletion done.
func (o *placeOutput) abort() {
	o.aborting.Do(o.deletePut)
	if o.interrupted.Load() {
		select {}
	}
}

func (o *placeOutput) deletePut() {
	o.mu.Lock()
	if o.err == nil {
		o.err = errors.New("the store's output was abandoned")
	}
	o.mu.Unlock()
	o.abortStreams()
	// The puts under way are let finish before their objects are
	// deleted, not cancelled: a request given up once its body is sent
	// may still be stored by the server after the cancelled call has
	// returned, and after its deletion, leaving a chunk behind. A server
	// that does not answer within abortGrace is given up on.
	finished := make(chan struct{})
	go func() { _ = o.wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(abortGrace):
	}
	o.cancel()
	o.cancelClosing()
	<-finished
	o.mu.Lock()
	names := make([]string, len(o.put))
	for i, k := range o.put {
		names[i] = o.url + k
	}
	o.put = nil
	cleared, marked := o.cleared, o.marked
	o.mu.Unlock()
	// The marker goes last, once everything else is deleted, and only
	// where no leftovers of an earlier run stay beside it: until then it
	// is what lets the next run write over them.
	marker := o.url + WritingMarker
	whole := true
	if cleared {
		// The old store's metadata is deleted: its chunks left are no
		// store, and go too.
		for e, err := range o.p.List(o.url) {
			if err != nil {
				whole = false
				break
			}
			if e.Name != marker {
				names = append(names, e.Name)
			}
		}
	}
	if deleteAll(context.Background(), o.sp, names) == nil && whole && marked && (cleared || !o.hadMarker) {
		_ = o.sp.DeleteObject(context.Background(), marker)
	}
	remoteOutputs.Delete(o)
}

// interrupt is abort for a signal: nothing once the root's metadata is
// on its way (the store may be complete).
func (o *placeOutput) interrupt() {
	o.mu.Lock()
	done := o.done
	o.mu.Unlock()
	if !done {
		o.interrupted.Store(true)
		o.aborting.Do(o.deletePut)
	}
}

// deleteAll deletes names, up to --io-jobs at once; the first failure.
func deleteAll(ctx context.Context, sp StorePlace, names []string) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		next int
		fail error
	)
	for range min(max(ObjectOptions.Transfers, 1), len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if next == len(names) {
					mu.Unlock()
					return
				}
				n := names[next]
				next++
				mu.Unlock()
				if err := sp.DeleteObject(ctx, n); err != nil {
					mu.Lock()
					fail = cmp.Or(fail, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	return fail
}

// maxObject bounds Read of a store's object where the caller gives no
// bound.
const maxObject = math.MaxInt64 - 1
