package fileio

import (
	"errors"
	"syscall"
)

// An object output (Output.obj) is written like a file: by position from
// several workers, or in order, read back, reserved, mapped; its
// ObjectWriter holds the bytes (in memory while small, else in a scratch
// file) and sends each part once it is complete. So a format's placed
// layout and the streamed path write an object as they write a file,
// and an input-ordered job, whose output fills in several places at
// once, uploads while it computes.

func (o *Output) objectWrite(p []byte) (int, error) {
	n, err := o.obj.Write(p)
	return n, o.objectErr(err)
}

func (o *Output) objectWriteAt(p []byte, off int64) (int, error) {
	n, err := o.obj.WriteAt(p, off)
	return n, o.objectErr(err)
}

// objectErr is a write's failure as the output's: the scratch file's
// (TMPDIR full) named as such, the server's as it is.
func (o *Output) objectErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.As(err, new(*ScratchError)) {
		return err // the scratch file could not be made
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		// Only the scratch file fills up: a server's refusal is no
		// errno of this machine's.
		return &ScratchError{Op: "writing", Object: o.Name, Err: err}
	}
	return unwrapPath(err)
}

// objectMap maps the object's first size bytes for writing: its scratch
// file's pages.
func (o *Output) objectMap(size int64) ([]byte, error) {
	f, err := o.obj.File(size)
	if err != nil {
		return nil, o.objectErr(err)
	}
	if err := fallocate(f, 0, size); err != nil {
		// A full TMPDIR shows up here rather than as SIGBUS.
		return nil, o.objectErr(err)
	}
	if size == 0 {
		return nil, nil
	}
	b, unmap, err := mapReadWrite(f, 0, size)
	if err != nil {
		return nil, err
	}
	o.unmap = unmap
	return b, nil
}

// objectCommit makes the object, and records its size (UploadedSize).
func (o *Output) objectCommit() error {
	var err error
	if o.unmap != nil {
		err = o.unmap()
		o.unmap = nil
	}
	if err != nil {
		o.obj.Abort()
		return err
	}
	size := o.obj.Size()
	if err := o.obj.Commit(); err != nil {
		return o.objectErr(err)
	}
	uploaded.Store(o.Name, size)
	return nil
}

// objectAbort is Output.Abort for an object: nothing is made.
func (o *Output) objectAbort() {
	if o.unmap != nil {
		_ = o.unmap()
		o.unmap = nil
	}
	o.obj.Abort()
}
