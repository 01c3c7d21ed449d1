package fileio

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// DirOutput is a directory being written as a store of objects (a Zarr
// store): built in a staging directory beside the target, it appears
// whole at Commit, which puts it in the target's place; a directory
// already there is replaced only then. Abort, a failure, or a signal
// (HandleSignals) leaves nothing but the target as it was. A store under
// a prefix of a place is written otherwise, as a place allows
// (placeOutput).
type DirOutput struct {
	name    string       // the target
	remote  *placeOutput // a prefix of a place
	staging string
	mu      sync.Mutex
	made    map[string]bool // directories made in staging
	written int64           // the bytes of the objects Put
	open    map[*dirObject]bool
}

// stagingDirs are the staging directories in flight, removed by the
// signal handler.
var stagingDirs sync.Map

// CreateDir starts a store at name. claims says whether a directory
// already there is a store of the output's format, which Commit then
// replaces; any other thing there is refused now, before any work.
func CreateDir(name string, claims func(*Dir) bool) (*DirOutput, error) {
	return CreateStore(name, claims, nil)
}

// CreateStore is CreateDir where name may be a prefix of a place
// (s3://B/P): last says which objects make the store visible to a reader
// (its metadata), which are then put after every other.
func CreateStore(name string, claims func(*Dir) bool, last func(key string) bool) (*DirOutput, error) {
	if IsObject(name) {
		return createPlaceDir(name, claims, last)
	}
	if name == "-" || name == "" {
		return nil, errors.New("a store is a directory: give an output path (-o DIR)")
	}
	if fi, err := os.Stat(name); err == nil {
		if !fi.IsDir() {
			return nil, errors.New("exists and is not a directory: a store is not written over a file")
		}
		if d, _ := OpenDir(name); claims == nil || !claims(d) {
			return nil, errors.New("is a directory that is not a store of the output's format: not replaced")
		}
	}
	parent := filepath.Dir(name)
	HandleSignals()
	createMu.RLock()
	staging, err := os.MkdirTemp(parent, fmt.Sprintf(TempPattern, filepath.Base(name)))
	if err == nil {
		stagingDirs.Store(staging, true)
	}
	createMu.RUnlock()
	if err != nil {
		return nil, describeOpenError(err)
	}
	return &DirOutput{name: name, staging: staging, made: map[string]bool{"": true}}, nil
}

// Put writes an object; keys never leave the store.
func (o *DirOutput) Put(key string, data []byte) error {
	if o.remote != nil {
		return o.remote.Put(key, data)
	}
	f, err := o.create(key)
	if err != nil {
		return err
	}
	o.mu.Lock()
	o.written += int64(len(data))
	o.mu.Unlock()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// create makes key's file in the staging directory, with createMu held
// shared, as every temporary output is made: a signal's handler, which
// removes the staging directory, then waits for the file to be made
// and no new one (its directories made again) is begun after it.
func (o *DirOutput) create(key string) (*os.File, error) {
	createMu.RLock()
	defer createMu.RUnlock()
	p, err := o.objectPath(key)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
}

// objectPath is where key lies in the staging directory, its directory
// made.
func (o *DirOutput) objectPath(key string) (string, error) {
	p, err := (&Dir{name: o.staging}).path(key)
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(filepath.ToSlash(key))
	if dir == "." {
		dir = ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.made[dir] {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", err
		}
		o.made[dir] = true
	}
	return p, nil
}

// Stream starts the object key, written in order and complete at Close,
// so that an object too big to hold (a Zarr shard) is written as it is
// made: a file in the staging directory, which goes with it when the
// store is aborted unclosed; on a place, a multipart upload sent as its
// parts fill (placeOutput.Stream), aborted with the store.
func (o *DirOutput) Stream(key string) (io.WriteCloser, error) {
	if o.remote != nil {
		return o.remote.Stream(key)
	}
	f, err := o.create(key)
	if err != nil {
		return nil, err
	}
	w := &dirObject{o: o, f: f}
	o.mu.Lock()
	if o.open == nil {
		o.open = map[*dirObject]bool{}
	}
	o.open[w] = true
	o.mu.Unlock()
	return w, nil
}

// dirObject is an object of a store being written to its file.
type dirObject struct {
	o *DirOutput
	f *os.File
}

func (w *dirObject) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.o.mu.Lock()
	w.o.written += int64(n)
	w.o.mu.Unlock()
	return n, err
}

// Close closes the file, once: a store aborted closes its objects left
// open (a failed run's shards), whose writers may close them again.
func (w *dirObject) Close() error {
	w.o.mu.Lock()
	open := w.o.open[w]
	delete(w.o.open, w)
	w.o.mu.Unlock()
	if !open {
		return nil
	}
	return w.f.Close()
}

// Written is the bytes of every object Put so far: the store's size.
func (o *DirOutput) Written() int64 {
	if o.remote != nil {
		o.remote.mu.Lock()
		defer o.remote.mu.Unlock()
		return o.remote.written
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.written
}

// Commit puts the store in the target's place: a store already there is
// moved aside, the new one renamed in, the old one removed.
func (o *DirOutput) Commit() error {
	if o.remote != nil {
		if err := o.remote.commit(); err != nil {
			return err
		}
		uploaded.Store(o.name, o.Written()) // a batch's record of its size, as for an object
		return nil
	}
	defer stagingDirs.Delete(o.staging)
	o.mu.Lock()
	unclosed := len(o.open)
	o.mu.Unlock()
	if unclosed > 0 {
		// As on a place: a shard still being written is not renamed in.
		o.Abort()
		return fmt.Errorf("internal error: %d streamed objects not closed at the store's commit", unclosed)
	}
	if err := os.Chmod(o.staging, 0o755); err != nil {
		o.Abort()
		return err
	}
	// The renames with createMu held shared: a signal's handler, which
	// removes the staging directory, never does so while it is being
	// moved to the target, which would then hold part of it.
	createMu.RLock()
	old, err := o.swapIn()
	createMu.RUnlock()
	if err != nil {
		return err
	}
	if old != "" {
		return os.RemoveAll(old)
	}
	return nil
}

// swapIn renames the staging directory to the target, the store there
// moved aside first to old; Abort on a failure.
func (o *DirOutput) swapIn() (old string, err error) {
	if _, err := os.Lstat(o.name); err == nil {
		old = o.staging + ".old-" + strconv.Itoa(os.Getpid())
		if err := os.Rename(o.name, old); err != nil {
			o.Abort()
			return "", fmt.Errorf("moving the store already there aside: %w", err)
		}
	}
	if err := os.Rename(o.staging, o.name); err != nil {
		if old != "" {
			os.Rename(old, o.name)
		}
		o.Abort()
		return "", err
	}
	return old, nil
}

// Abort removes the staging directory.
func (o *DirOutput) Abort() {
	if o.remote != nil {
		o.remote.abort()
		return
	}
	// The objects still open (a failed array's shards) are closed: a
	// batch goes on to its next inputs, which need the descriptors.
	o.mu.Lock()
	open := slices.Collect(maps.Keys(o.open))
	o.mu.Unlock()
	for _, w := range open {
		w.Close()
	}
	os.RemoveAll(o.staging)
	stagingDirs.Delete(o.staging)
}

// Abandon is Abort for a run that failed with err: err, saying so where
// the store that was at a place's prefix is deleted by then.
func (o *DirOutput) Abandon(err error) error {
	o.Abort()
	if o.remote != nil {
		return o.remote.gone(err)
	}
	return err
}

// removeStaging removes every staging directory in flight, and the
// objects put of every store being written to a place whose metadata
// is not yet on its way (the signal handler's).
func removeStaging() {
	stagingDirs.Range(func(k, _ any) bool {
		os.RemoveAll(k.(string))
		return true
	})
	remoteOutputs.Range(func(k, _ any) bool {
		k.(*placeOutput).interrupt()
		return true
	})
}
