package pipeline

import (
	"errors"
	"fmt"
	"os"

	"github.com/depthspace/depthspace/internal/format"
	fileio "github.com/depthspace/depthspace/internal/io"
)

// The errors of a job: each says which path it is about (an input, an
// output, a scratch file's directory) and, in a container, which member,
// so that the command line prints one line, "depthspace: PATH: what is
// wrong".

// PathError is an error about one input or output. The command line prints
// it as "depthspace: PATH: what is wrong".
type PathError struct {
	Path string
	Err  error
}

// Error is the line "PATH: what is wrong", the path escaped (Escaped) so
// that a name holding a newline or an escape sequence cannot break the
// line or reach the terminal.
func (e *PathError) Error() string { return Escaped(e.Path) + ": " + e.Err.Error() }
func (e *PathError) Unwrap() error { return e.Err }

func pathErr(path string, err error) error {
	var pe *PathError
	if errors.As(err, &pe) {
		return err
	}
	// A scratch file of an object's transfer is TMPDIR's, not the
	// object's: the line names TMPDIR's directory.
	var se *fileio.ScratchError
	if errors.As(err, &se) {
		return &PathError{Path: se.Dir(), Err: se}
	}
	if path == "-" {
		path = "stdin"
	}
	return &PathError{Path: path, Err: err}
}

// scratchWriter writes a scratch file, its errors marked as such.
type scratchWriter struct{ f *os.File }

func (w scratchWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		err = &scratchError{op: "writing", err: err}
	}
	return n, err
}

// scratchError is a failure to make or write a scratch file (a full or
// missing TMPDIR), not a fault of the input or the output.
type scratchError struct {
	op  string // making, writing
	err error
}

func (e *scratchError) Error() string {
	return fmt.Sprintf("%s: %s a scratch file there (TMPDIR): %v", os.TempDir(), e.op, unwrapOS(e.err))
}
func (e *scratchError) Unwrap() error { return e.err }

// unwrapOS drops the path of an *os.PathError (a scratch file's is
// meaningless: it is unlinked).
func unwrapOS(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// memberErr names the npz member an error is about.
func memberErr(t *Tensor, err error) error {
	if format.IsContainer(t.Kind) && t.Name != "" {
		return &memberError{fmt.Errorf("%s member %q: %w", t.Kind, t.Name, err)}
	}
	return err
}

// memberError is an error that names the member it is about.
type memberError struct{ err error }

func (e *memberError) Error() string { return e.err.Error() }
func (e *memberError) Unwrap() error { return e.err }

// inMember names the output member an error is about, unless it already
// names one (an input member that could not be inflated).
func inMember(kind format.Kind, name string, err error) error {
	var me *memberError
	if errors.As(err, &me) || name == "" { // "": a store of one array
		return err
	}
	return fmt.Errorf("%s member %q: %w", kind, name, err)
}
