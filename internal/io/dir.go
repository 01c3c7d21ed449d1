package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is a local directory, or a prefix of a place (dir_place.go), read
// as a store of objects by key (a slash-separated path under it), for a
// format that is a directory (package format's Store). Keys never leave
// the directory.
type Dir struct {
	name   string     // as the user wrote it
	remote StorePlace // a prefix of a place; nil for a local directory
	url    string     // the prefix, with its final "/"
}

// OpenDir gives the store of a local directory or of a prefix of a
// place (s3://B/P/), or ok false when name is not one (a file, standard
// input, an object's URL, nothing there).
func OpenDir(name string) (d *Dir, ok bool) {
	if IsObject(name) {
		return openPlaceDir(name)
	}
	if name == "-" {
		return nil, false
	}
	fi, err := os.Stat(name)
	if err != nil || !fi.IsDir() {
		return nil, false
	}
	return &Dir{name: name}, true
}

// Name is the directory as the user named it.
func (d *Dir) Name() string { return d.name }

// path is a key's file, refusing keys that would leave the directory.
func (d *Dir) path(key string) (string, error) {
	clean := path.Clean("/" + key)
	if key == "" || clean != "/"+strings.TrimSuffix(key, "/") || strings.Contains(key, "\\") {
		return "", fmt.Errorf("key %q is not a path inside the store", key)
	}
	return filepath.Join(d.name, filepath.FromSlash(clean[1:])), nil
}

// Read returns a whole object: the bytes its file holds when opened.
func (d *Dir) Read(key string) ([]byte, error) {
	return d.ReadBounded(key, maxObject)
}

// open opens key's file and gives its size, if it is a regular file
// (links followed). A file that is not (a device: /dev/zero has no end;
// a FIFO, whose open waits for a writer) is not an object, and is not
// opened.
func (d *Dir) open(key string) (*os.File, int64, error) {
	p, err := d.openable(key)
	if err != nil {
		return nil, 0, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, 0, keyError(key, err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = regularObject(key, fi) // what was opened, not what was looked at
	} else {
		err = keyError(key, err)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// openable is key's file, if it is a regular file (links followed).
func (d *Dir) openable(key string) (string, error) {
	p, err := d.path(key)
	if err != nil {
		return "", err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return "", keyError(key, err)
	}
	return p, regularObject(key, fi)
}

// regularObject refuses a directory or a special file as an object.
func regularObject(key string, fi os.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("%s is a directory, not an object", key)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file (%s), not an object", key, fi.Mode().Type())
	}
	return nil
}

// ReadRange returns n bytes at off (off < 0: the last -off bytes).
func (d *Dir) ReadRange(key string, off, n int64) ([]byte, error) {
	return d.readRange(key, off, n, nil)
}

// readRange is ReadRange into alloc(n) (nil: a new slice).
func (d *Dir) readRange(key string, off, n int64, alloc func(n int) []byte) ([]byte, error) {
	if d.remote != nil {
		return d.readRangeRemote(key, off, n, alloc)
	}
	f, size, err := d.open(key)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if off < 0 {
		off, n = size+off, -off
	}
	if off < 0 || n < 0 || off > size || n > size-off {
		return nil, fmt.Errorf("%d bytes at %d lie past the object's end (%d bytes)", n, max(off, 0), size)
	}
	b := allocOr(alloc, n)
	if _, err := f.ReadAt(b, off); err != nil && !(errors.Is(err, io.EOF) && n == 0) {
		return nil, keyError(key, err)
	}
	return b, nil
}

// Size is an object's size.
func (d *Dir) Size(key string) (int64, error) {
	if d.remote != nil {
		return d.sizeRemote(key)
	}
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return 0, keyError(key, err)
	}
	if err := regularObject(key, fi); err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

// List names the entries directly under dir, sorted; directories (and
// links to them) end in "/".
func (d *Dir) List(dir string) ([]string, error) {
	if d.remote != nil {
		return d.listRemote(dir)
	}
	p := d.name
	if dir != "" {
		var err error
		if p, err = d.path(dir); err != nil {
			return nil, err
		}
	}
	des, err := os.ReadDir(p)
	if err != nil {
		return nil, keyError(dir, err)
	}
	var names []string
	for _, e := range des {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		} else if e.Type()&os.ModeSymlink != 0 {
			if fi, err := os.Stat(filepath.Join(p, n)); err == nil && fi.IsDir() {
				n += "/"
			}
		}
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// keyError says what went wrong with a key, keeping fs.ErrNotExist for
// the caller to test.
func keyError(key string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return &os.PathError{Op: "read", Path: key, Err: pe.Err}
	}
	return err
}

// ReadBoundedInto is ReadBounded into a buffer from get, given the
// object's size: a reader that decodes the bytes at once hands the
// buffer back to a pool (GetBuffer's), and a chunk's stored bytes then
// never reach the Go heap, whose collector would count them live while
// it marks and pace itself by them. On an error after get, the buffer
// comes back with it, to be handed back. errors.ErrUnsupported for a
// place's object: those are read into the GET body pool
// (ReadBoundedPooled).
func (d *Dir) ReadBoundedInto(key string, limit int64, get func(n int) []byte) (b []byte, err error) {
	err = d.withObject(key, func(f *os.File, size int64) error {
		if size > limit {
			return fmt.Errorf("%s holds %d bytes, more than it can (at most %d): not read", key, size, limit)
		}
		b = get(int(size))[:size]
		_, err := io.ReadFull(f, b)
		return err
	})
	return b, err
}

// ReadRangeInto is ReadRange's n bytes at off (off ≥ 0) into a buffer
// from get, for the same reason as ReadBoundedInto, and with the same
// buffer on an error; errors.ErrUnsupported for a place's object, before
// get is called (ReadRangePooled reads those).
func (d *Dir) ReadRangeInto(key string, off, n int64, get func(n int) []byte) (b []byte, err error) {
	err = d.withObject(key, func(f *os.File, size int64) error {
		if off < 0 || n < 0 || off > size || n > size-off {
			return fmt.Errorf("%d bytes at %d lie past the object's end (%d bytes)", n, max(off, 0), size)
		}
		b = get(int(n))[:n]
		_, err := f.ReadAt(b, off)
		if errors.Is(err, io.EOF) && n == 0 {
			return nil
		}
		return err
	})
	return b, err
}

// withObject calls read with key's file open and its size; an error of
// reading the file names the key.
func (d *Dir) withObject(key string, read func(f *os.File, size int64) error) error {
	if d.remote != nil {
		return errors.ErrUnsupported
	}
	f, size, err := d.open(key)
	if err != nil {
		return err
	}
	defer f.Close()
	return keyError(key, read(f, size))
}
