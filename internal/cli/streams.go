package cli

import (
	"io"
	"os"

	fileio "github.com/depthspace/depthspace/internal/io"
)

// streams holds the process's standard streams; every terminal check asks
// here, so tests can run commands with plain buffers.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func (s *streams) stdinIsTTY() bool {
	f, ok := s.in.(*os.File)
	return ok && fileio.IsTerminal(f)
}

func (s *streams) stdoutIsTTY() bool {
	f, ok := s.out.(*os.File)
	return ok && fileio.IsTerminal(f)
}

func (s *streams) stderrIsTTY() bool {
	f, ok := s.err.(*os.File)
	return ok && fileio.IsTerminal(f)
}
