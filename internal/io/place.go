package fileio

import (
	"context"
	"errors"
	"io"
	"iter"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// A Place is where bytes live besides local files and standard input
// and output: an object store, named by URLs of one scheme
// (s3://BUCKET/KEY). A package registers one in its init (Register);
// the rest of the program reaches it only through this package and the
// walk, which ask it for what follows. Every name given to it is of its
// scheme.
//
// Objects are one more source and sink: an input is downloaded into an
// unnamed scratch file (Scratch) and mapped like any file, so every
// format and the streamed path read it unchanged, and its bytes are
// page cache, not this process's memory; a streamed job reads it while
// it arrives (OpenArriving). An output is written like a file, by
// position (object_output.go), and each of its parts is sent once all
// its bytes are in while the rest is still computed (Writer); the
// object appears at Commit. Abort, a failed upload or a signal leaves no
// object and no upload behind.
type Place interface {
	// Parse checks the form of name and says whether the form alone
	// names a directory (a prefix: s3://B/P/ or s3://B).
	Parse(name string) (dir bool, err error)
	// Ready says whether the place can be used at all (its configuration
	// read, its credentials found): if not, every name fails alike.
	Ready() error
	// ReadFirst reads the start of the object name into p (all of p, or
	// the whole object if shorter): how many bytes, and the object's
	// size. An empty p asks for the size alone.
	ReadFirst(name string, p []byte) (n int, size int64, err error)
	// Download writes bytes [from, size) of the object name into f at
	// their own offsets, asking for them front to back, and tells
	// arrived of each range of f written, as it is written; ctx's end
	// stops it.
	Download(ctx context.Context, name string, f *os.File, from, size int64, arrived func(off, n int64)) error
	// Writer starts the object name, written by position or in order:
	// each part goes out once all its bytes are written, and the object
	// appears whole at Commit, or never. Bytes it does not hold in
	// memory go through the empty scratch file scratch makes, which the
	// writer closes.
	Writer(name string, scratch func() (*os.File, error)) ObjectWriter
	// AbortAll withdraws every upload in flight and refuses new ones (a
	// signal arrived; the process exits next).
	AbortAll()
	// Exists says whether the object name is there: a missing one is
	// false, any other failure an error.
	Exists(name string) (bool, error)
	// IsDir says whether name is walked like a directory: by its form,
	// or because no object has that name but some are below it.
	IsDir(name string) bool
	// List yields every object below the directory name (whatever Parse
	// said), by Rel, their path below it with '/', in byte order, as the
	// server sends them: a page at a time, never the whole listing held.
	// An error ends it.
	List(name string) iter.Seq2[Entry, error]
}

// An ObjectWriter takes an object's bytes by position (WriteAt, from
// several goroutines; ranges written once) or in order (Write), sending
// each part once it is complete while later ones are still being
// produced, and makes the object at Commit; Abort, or a failed Commit,
// leaves neither an object nor an upload.
type ObjectWriter interface {
	Write(p []byte) (int, error)
	WriteAt(p []byte, off int64) (int, error)
	ReadAt(p []byte, off int64) (int, error)
	// Reserve sizes the object; bytes not written are zeros.
	Reserve(size int64) error
	// File is the object's scratch file, sized to at least size, to be
	// written through a mapping: every part is then sent at Commit.
	File(size int64) (*os.File, error)
	// Size is the object's size: its furthest byte written or reserved.
	Size() int64
	Commit() error
	Abort()
}

// ObjectOptions are the run's choices for every place: set from the
// command line before the first object is named.
var ObjectOptions struct {
	// Anonymous: requests are sent unsigned (--no-sign-request).
	Anonymous bool
	// Transfers is how many files a batch that reads or writes objects
	// keeps in flight (--io-jobs), apart from -j's CPU threads: while
	// some are computed, the others download or upload.
	Transfers int
}

// Entry is an object of a listing: its name (a URL of the place), its
// path relative to the listed directory, its size.
type Entry struct {
	Name, Rel string
	Size      int64
}

var places []struct {
	scheme string // "s3://"
	place  Place
}

// Register makes names starting with scheme ("s3://", in any case)
// mean p. Called from an init.
func Register(scheme string, p Place) {
	places = append(places, struct {
		scheme string
		place  Place
	}{scheme, p})
}

// PlaceOf is the place that name is a URL of, or nil (a local path or
// "-").
func PlaceOf(name string) Place {
	for _, e := range places {
		if len(name) >= len(e.scheme) && strings.EqualFold(name[:len(e.scheme)], e.scheme) {
			return e.place
		}
	}
	return nil
}

// IsObject says whether a path names an object or a prefix of a
// registered place (s3://…).
func IsObject(name string) bool { return PlaceOf(name) != nil }

// JoinURL names the object at rel (slash-separated) below the directory
// dir of a place (with or without its final "/").
func JoinURL(dir, rel string) string {
	return strings.TrimSuffix(dir, "/") + "/" + strings.TrimPrefix(rel, "/")
}

// DirURL is the directory dir of a place as the prefix of the names its
// listing gives: its scheme in lower case, a final "/".
func DirURL(dir string) string {
	if i := strings.Index(dir, "://"); i >= 0 {
		dir = strings.ToLower(dir[:i]) + dir[i:]
	}
	return JoinURL(dir, "")
}

// smallObject: an object up to this size is read into memory (a reused
// buffer, like a small file) by its first GET; a larger one goes to a
// scratch file.
const smallObject = 8 << 20

// openObject reads the object name: its first smallObject bytes and its
// size with one ranged GET (no HEAD first); the rest, if any, by
// parallel ranged GETs, front to back, into a scratch file mapped like a
// file. With wait, it returns once every byte is in; without
// (OpenArriving), at once, the download going on while the input is
// read through Arriving.
func openObject(p Place, name string, wait bool) (*Input, error) {
	if err := checkObject(p, name, "is a prefix (a directory of objects), not a tensor object"); err != nil {
		return nil, unlistable(p, name, err)
	}
	first := GetBuffer(smallObject)
	n, size, err := p.ReadFirst(name, first)
	if err != nil {
		PutBuffer(first)
		return nil, err
	}
	if int64(n) == size {
		return &Input{Name: name, Data: first[:n], pooled: true}, nil
	}
	f, err := Scratch()
	if err != nil {
		err = &ScratchError{Op: "making", Object: name, Err: err}
	} else {
		// Blocks first: a full TMPDIR fails before the transfer.
		err = fallocate(f, 0, size)
		if err == nil {
			_, err = f.WriteAt(first[:n], 0)
		}
		if err != nil {
			err = &ScratchError{Op: "writing", Object: name, Err: err}
		}
	}
	PutBuffer(first)
	if err != nil {
		if f != nil {
			f.Close()
		}
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	a := newArrival(cancel)
	a.arrived(0, int64(n))
	go func() { a.end(p.Download(ctx, name, f, int64(n), size, a.arrived)) }()
	in := &Input{Name: name, File: f, arrival: a}
	if !wait {
		SpareP() // a large input: its chunks go to several goroutines
		data, unmap, merr := mapReadOnly(f, size)
		if merr == nil {
			in.Data, in.unmap, in.Mapped, in.mapping = data, unmap, true, data
			in.Info, err = f.Stat()
			if err != nil {
				in.Close()
				return nil, err
			}
			return in, nil
		}
		// No mapping here: read whole once it is in, as a file is.
	}
	if err := in.Wait(); err != nil {
		in.Close()
		return nil, err
	}
	in.arrival = nil
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return openFile(name, f, fi, 0)
}

// Head is the start of an input and its size, without reading the rest:
// for a file a positioned read, for an object one ranged GET of at most
// n bytes (info reads an npy header this way).
func Head(name string, n int64) (head []byte, size int64, err error) {
	p := PlaceOf(name)
	if p == nil {
		f, err := openRead(name)
		if err != nil {
			return nil, 0, err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return nil, 0, err
		}
		if !fi.Mode().IsRegular() {
			return nil, 0, errors.New("not a regular file")
		}
		head = make([]byte, min(fi.Size(), n))
		if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
			return nil, 0, err
		}
		return head, fi.Size(), nil
	}
	if _, err := p.Parse(name); err != nil {
		return nil, 0, err
	}
	if err := Ready(p); err != nil {
		return nil, 0, err
	}
	head = make([]byte, n)
	got, size, err := p.ReadFirst(name, head)
	if err != nil {
		return nil, 0, err
	}
	return head[:got], size, nil
}

// createObject starts an output that is sent as the object name while it
// is written: by position, as a file (object_output.go), its parts going
// out as they are completed; Commit makes the object.
func createObject(p Place, name string) (*Output, error) {
	if err := checkObject(p, name, "names a prefix (ends in /), not an object"); err != nil {
		return nil, err
	}
	uploadsMu.Lock()
	uploading[p] = true
	uploadsMu.Unlock()
	HandleSignals() // a signal aborts the upload in flight
	scratch := func() (*os.File, error) {
		f, err := Scratch()
		if err != nil {
			return nil, &ScratchError{Op: "making", Object: name, Err: err}
		}
		return f, nil
	}
	return &Output{Name: name, obj: p.Writer(name, scratch)}, nil
}

// checkObject says whether name is well formed and names an object, not
// a prefix (else the error prefixErr), and whether p can be used.
func checkObject(p Place, name, prefixErr string) error {
	dir, err := p.Parse(name)
	if err == nil && dir {
		err = errors.New(prefixErr)
	}
	if err == nil {
		err = Ready(p)
	}
	return err
}

// uploading: the places this run has begun outputs to, whose uploads a
// signal aborts.
var (
	uploadsMu sync.Mutex
	uploading = map[Place]bool{}
)

// objectsUsed: this run talks to a server. With the signal handler
// notified of SIGPIPE (for standard output), Go delivers it for a write
// to any descriptor, a server's broken connection too; the handler then
// ignores it, and the write's EPIPE is reported as the request's error.
var objectsUsed atomic.Bool

// reportsOnPipes: this run writes a report (compare's, a batch's --json
// records), and a report that cannot be written is an error, exit 2
// (SPEC): a closed pipe must come back as the write's EPIPE, not end the
// run by SIGPIPE (141) as a filter's output does.
var reportsOnPipes atomic.Bool

// PipeErrorsAreErrors makes a closed pipe an error of the write (EPIPE)
// for the rest of the run, instead of the death by SIGPIPE a Unix
// filter's output takes: for a run whose output is a report.
func PipeErrorsAreErrors() {
	reportsOnPipes.Store(true)
	HandleSignals()
}

// Ready is p.Ready for a run that is about to talk to p's server.
func Ready(p Place) error {
	objectsUsed.Store(true)
	return p.Ready()
}

// abortUploads is called by the signal handler before the process exits:
// AbortAll of every place an output was begun in. (uploadsMu is kept:
// the process exits next.)
func abortUploads() {
	uploadsMu.Lock()
	for p := range uploading {
		p.AbortAll()
	}
}

// uploaded are the sizes of the objects this run has uploaded, until
// UploadedSize is asked for them.
var uploaded sync.Map // name -> int64

// UploadedSize is the size of the object name as this run uploaded it,
// once (the entry is then forgotten): a batch's record says how much it
// wrote without asking the server again (a HEAD after every PUT).
func UploadedSize(name string) (int64, bool) {
	v, ok := uploaded.LoadAndDelete(name)
	if !ok {
		return 0, false
	}
	return v.(int64), true
}

// ObjectExists says whether an object is there (a HEAD request), for
// --skip-existing.
func ObjectExists(name string) (bool, error) {
	p := PlaceOf(name)
	if _, err := p.Parse(name); err != nil {
		return false, err
	}
	if err := Ready(p); err != nil {
		return false, err
	}
	return p.Exists(name)
}

// ObjectIsDir says whether an s3:// path is walked like a directory: a
// prefix (s3://B/P/, s3://B), or s3://B/P where no object P exists but
// keys under P/ do.
func ObjectIsDir(name string) bool {
	p := PlaceOf(name)
	dir, err := p.Parse(name)
	if err != nil {
		return false
	}
	if dir {
		return true
	}
	if Ready(p) != nil {
		return false
	}
	return p.IsDir(name)
}
