package fileio

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
)

// TempPattern names temporary outputs: ".NAME.depthspace-RANDOM.tmp" beside
// the target. A leftover one (the process was killed with SIGKILL) says
// what it is and is safe to delete.
const TempPattern = ".%s.depthspace-*.tmp"

// Output is a result being written. For a file it is a temporary file in the
// target's directory, renamed over the target by Commit; until then the
// target is untouched. For standard output it is a plain stream.
type Output struct {
	Name   string // as the user wrote it; "-" is standard output
	w      io.Writer
	f      *os.File
	tmp    string
	unmap  func() error
	closer io.Closer // a device or FIFO opened as a stream
	done   bool
	// A standard output that is a regular file is written in place, by
	// position, from base (its offset when the run started); see
	// stdout_linux.go.
	stdout *stdoutFile
	// expect is the size Expect reserved blocks for, past the end.
	expect int64
	// replacing: the target exists (a regular file), so the rename will
	// replace it.
	replacing bool
	// anon: f has no name yet (createAnon); Commit links it as the
	// target, with no temporary name.
	anon bool
	// lazy: the unnamed file is open as fd, and f is not made yet
	// (file): a small output is written (pwrite), linked and closed
	// through the descriptor alone. os.NewFile asks the descriptor's
	// flags with fcntl and sets a finalizer, for every output of a batch
	// of thousands. Read and changed under wmu, or where no other
	// goroutine writes (Commit, Abort).
	lazy bool
	fd   int
	// obj: the target is an object (s3://…), written by position or in
	// order into obj, whose Commit makes it (object_output.go).
	obj ObjectWriter
	// pos is where the next Write goes in f, size the end of the
	// furthest byte written or the size the file was given: the file's
	// size, known without asking the system (Size).
	pos, size int64
	// wmu lets one write into f at a time. The kernel takes the file's
	// lock for each buffered write anyway (ext4, tmpfs), and a writer
	// that finds it taken spins on it: under this VM's hypervisor, with
	// the holder's virtual CPU descheduled, two workers writing one 1 GiB
	// file took 2-3.3 s of wall and 3-4 s of system time, against
	// 0.33-0.53 s waiting here (the other worker computes meanwhile).
	wmu sync.Mutex
}

// errNoAnon: the system makes no unnamed files (createAnon).
var errNoAnon = errors.New("no unnamed files here")

// anonRefused: a file made by createAnon could not be linked here
// (neither linkat AT_EMPTY_PATH nor /proc); later outputs use named
// temporary files from the start.
var anonRefused atomic.Bool

// procLink: linkat with AT_EMPTY_PATH was refused (it needs
// CAP_DAC_READ_SEARCH on many kernels); link through /proc/self/fd.
var procLink atomic.Bool

var filePerm = 0o666 &^ umask()

// smallReserve: outputs under this size that replace nothing are not
// reserved (Reserve).
const smallReserve = 1 << 20

// Create starts an output. "-" writes to stdout.
func Create(name string, stdout io.Writer) (*Output, error) {
	return CreateFor(name, stdout, Target{})
}

// ErrIsInput refuses an output that is the job's input file.
var ErrIsInput = errors.New("is the input file (or a link to it); write the result to another path")

// Target is what a job knows of its output path before creating it.
type Target struct {
	// Input is the job's input file, which the output must not be (nor a
	// link to it); nil for none.
	Input os.FileInfo
	// Fresh: the output's directory was made by this run, so nothing is
	// there yet and the path is not looked at (a batch into a new
	// --out-dir). A file that appears meanwhile is replaced.
	Fresh bool
}

// CreateFor is Create for the output of a job that knows t of it: an
// output that is t.Input, or a link to it, is refused with ErrIsInput.
// The target is looked at once for that and for what Create needs.
func CreateFor(name string, stdout io.Writer, t Target) (*Output, error) {
	if p := PlaceOf(name); p != nil {
		return createObject(p, name) // no input to compare with: objects are never mapped inputs
	}
	if name == "-" {
		if o, err := openStdoutFile(stdout); o != nil || err != nil {
			return o, err
		}
		return &Output{Name: name, w: stdout}, nil
	}
	dir := filepath.Dir(name)
	if t.Fresh {
		if fd, err := createAnon(dir); err == nil {
			return &Output{Name: name, fd: fd, lazy: true, anon: true}, nil
		}
	}
	input := t.Input
	replacing := false
	if fi, err := os.Stat(name); err == nil {
		switch {
		case input != nil && SameFile(input, fi):
			return nil, ErrIsInput
		case fi.IsDir():
			return nil, errors.New("output is a directory")
		case !fi.Mode().IsRegular() || isDescriptorPath(name):
			// A device, FIFO or socket (-o /dev/null, -o >(gzip)): write to
			// it as a stream. Renaming a temporary file over it would
			// replace the device itself.
			f, err := os.OpenFile(name, os.O_WRONLY|os.O_TRUNC, 0)
			if err != nil {
				return nil, unwrapPath(err)
			}
			return &Output{Name: name, w: f, closer: f}, nil
		}
		replacing = true
	}
	if fd, err := createAnon(dir); err == nil {
		return &Output{Name: name, fd: fd, lazy: true, anon: true, replacing: replacing}, nil
	}
	// No O_TMPFILE here (another system, an old kernel, a filesystem
	// without it), or the directory is not usable: the named file below
	// works or says why.
	HandleSignals() // before the first temporary file exists
	f, err := createTracked(dir, fmt.Sprintf(TempPattern, filepath.Base(name)))
	if err != nil {
		// The directory is looked at only when the file cannot be made.
		if fi, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("output directory %s does not exist", dir)
		} else if !fi.IsDir() {
			return nil, fmt.Errorf("output directory %s is not a directory", dir)
		}
		return nil, fmt.Errorf("cannot create a file in %s: %w", dir, unwrapPath(err))
	}
	return &Output{Name: name, w: f, f: f, tmp: f.Name(), replacing: replacing}, nil
}

// ScratchOutput is an output onto a scratch file (Scratch) of the run's
// own, written by position; it is never committed, and closing f is the
// caller's.
func ScratchOutput(f *os.File) *Output {
	return &Output{Name: f.Name(), w: f, f: f, done: true}
}

// isDescriptorPath says whether name leads to an open file descriptor
// (/dev/stdout, /dev/fd/N, /proc/self/fd/N): when standard output is
// redirected to a file these resolve to a regular file, but they are not a
// place to create files, and renaming over the link would replace it.
func isDescriptorPath(name string) bool {
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		return false
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return false
	}
	for _, p := range []string{abs, real} {
		if systemPath(p) {
			return true
		}
	}
	// The link's own target, before /proc's magic links resolve to the file.
	if t, err := os.Readlink(name); err == nil && systemPath(t) {
		return true
	}
	return false
}

// systemPath: under /dev or /proc, but not /dev/shm, where tmpfs holds
// ordinary files (treated as a device, an existing output there was
// written in place, not replaced atomically).
func systemPath(p string) bool {
	return (strings.HasPrefix(p, "/dev/") && !strings.HasPrefix(p, "/dev/shm/")) || strings.HasPrefix(p, "/proc/")
}

// StreamFile is the open file behind a stream output (standard output a
// pipe), for sendfile; nil for file outputs and other writers.
func (o *Output) StreamFile() *os.File {
	if o.IsFile() || o.stdout != nil {
		return nil
	}
	f, _ := o.w.(*os.File)
	return f
}

// IsFile says whether the output is a regular file (so it can be mapped).
func (o *Output) IsFile() bool { return o.anon || o.f != nil || o.obj != nil }

// file is the output's *os.File, made from the unnamed file's descriptor
// the first time something needs one (lazy).
func (o *Output) file() *os.File {
	o.wmu.Lock()
	defer o.wmu.Unlock()
	if o.lazy {
		o.f = os.NewFile(uintptr(o.fd), filepath.Dir(o.Name)+"/(new)")
		o.w, o.lazy = o.f, false
	}
	return o.f
}

// descriptor is the file output's descriptor.
func (o *Output) descriptor() int {
	if o.lazy {
		return o.fd
	}
	return int(o.f.Fd())
}

// closeFile closes the file output's descriptor.
func (o *Output) closeFile() error {
	if o.lazy {
		o.lazy = false
		return closeFD(o.fd)
	}
	return o.f.Close()
}

func (o *Output) Write(p []byte) (int, error) {
	if o.obj != nil {
		return o.objectWrite(p)
	}
	if o.stdout != nil {
		n, err := o.WriteAt(p, o.stdout.pos)
		o.stdout.pos += int64(n)
		return n, err
	}
	if o.lazy {
		o.file()
	}
	n, err := o.w.Write(p)
	if err != nil {
		err = unwrapPath(err)
	}
	if o.f != nil {
		o.pos += int64(n)
		o.size = max(o.size, o.pos)
	}
	return n, err
}

// WriteAt writes at an offset of a file output (pwrite). Several goroutines
// may write disjoint ranges at once; their writes go in one at a time
// (wmu says why).
func (o *Output) WriteAt(p []byte, off int64) (int, error) {
	if !o.IsFile() {
		return 0, errors.New("standard output cannot be written at an offset")
	}
	if o.obj != nil {
		return o.objectWriteAt(p, off)
	}
	if o.stdout != nil {
		o.stdout.wrote(off + int64(len(p)))
		off += o.stdout.base
	}
	o.wmu.Lock()
	defer o.wmu.Unlock()
	var n int
	var err error
	if o.lazy {
		n, err = pwrite(o.fd, p, off)
	} else {
		n, err = o.f.WriteAt(p, off)
	}
	if err != nil {
		err = unwrapPath(err)
	}
	o.size = max(o.size, off+int64(n))
	return n, err
}

// Readable says whether ReadAt works: a file output, unless it is a
// standard output this process may only write.
func (o *Output) Readable() bool {
	return o.IsFile() && (o.stdout == nil || !o.stdout.unreadable)
}

// ReadAt reads back what a file output holds at an offset (as WriteAt
// counts them).
func (o *Output) ReadAt(p []byte, off int64) (int, error) {
	if !o.IsFile() {
		return 0, errors.New("standard output cannot be read back")
	}
	if o.obj != nil {
		return o.obj.ReadAt(p, off)
	}
	if o.stdout != nil {
		off += o.stdout.base
	}
	return o.file().ReadAt(p, off)
}

// Reserve sizes a file output and reserves its blocks, so that a full disk
// is reported before any work is done. A small new file is not: its bytes
// come in one write, which finds a full disk as soon, and on tmpfs the
// reservation zeroes the pages first (a batch of 5,000 files of 48 KiB
// spent 13% of its time there). A small file that replaces another is:
// ext4 flushes a file with delayed allocation when it is renamed over
// another (skipping it for a 384-byte output made the run slower, perf
// stat -r 80, three pairs: 10.5 -> 11.4 ms).
func (o *Output) Reserve(size int64) error {
	if o.obj != nil {
		return o.objectErr(o.obj.Reserve(size))
	}
	if !o.IsFile() || (o.stdout == nil && !o.replacing && size < smallReserve) {
		return nil
	}
	f := o.file()
	if o.stdout != nil {
		// Reserved, not truncated: bytes past our end are not ours.
		return unwrapPath(fallocate(f, o.stdout.base, size))
	}
	if err := fallocate(f, 0, size); err != nil {
		return unwrapPath(err)
	}
	if err := f.Truncate(size); err != nil {
		return unwrapPath(err)
	}
	o.size = size
	return nil
}

// Expect reserves the blocks of the size a file output is likely to
// reach, without sizing it (written in order, it ends where writing
// ends): ext4 then has no delayed allocation to flush when the finished
// file is renamed over an existing one, which cost 19 ms for a 48 MiB tar
// shard. Commit frees the blocks that were not used. A hint only: no
// error, and nothing for outputs that are not new files.
func (o *Output) Expect(size int64) {
	if !o.IsFile() || o.stdout != nil || o.obj != nil || size <= 0 {
		return
	}
	if fallocateKeepSize(o.file(), size) == nil {
		o.expect = size
	}
}

// OnceIn says that bytes [from, to) of the output are each written once,
// by position, and never read back: an object output may then free
// the parts of that range it has sent from its scratch file (which would
// otherwise be dirty page cache the size of the output). A hint only.
func (o *Output) OnceIn(from, to int64) {
	if w, ok := o.obj.(interface{ OnceIn(from, to int64) }); ok {
		w.OnceIn(from, to)
	}
}

// Map sizes the file to size bytes and maps it for writing, so a kernel can
// write its result straight into the page cache. Only for files.
func (o *Output) Map(size int64) ([]byte, error) {
	if !o.IsFile() {
		return nil, errors.New("standard output cannot be mapped")
	}
	if o.obj != nil {
		return o.objectMap(size)
	}
	o.file()
	base := int64(0)
	if o.stdout != nil {
		base = o.stdout.base
		o.stdout.wrote(size)
	} else if err := o.f.Truncate(size); err != nil {
		return nil, unwrapPath(err)
	}
	o.size = max(o.size, size)
	if err := fallocate(o.f, base, size); err != nil {
		// A full disk shows up here rather than as SIGBUS on a mapped page.
		return nil, unwrapPath(err)
	}
	if size == 0 {
		return nil, nil
	}
	b, unmap, err := mapReadWrite(o.f, base, size)
	if err != nil {
		return nil, err
	}
	o.unmap = unmap
	return b, nil
}

// Commit makes the output final: unmaps, closes and renames it over the
// target. Outputs are not fsynced: like cp and numpy.save, depthspace
// promises atomicity against crashes of the process, not power loss (see
// docs/reliability.md).
func (o *Output) Commit() error {
	if o.done {
		return nil
	}
	o.done = true
	if o.obj != nil {
		return o.objectCommit()
	}
	if !o.IsFile() {
		// A stream: every byte was written as it came.
		if o.closer != nil {
			return unwrapPath(o.closer.Close())
		}
		return nil
	}
	var err error
	if o.unmap != nil {
		err = o.unmap()
		o.unmap = nil
	}
	if o.stdout != nil {
		return o.stdout.commit(o.f, err)
	}
	if o.expect > 0 && err == nil {
		// Blocks reserved past the end by Expect and not used: freed
		// (a truncation to the file's own size drops them).
		if fi, serr := o.f.Stat(); serr == nil && fi.Size() < o.expect {
			err = o.f.Truncate(fi.Size())
			o.size = fi.Size()
		}
	}
	if o.anon {
		switch {
		case err != nil:
		case o.replacing:
			err = o.replaceAnon()
		default:
			err = o.linkAnon()
		}
		if cerr := o.closeFile(); err == nil {
			err = cerr
		}
		return unwrapPath(err) // on failure nothing has a name: nothing to remove
	}
	if cerr := o.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename(o.tmp, o.Name)
	}
	if err != nil {
		untrackRemove(o.tmp)
		return unwrapPath(err)
	}
	untrack(o.tmp)
	return nil
}

// Size is the size of a file output once committed: the bytes written
// into it (0 for a stream, and for a standard output that is a file).
func (o *Output) Size() int64 {
	if o.obj != nil {
		return o.obj.Size()
	}
	if o.stdout != nil {
		return 0
	}
	return o.size
}

// Abort discards the temporary file; the target is left as it was.
func (o *Output) Abort() {
	if o.done {
		return
	}
	o.done = true
	if o.obj != nil {
		o.objectAbort()
		return
	}
	if o.unmap != nil {
		_ = o.unmap()
	}
	switch {
	case o.stdout != nil:
		o.stdout.abort(o.f)
	case o.anon:
		o.closeFile() // unnamed: the system frees it
	case o.f != nil:
		o.f.Close()
		untrackRemove(o.tmp)
	}
	if o.closer != nil {
		o.closer.Close()
	}
}

// linkAnon names the finished unnamed output as the target. A target
// made since Create looked (EEXIST) is replaced as any other
// (replaceAnon); where unnamed files cannot be linked at all, the bytes
// are copied into a named temporary file once, and later outputs do
// without them.
func (o *Output) linkAnon() error {
	err := linkAnonFunc(o.descriptor(), o.Name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, syscall.EEXIST):
		return o.replaceAnon()
	case anonUnlinkable(err):
		anonRefused.Store(true)
		return o.copyAnon()
	}
	return err
}

func anonUnlinkable(err error) bool {
	return errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, errNoAnon)
}

// replaceAnon puts the finished unnamed output in place of the existing
// target: linked under a temporary name beside it, then renamed over it.
// That name exists for the two system calls. With the signal handler
// installed (a batch, or an earlier temporary file) it is recorded for
// it as any temporary file. Without (a run with one output: installing
// the handler starts a thread, a fifth of a short run's time), SIGINT,
// SIGTERM and SIGHUP are ignored from those two calls on, so that they
// cannot leave the name behind, and the handler is installed on another
// goroutine, off the run's path: a run with more to do is interrupted as
// any other once it is in (a signal in between is lost, as if it had
// come a moment later).
func (o *Output) replaceAnon() error {
	err := o.replaceAnonWindow()
	var le *linkError
	if errors.As(err, &le) && anonUnlinkable(le.err) {
		anonRefused.Store(true)
		return o.copyAnon()
	}
	return err
}

// linkError is linkTracked's failure, told from the rename's: only a file
// that cannot be linked is copied instead (a rename refused, say over
// another user's file in a sticky directory, would be refused again).
type linkError struct{ err error }

func (e *linkError) Error() string { return e.err.Error() }
func (e *linkError) Unwrap() error { return e.err }

func (o *Output) replaceAnonWindow() error {
	if !handling.Load() { // once installed, the handler stays: no lock
		windowMu.Lock()
		defer windowMu.Unlock()
		if !handling.Load() {
			signal.Ignore(windowSignals...)
			defer func() { go HandleSignals() }()
		}
	}
	tmp, err := linkTracked(o.descriptor(), o.Name)
	if err != nil {
		return &linkError{err}
	}
	if err := renameFunc(tmp, o.Name); err != nil {
		untrackRemove(tmp)
		return err
	}
	untrack(tmp)
	return nil
}

// renameFunc is rename; tests make it fail.
var renameFunc = rename

var (
	windowSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP}
	// windowMu: a replacement's window (replaceAnon) and the handler's
	// installation do not overlap: the window's Ignore would undo the
	// handler's Notify.
	windowMu sync.Mutex
	handling atomic.Bool // the handler is installed
)

// randomName is a temporary file's random part.
func randomName() uint32 { return rand.Uint32() }

// linkAnonFunc is linkAnon; tests make it fail.
var linkAnonFunc = linkAnon

// linkTracked links the unnamed file open as fd under a new temporary
// name beside target, recorded for the signal handler as createTracked
// does.
func linkTracked(fd int, target string) (string, error) {
	createMu.RLock()
	defer createMu.RUnlock()
	for try := 0; ; try++ {
		tmp := filepath.Join(filepath.Dir(target), strings.Replace(fmt.Sprintf(TempPattern, filepath.Base(target)), "*", strconv.FormatUint(uint64(randomName()), 10), 1))
		err := linkAnonFunc(fd, tmp)
		if errors.Is(err, syscall.EEXIST) && try < 10000 {
			continue
		}
		if err != nil {
			return "", err
		}
		track(tmp)
		return tmp, nil
	}
}

// copyAnon copies the unnamed output into a named temporary file renamed
// over the target: the way out where it cannot be linked.
func (o *Output) copyAnon() error {
	HandleSignals()
	dst, err := createTracked(filepath.Dir(o.Name), fmt.Sprintf(TempPattern, filepath.Base(o.Name)))
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, io.NewSectionReader(o.file(), 0, 1<<62))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = rename(dst.Name(), o.Name)
	}
	if err != nil {
		untrackRemove(dst.Name())
		return err
	}
	untrack(dst.Name())
	return nil
}

func unwrapPath(err error) error {
	if err == nil {
		return nil // errors.As below would allocate its targets all the same
	}
	if _, ok := err.(*ScratchError); ok {
		return err // it names its scratch file's directory and object itself
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// Temporary files in flight, removed if the process is interrupted.
// createMu is held shared while a temporary file is made and recorded,
// and by the signal handler exclusively, until exit.
var (
	createMu sync.RWMutex
	tempMu   sync.Mutex
	temps    = map[string]bool{}
)

// createTracked creates a temporary output and records it under the
// signal handler's lock (shared): a signal that arrives in between would
// otherwise find a file on disk that it does not know of, and leave it
// behind. The handler takes the lock exclusively and keeps it until
// exit, so the file is either recorded before it looks, or never
// created. (Held exclusively by every creation, it made a batch of 5,000
// small files 7% slower: the workers' creations waited for each other.)
func createTracked(dir, pattern string) (*os.File, error) {
	createMu.RLock() // shared: files of several workers are made at once
	defer createMu.RUnlock()
	f, err := createTemp(dir, pattern)
	if err == nil {
		track(f.Name())
	}
	return f, err
}

func track(name string) {
	tempMu.Lock()
	temps[name] = true
	tempMu.Unlock()
}

func untrack(name string) {
	tempMu.Lock()
	delete(temps, name)
	tempMu.Unlock()
}

// restores undo what a run wrote to a standard output that is a regular
// file, if a signal ends the run (stdout_linux.go).
var restores = map[*stdoutFile]func(){}

func trackRestore(s *stdoutFile, f func()) {
	tempMu.Lock()
	restores[s] = f
	tempMu.Unlock()
}

func untrackRestore(s *stdoutFile) {
	tempMu.Lock()
	delete(restores, s)
	tempMu.Unlock()
}

func untrackRemove(name string) {
	os.Remove(name)
	untrack(name)
}

// HandleSignals removes every temporary output when SIGINT, SIGTERM or
// SIGHUP arrives, then exits with the status a shell expects (128 + signal).
// Targets are never touched: they are replaced only by a rename. It starts
// with the first temporary file: a run that creates none (stdout, info,
// compare) skips its cost at start-up and keeps Go's default on a broken
// pipe, which is to die of SIGPIPE quietly, as a Unix filter should.
func HandleSignals() {
	signalsOnce.Do(handleSignals)
}

var signalsOnce sync.Once

func handleSignals() {
	windowMu.Lock()
	defer windowMu.Unlock()
	defer handling.Store(true)
	ch := make(chan os.Signal, 4) // room for a second signal sent at once after the first
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	go func() {
		sig := <-ch
		for sig == syscall.SIGPIPE && (objectsUsed.Load() || reportsOnPipes.Load()) {
			sig = <-ch // a server's connection or a report's pipe broke (place.go): an error, not an exit
		}
		code := 128
		if s, ok := sig.(syscall.Signal); ok {
			code += int(s)
		}
		go func() {
			// A second signal ends the run at once, with what the first
			// was deleting (a store's objects on a place, whose requests
			// under way are waited for: objects.md) left as it is.
			for s := range ch {
				if s != syscall.SIGPIPE {
					os.Exit(code)
				}
			}
		}()
		createMu.Lock() // held until exit: no temp file in the making, and no new one
		tempMu.Lock()
		for name := range temps {
			os.Remove(name)
		}
		removeStaging() // stores being built (dir_write.go)
		for _, restore := range restores {
			restore()
		}
		abortUploads() // multipart uploads in flight (place.go)
		os.Exit(code)
	}()
}
