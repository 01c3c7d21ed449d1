// Package fileio moves bytes between the filesystem and memory the way a
// careful Unix tool does: inputs are mapped read-only (or read, for pipes),
// outputs are written to a temporary file beside the target and renamed
// into place only when complete. It knows nothing of tensor formats.
package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Input is the whole content of one input, mapped or read.
type Input struct {
	Name string // as the user wrote it; "-" is standard input
	Data []byte
	Info os.FileInfo // nil for standard input
	// File stays open for positioned reads: streaming a big file through
	// reused buffers is faster than touching its mapping (see
	// docs/performance.md). The mapping costs nothing until it is read.
	// Nil for a small file Open read whole: Data is all of it, and the
	// descriptor is closed at once (openSmall).
	File   *os.File
	unmap  func() error
	Mapped bool
	pooled bool // Data is a GetBuffer buffer
	// Base is where Data starts in File: 0, or the offset of a standard
	// input redirected from a file (`< f` after something read part of it).
	Base int64
	// mapping is the whole mapped file (Data is mapping[Base:]); dropped
	// how much of it Drop has let go.
	mapping []byte
	dropped int
	// arrival: an object still being downloaded into File
	// (OpenArriving, object_input.go).
	arrival *arrival
}

// MapScratch maps the first size bytes of a scratch file of the run's
// own for reading (its pages belong to the page cache, not to this
// process's anonymous memory); unmap lets them go.
func MapScratch(f *os.File, size int64) (data []byte, unmap func() error, err error) {
	if size == 0 {
		return []byte{}, func() error { return nil }, nil
	}
	return mapReadOnly(f, size)
}

// Drop says that the bytes of Data before upTo will not be read again:
// the pages of a mapped input that hold them leave this process's memory
// (the page cache keeps them), so a mapping read front to back holds a
// window, not the whole file. Nothing for an input that was read.
func (in *Input) Drop(upTo int64) {
	if !in.Mapped {
		return
	}
	end := int(in.Base+upTo) &^ (pageSize - 1)
	if end > in.dropped && end <= len(in.mapping) {
		dropPages(in.mapping[in.dropped:end])
		in.dropped = end
	}
}

var pageSize = os.Getpagesize()

// Close releases the mapping and the file.
func (in *Input) Close() error {
	in.stopArrival()
	var err error
	if in.pooled {
		in.pooled = false
		PutBuffer(in.Data)
		in.Data = nil
	}
	if in.unmap != nil {
		u := in.unmap
		in.unmap = nil
		err = u()
	}
	if in.File != nil {
		in.File.Close()
		in.File = nil
	}
	return err
}

// readSmall reads a file of size bytes whole into a buffer from
// GetBuffer: one read where io.ReadAll made several and grew its slice.
// A file that grew since its size was taken is read to its end anyway.
func readSmall(f io.Reader, size int) ([]byte, error) {
	b := GetBuffer(size + 1) // one more byte: the end of file is seen by the same read
	// One read: a short read of a regular file is its end.
	n, err := f.Read(b)
	switch {
	case err == io.EOF || err == nil && n <= size:
		return b[:n], nil // the usual case: the whole file
	case err != nil:
		PutBuffer(b)
		return nil, err
	}
	// Longer than its size said: it grew while being opened.
	rest, err := io.ReadAll(f)
	if err != nil {
		PutBuffer(b)
		return nil, err
	}
	grown := GetBuffer(len(b) + len(rest))
	copy(grown[copy(grown, b):], rest)
	PutBuffer(b)
	return grown, nil
}

// smallFile is the size under which a regular file is read, not mapped.
const smallFile = 1 << 20

// Open maps a regular file read-only, or reads a pipe, a device or standard
// input ("-") to its end. The file is opened O_RDONLY and mapped PROT_READ,
// so nothing this process does can modify it.
func Open(name string, stdin io.Reader) (*Input, error) {
	if name == "-" {
		if f, fi, base, ok := stdinFile(stdin); ok {
			return openFile(name, f, fi, base)
		}
		b, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("reading standard input: %w", err)
		}
		return &Input{Name: name, Data: b}, nil
	}
	if p := PlaceOf(name); p != nil {
		return openObject(p, name, true)
	}
	in, f, err := openSmall(name)
	if err != nil {
		return nil, describeOpenError(err)
	}
	if in != nil {
		return in, nil
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, ErrDirectory
	}
	return openFile(name, f, fi, 0)
}

// ErrDirectory is Open's error for a directory: the caller may read it
// as a store (a format that is a directory) instead.
var ErrDirectory = errors.New("is a directory, not a tensor file")

// openFile reads or maps the open file f from byte base on (0 but for a
// standard input redirected from a file at an offset).
func openFile(name string, f *os.File, fi os.FileInfo, base int64) (*Input, error) {
	in := &Input{Name: name, Info: fi, Base: base}
	if fi.Mode().IsRegular() {
		in.File = f
		size := fi.Size() - base
		if size <= 0 {
			return in, nil
		}
		if size < smallFile {
			// Mapping a small file costs more than reading it (measured in
			// a batch of 10,000 files of 12 KiB: 2.6 s read, 4.3 s mapped).
			// It is read once, at its size, into a reused buffer.
			if base != 0 {
				if _, err := f.Seek(base, io.SeekStart); err != nil {
					f.Close()
					return nil, err
				}
			}
			b, err := readSmall(f, int(size))
			if err != nil {
				f.Close()
				return nil, err
			}
			in.Data, in.pooled = b, true
			return in, nil
		}
		SpareP() // a large input: its chunks go to several goroutines
		data, unmap, err := mapReadOnly(f, fi.Size())
		if err == nil {
			in.Data, in.unmap, in.Mapped, in.mapping = data[base:], unmap, true, data
			return in, nil
		}
		// Some filesystems cannot map; reading is always possible.
		in.File = nil
		if _, err := f.Seek(base, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, err
	}
	in.Data = b
	return in, nil
}

func describeOpenError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(err, os.ErrNotExist):
			return errors.New("no such file")
		case errors.Is(err, os.ErrPermission):
			return errors.New("permission denied")
		}
		return pe.Err
	}
	return err
}
