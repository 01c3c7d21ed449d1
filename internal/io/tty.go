package fileio

import (
	"os"

	"golang.org/x/term"
)

// IsTerminal says whether f is a terminal. Every "is this a terminal"
// decision (binary output refused, progress shown) asks here.
func IsTerminal(f *os.File) bool {
	return f != nil && term.IsTerminal(int(f.Fd()))
}
